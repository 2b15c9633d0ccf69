package merge

import (
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// mergeContainer lays src over dst, strategically:
//   - scalars and pointers: src wins when set;
//   - command: a layer that sets a command owns the command line, so its
//     command and args replace dst's (this is also why accelerator args are
//     not applied when the user sets a command: the user layer comes last);
//   - otherwise args are merged by flag (MergeArgs);
//   - env by name (MergeEnv), ports by name or port, mounts by path;
//   - resources per resource, unless withResources is false (the main
//     container's resources are computed apart, by MergeResources).
func mergeContainer(dst *corev1.Container, src *corev1.Container, withResources bool) {
	if src.Image != "" {
		dst.Image = src.Image
	}
	if len(src.Command) > 0 {
		dst.Command = slices.Clone(src.Command)
		dst.Args = slices.Clone(src.Args)
	} else if len(src.Args) > 0 {
		dst.Args = MergeArgs(dst.Args, src.Args)
	}
	if src.WorkingDir != "" {
		dst.WorkingDir = src.WorkingDir
	}
	dst.Ports = mergeByKey(dst.Ports, src.Ports, portKey)
	dst.EnvFrom = unionDeep(dst.EnvFrom, src.EnvFrom)
	dst.Env = MergeEnv(dst.Env, src.Env)
	if withResources {
		dst.Resources.Requests = overlayResources(dst.Resources.Requests, src.Resources.Requests)
		dst.Resources.Limits = overlayResources(dst.Resources.Limits, src.Resources.Limits)
		dst.Resources.Claims = mergeClaims(dst.Resources.Claims, src.Resources.Claims)
	}
	if len(src.ResizePolicy) > 0 {
		dst.ResizePolicy = slices.Clone(src.ResizePolicy)
	}
	if src.RestartPolicy != nil {
		p := *src.RestartPolicy
		dst.RestartPolicy = &p
	}
	if len(src.RestartPolicyRules) > 0 {
		dst.RestartPolicyRules = slices.Clone(src.RestartPolicyRules)
	}
	dst.VolumeMounts = mergeByKey(dst.VolumeMounts, src.VolumeMounts, func(m corev1.VolumeMount) string { return m.MountPath })
	dst.VolumeDevices = mergeByKey(dst.VolumeDevices, src.VolumeDevices, func(d corev1.VolumeDevice) string { return d.DevicePath })
	if src.LivenessProbe != nil {
		dst.LivenessProbe = src.LivenessProbe.DeepCopy()
	}
	if src.ReadinessProbe != nil {
		dst.ReadinessProbe = src.ReadinessProbe.DeepCopy()
	}
	if src.StartupProbe != nil {
		dst.StartupProbe = src.StartupProbe.DeepCopy()
	}
	if src.Lifecycle != nil {
		dst.Lifecycle = src.Lifecycle.DeepCopy()
	}
	if src.TerminationMessagePath != "" {
		dst.TerminationMessagePath = src.TerminationMessagePath
	}
	if src.TerminationMessagePolicy != "" {
		dst.TerminationMessagePolicy = src.TerminationMessagePolicy
	}
	if src.ImagePullPolicy != "" {
		dst.ImagePullPolicy = src.ImagePullPolicy
	}
	if src.SecurityContext != nil {
		dst.SecurityContext = src.SecurityContext.DeepCopy()
	}
	dst.Stdin = dst.Stdin || src.Stdin
	dst.StdinOnce = dst.StdinOnce || src.StdinOnce
	dst.TTY = dst.TTY || src.TTY
}

func portKey(p corev1.ContainerPort) string {
	if p.Name != "" {
		return "name:" + p.Name
	}
	proto := p.Protocol
	if proto == "" {
		proto = corev1.ProtocolTCP
	}
	return strconv.Itoa(int(p.ContainerPort)) + "/" + string(proto)
}

// mergeByKey replaces base items whose key over also has, in place, and
// appends the others in over's order. It never aliases base's array.
func mergeByKey[T any](base, over []T, key func(T) string) []T {
	if len(over) == 0 {
		return base
	}
	out := slices.Clone(base)
	for _, item := range over {
		k := key(item)
		i := slices.IndexFunc(out, func(b T) bool { return key(b) == k })
		if i >= 0 {
			out[i] = item
		} else {
			out = append(out, item)
		}
	}
	return out
}

// mergeContainersByName merges src containers into dst by name, appending
// new ones (deep copies).
func mergeContainersByName(dst []corev1.Container, src []corev1.Container) []corev1.Container {
	for i := range src {
		j := slices.IndexFunc(dst, func(c corev1.Container) bool { return c.Name == src[i].Name })
		if j >= 0 {
			mergeContainer(&dst[j], &src[i], true)
		} else {
			dst = append(dst, *src[i].DeepCopy())
		}
	}
	return dst
}
