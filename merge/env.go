package merge

import corev1 "k8s.io/api/core/v1"

// MergeEnv merges over into base by name and returns a new slice. A variable
// over sets replaces base's at the same position (value or valueFrom, whole);
// new variables are appended in over's order. Order is never taken from a
// map: Kubernetes expands $(VAR) only from variables defined earlier, so a
// reordered env can change what a container sees.
func MergeEnv(base, over []corev1.EnvVar) []corev1.EnvVar {
	if len(over) == 0 {
		return base
	}
	out := make([]corev1.EnvVar, 0, len(base)+len(over))
	index := make(map[string]int, len(base)+len(over))
	for _, e := range base {
		if i, dup := index[e.Name]; dup {
			// Kubernetes lets the last duplicate win; keep that one only.
			out[i] = e
			continue
		}
		index[e.Name] = len(out)
		out = append(out, e)
	}
	for _, e := range over {
		if i, ok := index[e.Name]; ok {
			out[i] = *e.DeepCopy()
			continue
		}
		index[e.Name] = len(out)
		out = append(out, *e.DeepCopy())
	}
	return out
}

// setEnvFirst sets name=value on c: in place when present, otherwise before
// every other variable so that later ones can refer to it with $(name).
func setEnvFirst(c *corev1.Container, vars []corev1.EnvVar) {
	var fresh []corev1.EnvVar
	for _, v := range vars {
		found := false
		for i := range c.Env {
			if c.Env[i].Name == v.Name {
				c.Env[i] = v
				found = true
			}
		}
		if !found {
			fresh = append(fresh, v)
		}
	}
	if len(fresh) > 0 {
		c.Env = append(fresh, c.Env...)
	}
}
