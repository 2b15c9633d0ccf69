package chart

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The kustomizations the chart is generated from, relative to deploy/.
const (
	defaultInstall = "."                      // deploy/kustomization.yaml
	withoutRuntime = "overlays/ome-catalogue" // the default install without the runtimes component
	selfManaged    = "overlays/self-managed"  // webhook, reconciler, RBAC, self-managed certificates
	certManager    = "overlays/cert-manager"  // the same with cert-manager's certificates
	namespace      = "berth-system"           // the namespace of the manifests, namespace.name in the chart
	generatedBy    = "deploy/chart/chartgen"  // named in the generated files' headers
	modeSelf       = "self-managed"           // certificates.mode values, named after the overlays
	modeCertMgr    = "cert-manager"           //
)

// Object is one manifest of a kustomize build.
type Object struct {
	APIVersion, Kind, Namespace, Name string
	// Raw is the document as kustomize printed it.
	Raw []byte
	// Obj is the document decoded (JSON types).
	Obj map[string]any
}

// Key identifies an object: group, kind, namespace and name.
func (o Object) Key() string {
	group := ""
	if i := strings.LastIndex(o.APIVersion, "/"); i >= 0 {
		group = o.APIVersion[:i]
	}
	return group + "/" + o.Kind + "/" + o.Namespace + "/" + o.Name
}

func (o Object) String() string {
	return o.Kind + " " + strings.TrimPrefix(o.Namespace+"/"+o.Name, "/")
}

// Kustomize runs `kubectl kustomize dir` and splits its output into objects.
func Kustomize(kubectl, dir string) ([]Object, error) {
	var stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl kustomize %s: %v: %s", dir, err, stderr.String())
	}
	return Split(out)
}

// Split decodes a multi-document YAML stream (kustomize's or helm's
// output) into objects; empty documents are skipped.
func Split(data []byte) ([]Object, error) {
	var objs []Object
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, fmt.Errorf("decode %.200q: %w", doc, err)
		}
		if len(obj) == 0 {
			continue
		}
		o := Object{Raw: doc, Obj: obj}
		o.APIVersion, _ = obj["apiVersion"].(string)
		o.Kind, _ = obj["kind"].(string)
		if meta, ok := obj["metadata"].(map[string]any); ok {
			o.Name, _ = meta["name"].(string)
			o.Namespace, _ = meta["namespace"].(string)
		}
		objs = append(objs, o)
	}
}

// sources are the kustomize builds Generate reads.
type sources struct {
	def, noRuntimes, self, certMgr []Object
}

func build(kubectl, deployDir string) (sources, error) {
	dirs := []string{defaultInstall, withoutRuntime, selfManaged, certManager}
	out := make([][]Object, len(dirs))
	errs := make([]error, len(dirs))
	var wg sync.WaitGroup
	for i, d := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i], errs[i] = Kustomize(kubectl, filepath.Join(deployDir, d))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return sources{}, err
	}
	return sources{def: out[0], noRuntimes: out[1], self: out[2], certMgr: out[3]}, nil
}

// Generate writes the chart's generated parts into chartDir from the
// kustomize builds of deployDir (kubectl runs `kubectl kustomize`):
// crds/ (every CustomResourceDefinition of the default install, as
// compact JSON) and templates/*.yaml (every other object, with the
// chart's values substituted where the chart has knobs), replacing the
// *.yaml files there. The chart's other files are written by hand and
// left alone.
func Generate(kubectl, deployDir, chartDir string) error {
	src, err := build(kubectl, deployDir)
	if err != nil {
		return err
	}
	files, err := render(src)
	if err != nil {
		return err
	}
	return writeFiles(chartDir, files)
}

// render turns the builds into the chart's generated files (path relative
// to the chart → content).
func render(src sources) (map[string][]byte, error) {
	files := map[string][]byte{}
	inInstall := keys(src.self)
	noRuntimes := keys(src.noRuntimes)
	var runtimes, classes, extras []Object
	for _, o := range src.def {
		switch {
		case o.Kind == "CustomResourceDefinition":
			crd, err := compactJSON(o.Raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", o, err)
			}
			files["crds/"+o.Name+".json"] = crd
		case !noRuntimes[o.Key()]:
			runtimes = append(runtimes, o)
		case inInstall[o.Key()]:
			if err := sameAs(o, src.self); err != nil {
				return nil, err
			}
		case o.Kind == "AcceleratorClass":
			classes = append(classes, o)
		default:
			extras = append(extras, o)
		}
	}
	if len(runtimes) == 0 {
		return nil, fmt.Errorf("the default install (deploy/) has no object that %s lacks: where are the runtimes?", withoutRuntime)
	}
	install, err := installTemplate(src.self, src.certMgr)
	if err != nil {
		return nil, err
	}
	files["templates/install.yaml"] = install
	gated := []struct {
		file, cond, from string
		objs             []Object
	}{
		{"templates/runtimes.yaml", ".Values.runtimes.enabled", "the runtimes of deploy/components/berth-runtimes", runtimes},
		{"templates/acceleratorclasses.yaml", ".Values.acceleratorClasses.enabled", "the AcceleratorClasses of the default install (deploy/)", classes},
		{"templates/extras.yaml", "true", "the other objects of the default install (deploy/)", extras},
	}
	for _, g := range gated {
		if len(g.objs) == 0 {
			continue
		}
		var b bytes.Buffer
		header(&b, g.from)
		for _, o := range g.objs {
			doc, err := templateOf(o)
			if err != nil {
				return nil, err
			}
			writeDoc(&b, g.cond, doc)
		}
		files[g.file] = b.Bytes()
	}
	return files, nil
}

func keys(objs []Object) map[string]bool {
	m := map[string]bool{}
	for _, o := range objs {
		m[o.Key()] = true
	}
	return m
}

func find(objs []Object, key string) (Object, bool) {
	for _, o := range objs {
		if o.Key() == key {
			return o, true
		}
	}
	return Object{}, false
}

// sameAs fails when the default install carries o differently from the
// self-managed overlay the chart's install template is made of.
func sameAs(o Object, objs []Object) error {
	other, _ := find(objs, o.Key())
	if !reflect.DeepEqual(o.Obj, other.Obj) {
		return fmt.Errorf("%s differs between the default install (deploy/) and %s; the chart renders the overlay's", o, selfManaged)
	}
	return nil
}

func header(b *bytes.Buffer, from string) {
	fmt.Fprintf(b, "{{- /*\nCode generated by %s from %s (kubectl kustomize); DO NOT EDIT.\nRegenerate with `make chart`.\n*/}}\n", generatedBy, from)
}

func writeDoc(b *bytes.Buffer, cond string, doc []byte) {
	if cond == "true" {
		b.WriteString("---\n")
		b.Write(doc)
		return
	}
	fmt.Fprintf(b, "{{- if %s }}\n---\n", cond)
	b.Write(doc)
	b.WriteString("{{- end }}\n")
}

// Conditions of the install template's objects.
const (
	url          = ".Values.webhook.url"
	condSelf     = `(and (not ` + url + `) (eq .Values.certificates.mode "` + modeSelf + `"))`
	condCertMgr  = `(and (not ` + url + `) (eq .Values.certificates.mode "` + modeCertMgr + `"))`
	condConfigs  = `(or ` + url + ` (eq .Values.certificates.mode "` + modeSelf + `"))`
	condServing  = `(not ` + url + `)`
	condCreateNS = ".Values.namespace.create"
)

// installTemplate is templates/install.yaml: the objects of both
// certificate overlays. Objects both carry alike are rendered always; the
// others only in their mode (an object both carry differently, once per
// mode). With webhook.url the webhook runs outside the cluster: its
// Deployment, Service and PodDisruptionBudget and the certificate objects
// are left out, and the webhook configurations (without cert-manager's
// CA injection) point at the URL.
func installTemplate(self, certMgr []Object) ([]byte, error) {
	service, err := webhookService(self)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	header(&b, selfManaged+" and "+certManager)
	for _, o := range self {
		other, both := find(certMgr, o.Key())
		conds := []string{condSelf, condCertMgr}
		switch {
		case !both:
			conds = []string{condSelf}
		case reflect.DeepEqual(o.Obj, other.Obj):
			conds = []string{""}
		case isWebhookConfiguration(o):
			conds = []string{condConfigs, condCertMgr}
		}
		variants := []Object{o, other}
		for i, cond := range conds {
			v := variants[i]
			cond = and(cond, objectCond(v, service))
			doc, err := templateOf(v)
			if err != nil {
				return nil, err
			}
			writeDoc(&b, cond, doc)
		}
	}
	for _, o := range certMgr {
		if keys(self)[o.Key()] {
			continue
		}
		doc, err := templateOf(o)
		if err != nil {
			return nil, err
		}
		writeDoc(&b, and(condCertMgr, objectCond(o, service)), doc)
	}
	return b.Bytes(), nil
}

// objectCond is the condition an object carries whatever the mode: the
// Namespace only with namespace.create, the in-cluster webhook's serving
// objects only without webhook.url.
func objectCond(o Object, service string) string {
	switch {
	case o.Kind == "Namespace" && o.Name == namespace:
		return condCreateNS
	case o.Name == service && (o.Kind == "Deployment" || o.Kind == "Service" || o.Kind == "PodDisruptionBudget"):
		return condServing
	}
	return ""
}

func and(a, b string) string {
	switch {
	case a == "" && b == "":
		return "true"
	case a == "":
		return b
	case b == "" || strings.Contains(a, b):
		return a
	}
	return "and " + a + " " + b
}

func isWebhookConfiguration(o Object) bool {
	return o.Kind == "MutatingWebhookConfiguration" || o.Kind == "ValidatingWebhookConfiguration"
}

// webhookService is the name of the Service every webhook configuration of
// the self-managed overlay calls.
func webhookService(objs []Object) (string, error) {
	names := map[string]bool{}
	for _, o := range objs {
		if !isWebhookConfiguration(o) {
			continue
		}
		hooks, _ := o.Obj["webhooks"].([]any)
		for _, h := range hooks {
			svc, _ := lookup(h, "clientConfig", "service", "name").(string)
			names[svc] = true
		}
	}
	if len(names) != 1 {
		return "", fmt.Errorf("the webhook configurations of %s must call one Service, they call %v", selfManaged, names)
	}
	for n := range names {
		return n, nil
	}
	return "", nil
}

func lookup(v any, path ...string) any {
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// generatedFiles are the patterns of the files Generate writes; it
// replaces all of them.
var generatedFiles = []string{"crds/*.json", "crds/*.yaml", "templates/*.yaml"}

// compactJSON is a CRD as one line of JSON. Helm keeps the chart, CRDs
// included, in the release Secret (1 MiB at most) as gzip of JSON in which
// file contents are base64: base64 hides most of YAML's deep indentation
// from gzip, and the CRDs as YAML take 0.66 MB there, as JSON 0.36 MB.
// Helm and kubectl read JSON wherever they read YAML.
func compactJSON(doc []byte) ([]byte, error) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, j); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

func writeFiles(chartDir string, files map[string][]byte) error {
	for _, pattern := range generatedFiles {
		old, err := filepath.Glob(filepath.Join(chartDir, pattern))
		if err != nil {
			return err
		}
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				return err
			}
		}
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(chartDir, n)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, files[n], 0o644); err != nil {
			return err
		}
	}
	return nil
}
