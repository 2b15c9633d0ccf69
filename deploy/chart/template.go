package chart

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// Markers stand for template actions while an object is marshalled: they
// are plain YAML scalars, replaced by the actions in the marshalled text
// after the text's own braces are escaped.
const (
	markNamespace = "__BERTH_NAMESPACE__"
	markPrefix    = "__BERTH_"
)

// escape makes Helm print "{{" and "}}" of the manifests (runtimes'
// templates) literally. One pass: the replacements are not rescanned.
var escape = strings.NewReplacer("{{", `{{"{{"}}`, "}}", `{{"}}"}}`)

// clientConfigLine is a webhook's clientConfig replaced by a marker.
var clientConfigLine = regexp.MustCompile(`(?m)^( *)(- )?clientConfig: (__BERTH_CLIENTCONFIG_\d+__)$`)

// placementLine is a pod's nodeSelector, tolerations or affinity replaced
// by a marker naming the values' key: __BERTH_PLACEMENT_<key>_<field>__.
var placementLine = regexp.MustCompile(`(?m)^( *)(nodeSelector|tolerations|affinity): __BERTH_PLACEMENT_([a-z]+)_[a-zA-Z]+__$`)

// placementFields are the Deployments' placement knobs: each renders only
// when its value is set (the defaults render the manifests exactly).
var placementFields = []string{"nodeSelector", "tolerations", "affinity"}

// templateOf is o as a template: the namespace is namespace.name's, and a
// Deployment's replicas, image and pull policy, the images its flags name
// (flagImages) and the webhooks' clientConfig are the values'.
func templateOf(o Object) ([]byte, error) {
	obj, err := deepCopy(o.Obj)
	if err != nil {
		return nil, err
	}
	actions := map[string]string{markNamespace: "{{ .Values.namespace.name }}"}
	blocks := map[string]string{}
	switch {
	case o.Kind == "Deployment":
		err = deploymentKnobs(o, obj, actions)
	case isWebhookConfiguration(o):
		err = clientConfigKnobs(o, obj, blocks)
	}
	if err != nil {
		return nil, err
	}
	obj = replaceNamespace(obj).(map[string]any)
	out, err := yaml.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o, err)
	}
	text := escape.Replace(string(out))
	text = clientConfigLine.ReplaceAllStringFunc(text, func(line string) string {
		m := clientConfigLine.FindStringSubmatch(line)
		return m[1] + m[2] + "clientConfig:\n" + indent(blocks[m[3]], len(m[1])+len(m[2])+2)
	})
	text = placementLine.ReplaceAllStringFunc(text, func(line string) string {
		m := placementLine.FindStringSubmatch(line)
		pad, field, key := m[1], m[2], m[3]
		return fmt.Sprintf("%s{{- with .Values.%s.%s }}\n%s%s:\n%s{{- toYaml . | nindent %d }}\n%s{{- end }}",
			pad, key, field, pad, field, pad+"  ", len(pad)+2, pad)
	})
	for marker, action := range actions {
		text = strings.ReplaceAll(text, marker, action)
	}
	if strings.Contains(text, markPrefix) {
		return nil, fmt.Errorf("%s: a marker was left in the template:\n%s", o, text)
	}
	return []byte(text), nil
}

func deepCopy(obj map[string]any) (map[string]any, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	return out, json.Unmarshal(data, &out)
}

// replaceNamespace puts the namespace marker wherever a string holds the
// manifests' namespace: metadata.namespace, RBAC subjects, DNS names,
// namespaceSelectors, cert-manager's inject-ca-from.
func replaceNamespace(v any) any {
	switch x := v.(type) {
	case string:
		return strings.ReplaceAll(x, namespace, markNamespace)
	case []any:
		for i := range x {
			x[i] = replaceNamespace(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = replaceNamespace(x[k])
		}
	}
	return v
}

// deploymentKnobs: berth-webhook's knobs are under webhook, berth-reconciler's
// under reconciler.
func deploymentKnobs(o Object, obj map[string]any, actions map[string]string) error {
	key := strings.TrimPrefix(o.Name, "berth-")
	values := ".Values." + key
	mark := markPrefix + strings.ToUpper(key) + "_"
	spec, _ := obj["spec"].(map[string]any)
	containers, _ := lookup(spec, "template", "spec", "containers").([]any)
	if spec == nil || len(containers) != 1 {
		return fmt.Errorf("%s: want one container, the chart's %s.image", o, key)
	}
	c, _ := containers[0].(map[string]any)
	for field, action := range map[string]string{
		"image":           imageAction(values, o.Name),
		"imagePullPolicy": "{{ " + values + ".image.pullPolicy }}",
	} {
		if _, ok := c[field].(string); !ok {
			return fmt.Errorf("%s: no %s", o, field)
		}
		c[field] = mark + strings.ToUpper(field) + "__"
		actions[c[field].(string)] = action
	}
	if _, ok := spec["replicas"]; !ok {
		return fmt.Errorf("%s: no replicas", o)
	}
	spec["replicas"] = mark + "REPLICAS__"
	actions[mark+"REPLICAS__"] = "{{ " + values + ".replicas }}"
	podSpec, _ := lookup(spec, "template", "spec").(map[string]any)
	for _, field := range placementFields {
		if _, set := podSpec[field]; set {
			return fmt.Errorf("%s: the manifests set %s, which the chart's %s.%s replaces", o, field, key, field)
		}
		podSpec[field] = markPrefix + "PLACEMENT_" + key + "_" + field + "__"
	}
	if fi, ok := flagImages[key]; ok {
		args, _ := c["args"].([]any)
		i := slices.Index(args, any(fi.flag))
		if i < 0 || i+1 >= len(args) {
			return fmt.Errorf("%s: no args %q <image>, which the chart's %s.%s sets", o, fi.flag, key, fi.value)
		}
		args[i+1] = mark + "FLAGIMAGE__"
		actions[mark+"FLAGIMAGE__"] = "{{ " + values + "." + fi.value + " | default (printf \"%s/" + fi.image + ":%s\" " +
			imagesRegistry + " (" + imagesTag + ")) }}"
	}
	return nil
}

// flagImages are the images a Deployment's flag names, by values key: the
// manifests give each as two args, the flag then the image, and the chart
// as <key>.<value>, else <images.registry>/<image>:<images.tag>.
var flagImages = map[string]struct{ flag, value, image string }{
	"webhook":    {"--model-downloader-image", "modelDownloaderImage", "berth-downloader"},
	"reconciler": {"--model-inspector-image", "modelInspectorImage", "berth"},
}

// The values every berth image defaults to: images.registry, and
// images.tag else the chart's appVersion (version/VERSION).
const (
	imagesRegistry = ".Values.images.registry"
	imagesTag      = ".Values.images.tag | default .Chart.AppVersion"
)

// imageAction is the image of a Deployment named name whose knobs are under
// values: <values>.image.repository (else <images.registry>/<name>) and
// <values>.image.tag (else images.tag, else the appVersion).
func imageAction(values, name string) string {
	return "{{ " + values + ".image.repository | default (printf \"%s/" + name + "\" " + imagesRegistry + ") }}:" +
		"{{ " + values + ".image.tag | default (" + imagesTag + ") }}"
}

// clientConfigKnobs: with webhook.url every webhook calls the URL plus its
// path (and trusts webhook.caBundle); without, the Service as in the
// manifests.
func clientConfigKnobs(o Object, obj map[string]any, blocks map[string]string) error {
	hooks, _ := obj["webhooks"].([]any)
	for i, h := range hooks {
		hook, _ := h.(map[string]any)
		cc, _ := hook["clientConfig"].(map[string]any)
		path, _ := lookup(cc, "service", "path").(string)
		if path == "" {
			return fmt.Errorf("%s: webhook %d calls no Service path", o, i)
		}
		service, err := yaml.Marshal(replaceNamespace(cc))
		if err != nil {
			return err
		}
		marker := markPrefix + "CLIENTCONFIG_" + strconv.Itoa(i) + "__"
		hook["clientConfig"] = marker
		blocks[marker] = "{{- if " + url + " }}\n" +
			"url: {{ printf \"%s" + path + "\" (trimSuffix \"/\" " + url + ") | quote }}\n" +
			"{{- with .Values.webhook.caBundle }}\ncaBundle: {{ . | quote }}\n{{- end }}\n" +
			"{{- else }}\n" + escape.Replace(string(service)) + "{{- end }}\n"
	}
	return nil
}

// indent indents every line of s that is not a template action by n spaces.
func indent(s string, n int) string {
	pad := strings.Repeat(" ", n)
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "{{-") {
			lines[i] = pad + l
		}
	}
	return strings.Join(lines, "\n")
}
