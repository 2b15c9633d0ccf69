package cli

import (
	"context"
	"flag"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/objects"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/reconcile/plan"
	"github.com/berthdev/berth/webhook/handlers"
)

const renderHelp = `
Usage:
  berth render -f SERVICE.yaml --from DIR_OR_FILE... [--diff --nodes PODS.yaml]
  berth render isvc/NAME [-n NAMESPACE] [--diff]

Render prints, as YAML, the pods of every component of an InferenceService
exactly as berth creates them: the pods the reconciler creates for group 0
(one per role: the single pod, or a leader and a worker; with what the
reconciler adds outside the revision: OME's selector labels, the router's
ServiceAccount, the gang PodGroup mark and scheduler, assuming the gang
scheduler's PodGroup CRD is installed) are sent through the webhook's own
pod handler under the decision admission pins (runtime, AcceleratorClass,
model), with the runtime's, class's, profiles' and the service's settings
merged.

Offline, the decision is the one admission makes for the file's service
(see berth explain). Online, it is the stored service's pin.

--diff renders the pod of each running pod's own slot (component, group,
role, worker index) and compares them field by field (online: the
service's pods in the cluster; offline: Pods in the --nodes files): every
label and annotation the render sets, and every spec field it sets; lists
of named items (containers, env, volumes, ports) are matched by name both
ways. Fields only the running pod has (defaults, what other admission
plugins add, nodeName) are not compared. Without differences it prints
"no changes".

Examples:
  # What will the pods of my service look like on the shipped runtimes?
  berth render -f my-isvc.yaml --from deploy/runtimes --from deploy/accelerators

  # What would a rollout change in my running service's pods?
  berth render isvc/llama-3-2-1b-instruct -n default --diff
`

func renderCommand() Command {
	return Command{
		Name:    "render",
		Summary: "print the pods of an InferenceService as the webhook completes them; --diff against the running pods",
		Run:     runRender,
	}
}

func runRender(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("berth render", flag.ContinueOnError)
	var src sourceFlags
	src.register(fs)
	diff := fs.Bool("diff", false, "print what differs from the pods running now instead of the pods")
	fs.SetOutput(stderr)
	fs.Usage = usageFunc(fs, stderr, renderHelp)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	w, subjects, err := src.subjects(ctx, pos)
	if err != nil {
		return err
	}
	failed := false
	for _, isvc := range subjects {
		r, err := Render(ctx, w, isvc)
		if err != nil {
			return err
		}
		if r.Denial != "" {
			fmt.Fprintf(stderr, "InferenceService %s/%s: admission would deny it:\n%s\n", isvc.Namespace, isvc.Name, r.Denial)
			failed = true
			continue
		}
		if *diff {
			writeDiff(ctx, stdout, r, runningPods(w.set, r.Service))
			continue
		}
		if err := writePods(stdout, r); err != nil {
			return err
		}
	}
	if failed {
		return ErrFailed
	}
	return nil
}

// Rendered is a service's pods as the pod webhook completes them.
type Rendered struct {
	// Service is the service as admission leaves it (pinned).
	Service *v1beta1.InferenceService
	Pods    []*corev1.Pod
	// Warnings are the pod handler's.
	Warnings []string
	// Denial is admission's message when the service, or one of its pods,
	// would be denied.
	Denial string
	// slot renders any slot's pod (for --diff, each running pod's own).
	slot slotFunc
}

// Render admits isvc as explain does, then completes the reconciler's
// skeleton pods of group 0 with the webhook's pod handler.
func Render(ctx context.Context, w *world, isvc *v1beta1.InferenceService) (*Rendered, error) {
	var old *v1beta1.InferenceService
	if isPinned(isvc) {
		old = isvc
	}
	adm, err := w.isvcs.Admit(ctx, isvc, old)
	if err != nil {
		return nil, err
	}
	r := &Rendered{Service: adm.Service, Denial: adm.Denial}
	if adm.Denial != "" {
		return r, nil
	}
	d, _, _, err := w.isvcs.Pinned(adm.Service)
	if err != nil || d == nil {
		r.Denial = fmt.Sprintf("the decision admission pinned does not resolve: %v", err)
		return r, nil
	}
	// The pod handler reads the service as admission stored it.
	pods := &handlers.Pods{Index: w.index, Services: objects.ServiceLister(adm.Service), Profiles: w.pods.Profiles, Policies: w.pods.Policies}
	roles, _ := w.isvcs.ComposeRoles(adm.Service, d)
	topology := merge.Topology(adm.Service, d.Engine.Runtime.Spec)
	r.slot = slotRenderer(adm.Service, topology, roles, pods)
	for _, t := range topology {
		for _, g := range merge.CanonicalRoles(adm.Service, t) {
			p, warns, err := r.slot(ctx, t.Component, 0, g.Role, g.WorkerIndex)
			r.Warnings = append(r.Warnings, warns...)
			if err != nil {
				r.Denial = err.Error()
				return r, nil
			}
			r.Pods = append(r.Pods, p)
		}
	}
	return r, nil
}

// slotFunc renders the pod of one slot (component, group, role, worker
// index) of a service.
type slotFunc func(ctx context.Context, component string, group int, role string, worker int) (*corev1.Pod, []string, error)

// slotRenderer renders a slot's pod as the reconciler creates it
// (merge.GroupPod: identity, OME's labels, the router's ServiceAccount,
// the gang mark) and completes it with the pod webhook's own handler. The
// gang backend is chosen as the reconciler chooses it (plan.ChooseGang,
// from gangPolicy and the composed pods' schedulerName, with the
// reconciler's default coscheduling scheduler name), assuming the
// backend's PodGroup CRD is installed.
func slotRenderer(svc *v1beta1.InferenceService, topology []merge.ComponentTopology, roles []merge.ComposedRole, pods *handlers.Pods) slotFunc {
	topo := map[string]merge.ComponentTopology{}
	for _, t := range topology {
		topo[t.Component] = t
	}
	_, pd := topo[v1beta1.ComponentDecoder]
	schedulers := map[string]string{}
	for _, r := range roles {
		if merge.GangMember(r.Topology.Component, pd) && r.Role != merge.RoleWorker && r.Pod != nil {
			schedulers[r.Topology.Component] = r.Pod.Spec.SchedulerName
		}
	}
	choice := plan.ChooseGang(svc.Spec.GangPolicy, schedulers, plan.DefaultCoschedulingScheduler)
	pairing := renderPairing(roles)
	return func(ctx context.Context, component string, group int, role string, worker int) (*corev1.Pod, []string, error) {
		t, ok := topo[component]
		if !ok {
			return nil, nil, fmt.Errorf("the service has no component %q", component)
		}
		// Every pod of a prefill/decode service carries the pairing; the
		// router's selectors render it ({{.Pairing}}).
		o := merge.GroupPodOptions{Gang: merge.NewGangMark(choice.Backend, choice.SchedulerName, svc.Name, component, group, pd), Pairing: pairing}
		if component == v1beta1.ComponentRouter {
			o.RouterServiceAccount = merge.RouterServiceAccountName(svc.Name)
		}
		return pods.CompletePod(ctx, merge.GroupPod(svc, t, group, role, worker, o))
	}
}

// renderPairing is the ome.io/pairing of a prefill/decode service's
// engine and decoder pods, from the revisions the pod webhook stamped on
// the composed pods (as the reconciler computes it); "" without a decoder.
func renderPairing(roles []merge.ComposedRole) string {
	revs := map[string]string{}
	for _, r := range roles {
		if r.Pod != nil {
			revs[r.Topology.Component] = r.Pod.Annotations[v1beta1.AnnotationRevision]
		}
	}
	e, d := revs[v1beta1.ComponentEngine], revs[v1beta1.ComponentDecoder]
	if e == "" || d == "" {
		return ""
	}
	return merge.Pairing(e, d)
}

func writePods(out io.Writer, r *Rendered) error {
	for _, p := range r.Pods {
		b, err := yaml.Marshal(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "---\n# InferenceService %s/%s, component %s%s\n%s", r.Service.Namespace, r.Service.Name,
			p.Labels[v1beta1.LabelComponent], roleText(p), b)
	}
	for _, x := range r.Warnings {
		fmt.Fprintf(out, "# warning: %s\n", x)
	}
	return nil
}

func roleText(p *corev1.Pod) string {
	if r := p.Labels[v1beta1.LabelRole]; r != "" {
		return ", role " + r
	}
	return ""
}
