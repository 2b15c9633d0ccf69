package merge

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/berthdev/berth/api/v1beta1"
)

// layerKind says who set a layer, which decides how the main container's
// resources combine (runtime fills gaps; max of accelerator and user).
type layerKind string

const (
	kindClass       layerKind = "class"
	kindRuntime     layerKind = "runtime"
	kindAccelerator layerKind = "accelerator"
	kindUser        layerKind = "user"
)

// layer is one source of pod content, already rendered and deep-copied so
// applying it never aliases the inputs.
type layer struct {
	Kind        layerKind
	Where       string // for error messages only: "runtime ClusterServingRuntime/x engineConfig"
	Pod         *v1beta1.PodSpec
	Runner      *v1beta1.RunnerSpec
	Labels      map[string]string
	Annotations map[string]string

	// runnerPath and containerPaths override where error messages point
	// to, for the KServe shape where the runner is one of spec.containers.
	runnerPath     string
	containerPaths []string
	// kserve: the containers are a KServe-shaped runtime's spec.containers,
	// rendered as KServe renders them (renderContainer).
	kserve bool
}

// plan is everything that determines the pods of one component and role.
// ComposePod applies it to a pod; Revision applies it to canonical
// skeletons and hashes the result, never the plan itself, so error-message
// text (Where) cannot reach a revision.
type plan struct {
	Component string
	Role      string
	Pairing   string // the pairing its templates were rendered for
	Layers    []layer
	GPU       corev1.ResourceName // translate accelerator resources to this name
	PDRole    string              // prefill or decode
	Profiles  []profileUse
	Model     *modelPlan // engine and decoder, when the service's model has storage
	// Warnings are the template keys a KServe-shaped layer refers to that
	// the service lacks, rendered empty (renderContainer).
	Warnings []string
}

// componentView is the shape engine, decoder and router have in common.
type componentView struct {
	pod        *v1beta1.PodSpec
	ext        *v1beta1.ComponentExtensionSpec
	runner     *v1beta1.RunnerSpec
	leader     *v1beta1.LeaderSpec
	worker     *v1beta1.WorkerSpec
	accConfigs []v1beta1.AcceleratorConfiguration
	runtimes   []v1beta1.EngineRuntimeRef
}

func viewEngine(s *v1beta1.EngineSpec) *componentView {
	if s == nil {
		return nil
	}
	return &componentView{&s.PodSpec, &s.ComponentExtensionSpec, s.Runner, s.Leader, s.Worker, s.AcceleratorConfigurations, s.EngineRuntimes}
}

func viewDecoder(s *v1beta1.DecoderSpec) *componentView {
	if s == nil {
		return nil
	}
	return &componentView{&s.PodSpec, &s.ComponentExtensionSpec, s.Runner, s.Leader, s.Worker, s.AcceleratorConfigurations, s.EngineRuntimes}
}

func viewRouter(s *v1beta1.RouterSpec) *componentView {
	if s == nil {
		return nil
	}
	return &componentView{pod: &s.PodSpec, ext: &s.ComponentExtensionSpec, runner: s.Runner, runtimes: s.EngineRuntimes}
}

// kserveMainContainer is the name KServe gives the predictor's container.
const kserveMainContainer = "kserve-container"

// DefaultRunnerName names the main container when no layer names it.
const DefaultRunnerName = "ome-container"

// Role values of GroupIdentity.
const (
	RoleLeader = "leader"
	RoleWorker = "worker"
)

// buildPlan gathers the layers of in.Component for role, lowest first.
func buildPlan(in Input, role string) (*plan, error) {
	b, err := newPlanBuilder(in, role)
	if err != nil {
		return nil, err
	}
	steps := []func() error{
		b.addClass,      // 1. the AcceleratorClass: where its nodes are
		b.addRuntimePod, // 2. the runtime's top-level (KServe-shaped) pod settings
		func() error { // 3. the runtime's component config, then its leader or worker
			return b.p.addComponent(b.rtComp, role, kindRuntime, b.rtWhere, b.rtPath, b.data)
		},
		b.addAcceleratorConfigs, // 4. accelerator configurations selecting the class
		func() error { // 5. the InferenceService's component, then its leader or worker
			return b.p.addComponent(b.svcComp, role, kindUser, b.svcWhere, b.svcPath, b.data)
		},
		b.addSelectorNodes, // 6. acceleratorSelector.nodeSelector
		b.setPDRole,        // 7. prefill/decode wiring
		func() error { // 8. engine runtime profiles
			return b.p.addProfiles(b.in, b.rtComp, b.svcComp, b.rtWhere+" "+b.rtPath, b.svcWhere+" "+b.svcPath)
		},
		b.addModel, // 9. the model, under what every layer put at its place
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return b.p, nil
}

// planBuilder carries what buildPlan's steps share.
type planBuilder struct {
	in                Input
	role              string
	data              TemplateData
	rtWhere, svcWhere string
	rtPath, svcPath   string
	rtComp, svcComp   *componentView
	class             *v1beta1.AcceleratorClass // nil for the router
	accelerated       bool                      // engine and decoder
	kserveEngine      bool                      // the runtime's spec.containers feed this pod
	p                 *plan
}

// newPlanBuilder checks the input and picks the component's views.
func newPlanBuilder(in Input, role string) (*planBuilder, error) {
	if in.Service == nil {
		return nil, fmt.Errorf("merge: no InferenceService given; pass the service the pod belongs to")
	}
	if in.Runtime == nil {
		return nil, fmt.Errorf("InferenceService %s: no runtime spec given for %s; resolve the runtime first",
			objectName(in.Service), runtimeName(in))
	}
	// OME's and KServe's names in the runtime are read as berth's, whoever
	// calls: the reconciler hands the stored runtime, the pod webhook the
	// one selection folded, and both must compose the same pods.
	in.Runtime = v1beta1.FoldedRuntime(in.Runtime)
	if role != "" && role != RoleLeader && role != RoleWorker {
		return nil, fmt.Errorf("InferenceService %s: group role %q is not leader, worker or empty; fix label %s",
			objectName(in.Service), role, v1beta1.LabelRole)
	}
	b := &planBuilder{
		in: in, role: role,
		data: TemplateData{
			Name: in.Service.Name, Namespace: in.Service.Namespace,
			Labels: in.Service.Labels, Annotations: in.Service.Annotations,
			Pairing: in.Group.Pairing,
		},
		rtWhere: "runtime " + runtimeName(in), svcWhere: "InferenceService " + objectName(in.Service),
		p: &plan{Component: in.Component, Role: role, Pairing: in.Group.Pairing},
	}
	switch in.Component {
	case v1beta1.ComponentEngine:
		b.rtComp, b.svcComp = viewEngine(in.Runtime.EngineConfig), viewEngine(in.Service.Spec.Engine)
		b.rtPath, b.svcPath = "engineConfig", "spec.engine"
	case v1beta1.ComponentDecoder:
		b.rtComp, b.svcComp = viewDecoder(in.Runtime.DecoderConfig), viewDecoder(in.Service.Spec.Decoder)
		b.rtPath, b.svcPath = "decoderConfig", "spec.decoder"
	case v1beta1.ComponentRouter:
		b.rtComp, b.svcComp = viewRouter(in.Runtime.RouterConfig), viewRouter(in.Service.Spec.Router)
		b.rtPath, b.svcPath = "routerConfig", "spec.router"
	default:
		return nil, fmt.Errorf("%s: component %q is not %s, %s or %s", b.svcWhere, in.Component,
			v1beta1.ComponentEngine, v1beta1.ComponentDecoder, v1beta1.ComponentRouter)
	}
	// A component with no configuration anywhere still gets a pod (the
	// skeleton plus class and group settings): which components exist is
	// the reconciler's and the validating webhook's decision, not ours.
	// With KServe's workerSpec, spec.containers are the head's: worker pods
	// run workerSpec's containers (folded into engineConfig.worker) alone.
	b.kserveEngine = in.Component == v1beta1.ComponentEngine && len(in.Runtime.Containers) > 0 &&
		(role != RoleWorker || in.Runtime.WorkerSpec == nil)
	b.accelerated = in.Component != v1beta1.ComponentRouter
	if b.accelerated {
		b.class = in.AcceleratorClass // the router never gets accelerator constraints
	}
	return b, nil
}

// addClass is step 1: the AcceleratorClass's placement, and its resource
// name as the pod's GPU resource.
func (b *planBuilder) addClass() error {
	class := b.class
	if class == nil {
		return nil
	}
	ps := &v1beta1.PodSpec{}
	ps.NodeSelector, ps.Affinity = ClassPlacement(&class.Spec)
	if len(ps.NodeSelector) > 0 || ps.Affinity != nil {
		b.p.Layers = append(b.p.Layers, layer{Kind: kindClass, Where: "AcceleratorClass " + class.Name + " discovery", Pod: ps})
	}
	if len(class.Spec.Resources) > 0 {
		b.p.GPU = corev1.ResourceName(class.Spec.Resources[0].Name)
	}
	return nil
}

// addRuntimePod is step 2: the runtime's top-level (KServe-shaped) pod
// settings. Scheduling (nodeSelector, affinity, tolerations) and volumes
// feed engine and decoder only: they describe GPU nodes and model storage,
// and the router must stay off GPU nodes. imagePullSecrets, labels and
// annotations describe the runtime as a whole and feed the router too,
// whose image may sit in the same private registry.
func (b *planBuilder) addRuntimePod() error {
	top := b.in.Runtime.ServingRuntimePodSpec
	ps := &v1beta1.PodSpec{ImagePullSecrets: top.ImagePullSecrets}
	if b.accelerated {
		ps.Volumes, ps.NodeSelector, ps.Affinity, ps.Tolerations = top.Volumes, top.NodeSelector, top.Affinity, top.Tolerations
	}
	l := layer{Kind: kindRuntime, Where: b.rtWhere + " spec", Pod: ps, Labels: top.Labels, Annotations: top.Annotations, kserve: b.kserveEngine}
	if b.kserveEngine {
		main := slices.IndexFunc(top.Containers, func(c corev1.Container) bool { return c.Name == kserveMainContainer })
		if main < 0 {
			main = 0
		}
		for i, c := range top.Containers {
			path := fmt.Sprintf("%s spec.containers[%d]", b.rtWhere, i)
			if i == main {
				r := v1beta1.RunnerSpec(c)
				l.Runner, l.runnerPath = &r, path
				continue
			}
			ps.Containers = append(ps.Containers, c)
			l.containerPaths = append(l.containerPaths, path)
		}
	}
	return b.p.add(l, b.data)
}

// addAcceleratorConfigs is step 4: accelerator configurations selecting
// the chosen class, the runtime's, its component's, then the service
// component's.
func (b *planBuilder) addAcceleratorConfigs() error {
	if b.class == nil {
		return nil
	}
	type src struct {
		where, path string
		configs     []v1beta1.AcceleratorConfiguration
	}
	srcs := []src{{b.rtWhere, "acceleratorConfigurations", b.in.Runtime.AcceleratorConfigurations}}
	if b.rtComp != nil {
		srcs = append(srcs, src{b.rtWhere, b.rtPath + ".acceleratorConfigurations", b.rtComp.accConfigs})
	}
	if b.svcComp != nil {
		srcs = append(srcs, src{b.svcWhere, b.svcPath + ".acceleratorConfigurations", b.svcComp.accConfigs})
	}
	for _, s := range srcs {
		for i, ac := range s.configs {
			if ac.Selector.AcceleratorClass != b.class.Name {
				continue
			}
			r := v1beta1.RunnerSpec{}
			if ac.Runner != nil {
				r = *ac.Runner.DeepCopy()
			}
			r.Env = MergeEnv(slices.Clone(ac.Env), r.Env)
			r.Resources.Requests = maxResources(maxResources(nil, ac.Resources.Requests), r.Resources.Requests)
			r.Resources.Limits = maxResources(maxResources(nil, ac.Resources.Limits), r.Resources.Limits)
			where := fmt.Sprintf("%s %s[%d]", s.where, s.path, i)
			if err := b.p.add(layer{Kind: kindAccelerator, Where: where, Runner: &r}, b.data); err != nil {
				return err
			}
		}
	}
	return nil
}

// addSelectorNodes is step 6: the service's acceleratorSelector.nodeSelector
// narrows engine and decoder nodes further.
func (b *planBuilder) addSelectorNodes() error {
	sel := b.in.Service.Spec.AcceleratorSelector
	if b.accelerated && sel != nil && len(sel.NodeSelector) > 0 {
		b.p.Layers = append(b.p.Layers, layer{Kind: kindUser, Where: b.svcWhere + " spec.acceleratorSelector",
			Pod: &v1beta1.PodSpec{NodeSelector: cloneMap(sel.NodeSelector)}})
	}
	return nil
}

// setPDRole is step 7: prefill/decode wiring when a decoder exists.
func (b *planBuilder) setPDRole() error {
	if b.in.Runtime.DecoderConfig != nil || b.in.Service.Spec.Decoder != nil {
		switch b.in.Component {
		case v1beta1.ComponentEngine:
			b.p.PDRole = PDRolePrefill
		case v1beta1.ComponentDecoder:
			b.p.PDRole = PDRoleDecode
		}
	}
	return nil
}

// addModel is step 9: the model, under what every layer put at its place.
func (b *planBuilder) addModel() error {
	m, err := buildModelPlan(b.in)
	if err != nil {
		return err
	}
	if m != nil && b.in.Component == v1beta1.ComponentEngine && b.role == RoleLeader && b.in.Runtime.WorkerSpec != nil {
		m.Env = []string{EnvModelDir} // KServe's head reads the model's place there
	}
	b.p.Model = m
	return nil
}

// addComponent adds a component's own layer and, for multi-node roles, the
// leader's or worker's on top.
func (p *plan) addComponent(c *componentView, role string, kind layerKind, where, path string, data TemplateData) error {
	if c == nil {
		return nil
	}
	l := layer{Kind: kind, Where: where + " " + path, Pod: c.pod, Runner: c.runner}
	if c.ext != nil {
		l.Labels, l.Annotations = c.ext.Labels, c.ext.Annotations
	}
	if err := p.add(l, data); err != nil {
		return err
	}
	switch {
	case role == RoleLeader && c.leader != nil:
		return p.add(layer{Kind: kind, Where: where + " " + path + ".leader", Pod: &c.leader.PodSpec, Runner: c.leader.Runner}, data)
	case role == RoleWorker && c.worker != nil:
		return p.add(layer{Kind: kind, Where: where + " " + path + ".worker", Pod: &c.worker.PodSpec, Runner: c.worker.Runner}, data)
	}
	return nil
}

// add deep-copies l, renders its templates and appends it.
func (p *plan) add(l layer, data TemplateData) error {
	if l.Pod != nil {
		l.Pod = l.Pod.DeepCopy()
		for i := range l.Pod.InitContainers {
			if err := p.render(&l.Pod.InitContainers[i], data, fmt.Sprintf("%s.initContainers[%d]", l.Where, i), l.kserve); err != nil {
				return err
			}
		}
		for i := range l.Pod.Containers {
			path := fmt.Sprintf("%s.containers[%d]", l.Where, i)
			if i < len(l.containerPaths) {
				path = l.containerPaths[i]
			}
			if err := p.render(&l.Pod.Containers[i], data, path, l.kserve); err != nil {
				return err
			}
		}
		if isEmptyPodSpec(l.Pod) {
			l.Pod = nil
		}
	}
	if l.Runner != nil {
		l.Runner = l.Runner.DeepCopy()
		c := corev1.Container(*l.Runner)
		path := l.Where + ".runner"
		if l.runnerPath != "" {
			path = l.runnerPath
		}
		if err := p.render(&c, data, path, l.kserve); err != nil {
			return err
		}
		r := v1beta1.RunnerSpec(c)
		l.Runner = &r
	}
	l.Labels, l.Annotations = cloneMap(l.Labels), cloneMap(l.Annotations)
	if l.Pod == nil && l.Runner == nil && len(l.Labels) == 0 && len(l.Annotations) == 0 {
		return nil
	}
	p.Layers = append(p.Layers, l)
	return nil
}

// render renders c's templates (renderContainer), keeping its warnings.
func (p *plan) render(c *corev1.Container, data TemplateData, where string, kserve bool) error {
	warnings, err := renderContainer(c, data, where, kserve)
	p.Warnings = append(p.Warnings, warnings...)
	return err
}

// renderContainer renders templates in command, args and env values. A
// missing label or annotation is an error, except with kserve (the strings
// of a KServe-shaped runtime's spec.containers): there it renders as "",
// as KServe renders it, and is returned as a warning, unless it empties an
// item of command or args (emptiedArgument), which stays an error.
func renderContainer(c *corev1.Container, data TemplateData, where string, kserve bool) ([]string, error) {
	var warnings []string
	one := func(s, at string, arg bool) (string, error) {
		if !kserve {
			v, err := RenderTemplate(s, data)
			if err != nil {
				return "", fmt.Errorf("%s: %w", at, err)
			}
			return v, nil
		}
		v, missing := renderKServe(s, data)
		if len(missing) > 0 && arg && emptiedArgument(v) {
			return "", fmt.Errorf("%s: %s; it would render as %q, and a flag value or an argument left empty changes the command line; add the %s or remove the reference",
				at, missing[0].what(), v, missing[0].kind())
		}
		for _, m := range missing {
			warnings = append(warnings, fmt.Sprintf("%s: %s; rendered empty, as KServe renders it; add the %s to set it", at, m.what(), m.kind()))
		}
		return v, nil
	}
	var err error
	for i := range c.Command {
		if c.Command[i], err = one(c.Command[i], fmt.Sprintf("%s.command[%d]", where, i), true); err != nil {
			return nil, err
		}
	}
	for i := range c.Args {
		if c.Args[i], err = one(c.Args[i], fmt.Sprintf("%s.args[%d]", where, i), true); err != nil {
			return nil, err
		}
	}
	for i := range c.Env {
		if c.Env[i].Value, err = one(c.Env[i].Value, fmt.Sprintf("%s.env[%d].value (%s)", where, i, c.Env[i].Name), false); err != nil {
			return nil, err
		}
	}
	return warnings, nil
}

// emptiedArgument reports whether a rendered item of command or args lost
// its value: it is empty, or a flag whose value (after its first '=') is.
func emptiedArgument(v string) bool {
	return v == "" || strings.HasPrefix(v, "-") && strings.IndexByte(v, '=') == len(v)-1
}

// isEmptyPodSpec reports whether a layer sets no pod-level field, so it
// can be dropped (an empty but non-nil list counts as set; applying it is a
// no-op either way).
func isEmptyPodSpec(ps *v1beta1.PodSpec) bool {
	return reflect.DeepEqual(ps, &emptyPodSpec)
}

// emptyPodSpec is compared with, never written: a package variable saves
// allocating the large struct on every layer.
var emptyPodSpec v1beta1.PodSpec

func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func cloneTerms(terms []corev1.NodeSelectorTerm) []corev1.NodeSelectorTerm {
	out := make([]corev1.NodeSelectorTerm, len(terms))
	for i := range terms {
		terms[i].DeepCopyInto(&out[i])
	}
	return out
}

func objectName(s *v1beta1.InferenceService) string {
	if s.Namespace == "" {
		return s.Name
	}
	return s.Namespace + "/" + s.Name
}

func runtimeName(in Input) string {
	kind := in.RuntimeKind
	if kind == "" {
		kind = "ServingRuntime"
	}
	return kind + "/" + in.RuntimeName
}
