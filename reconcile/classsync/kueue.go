package classsync

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/gpudiscovery"
	"github.com/berthdev/berth/selection"
)

// ResourceFlavorGVR is Kueue's ResourceFlavor (kueue.x-k8s.io/v1beta1).
// berth reads and writes it with the dynamic client, through Kueue's own
// Go type (kueue.ResourceFlavor), and owns only spec.nodeLabels,
// spec.nodeTaints and spec.tolerations.
var ResourceFlavorGVR = kueue.GroupVersion.WithResource("resourceflavors")

// FlavorPrefix names the ResourceFlavors that make a class without an
// annotation (OEP-0003, Story 3: gpu-nvidia-a100).
const FlavorPrefix = "gpu-"

const fieldManagerKueue = "berth-kueue-sync"

// ConditionKueueSynced is the condition of an AcceleratorClass with
// spec.integration.kueueResourceFlavor while Kueue's ResourceFlavor CRD is
// missing (False, ReasonResourceFlavorCRDMissing), and once it is
// installed after that (True, ReasonResourceFlavorCRDInstalled). Classes that never
// saw the CRD missing do not get it.
const (
	ConditionKueueSynced             = "KueueSynced"
	ReasonResourceFlavorCRDMissing   = "ResourceFlavorCRDMissing"
	ReasonResourceFlavorCRDInstalled = "ResourceFlavorCRDInstalled"
)

// kueueProbeInterval is how often, while the flavors' cache has not
// synced, the sync asks the apiserver whether Kueue's CRD exists.
const kueueProbeInterval = 5 * time.Second

// kueueSync keeps ResourceFlavors and AcceleratorClasses in sync (see the
// package doc, "Kueue ResourceFlavor sync").
type kueueSync struct {
	c       *Controller
	inf     dynamicinformer.DynamicSharedInformerFactory
	flavors cache.GenericLister
	synced  cache.InformerSynced
	// ready: the flavors' cache synced; crdMissing: the last probe found
	// no ResourceFlavor resource (404).
	ready, crdMissing atomic.Bool
}

func newKueueSync(c *Controller) *kueueSync {
	k := &kueueSync{c: c}
	k.inf = dynamicinformer.NewDynamicSharedInformerFactory(c.dyn, c.opts.Resync)
	gi := k.inf.ForResource(ResourceFlavorGVR)
	k.flavors, k.synced = gi.Lister(), gi.Informer().HasSynced
	_, err := gi.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    k.flavorChanged,
		UpdateFunc: func(_, n any) { k.flavorChanged(n) },
		DeleteFunc: k.flavorChanged,
	})
	utilruntime.Must(err)
	return k
}

func (k *kueueSync) start(ctx context.Context) { k.inf.Start(ctx.Done()) }

// waitSynced waits for the flavors' cache, then queues every flavor and
// class. While Kueue's CRD is missing the informer keeps retrying; every
// kueueProbeInterval this asks the apiserver whether the resource exists,
// and when it does not, queues the classes that ask for a flavor so that
// their status says so (logged once a minute).
func (k *kueueSync) waitSynced(ctx context.Context) {
	var logged time.Time
	for {
		wctx, cancel := context.WithTimeout(ctx, kueueProbeInterval)
		ok := cache.WaitForCacheSync(wctx.Done(), k.synced)
		cancel()
		if ok {
			k.crdMissing.Store(false)
			k.ready.Store(true)
			k.c.log.Info("Kueue sync running: ResourceFlavors are listed")
			k.enqueueAll()
			return
		}
		if ctx.Err() != nil {
			return
		}
		_, err := k.c.dyn.Resource(ResourceFlavorGVR).List(ctx, metav1.ListOptions{Limit: 1})
		if missing := apierrors.IsNotFound(err); missing != k.crdMissing.Load() || missing {
			k.crdMissing.Store(missing)
			k.enqueueClasses()
		}
		if time.Since(logged) >= time.Minute {
			logged = time.Now()
			k.c.log.Warn("Kueue sync: ResourceFlavors (kueue.x-k8s.io/v1beta1) are not listed yet; is Kueue's CRD installed?",
				"crdMissing", k.crdMissing.Load(), "err", err)
		}
	}
}

func (k *kueueSync) flavorChanged(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	k.c.queue.Add("flavor/" + u.GetName())
	if u.GetLabels()[v1beta1.LabelSyncedFrom] == v1beta1.SyncedFromAcceleratorClass {
		for _, o := range u.GetOwnerReferences() {
			if o.Kind == "AcceleratorClass" {
				k.c.queue.Add("class/" + o.Name)
			}
		}
	}
}

func (k *kueueSync) classChanged(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	cl, ok := obj.(*v1beta1.AcceleratorClass)
	if !ok {
		return
	}
	k.c.queue.Add("class/" + cl.Name)
	if f := cl.Annotations[v1beta1.AnnotationKueueResourceFlavor]; f != "" {
		k.c.queue.Add("flavor/" + f)
	}
}

func (k *kueueSync) enqueueAll() {
	if !k.ready.Load() {
		k.enqueueClasses() // their status may say the CRD is missing
		return
	}
	if fl, err := k.flavors.List(labels.Everything()); err == nil {
		for _, o := range fl {
			if m, err := metaOf(o); err == nil {
				k.c.queue.Add("flavor/" + m.GetName())
			}
		}
	}
	k.enqueueClasses()
}

// enqueueClasses queues the classes with integration.kueueResourceFlavor.
func (k *kueueSync) enqueueClasses() {
	if cls, err := k.c.classes.List(labels.Everything()); err == nil {
		for _, cl := range cls {
			if cl.Spec.Integration != nil && cl.Spec.Integration.KueueResourceFlavor != "" {
				k.c.queue.Add("class/" + cl.Name)
			}
		}
	}
}

// sync handles one key. Until the flavors' cache has synced nothing is
// written but a class's KueueSynced condition (the CRD is missing);
// waitSynced queues everything once it has.
func (k *kueueSync) sync(ctx context.Context, key string) error {
	kind, name, _ := strings.Cut(key, "/")
	if !k.ready.Load() {
		if kind == "class" && k.crdMissing.Load() {
			return k.reportCRD(ctx, name, true)
		}
		return nil
	}
	switch kind {
	case "flavor":
		return k.flavorToClass(ctx, name)
	case "class":
		if err := k.classToFlavor(ctx, name); err != nil {
			return err
		}
		return k.reportCRD(ctx, name, false)
	}
	return nil
}

// reportCRD writes a class's KueueSynced condition: False while Kueue's
// CRD is missing (only on a class asking for a flavor), True once it is
// synced, only where the condition is False (a class that never saw the CRD
// missing gets none). Server-side apply of that one condition on the
// status subresource, only when it changes.
func (k *kueueSync) reportCRD(ctx context.Context, name string, missing bool) error {
	cl, err := k.c.classes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil || cl.Spec.Integration == nil || cl.Spec.Integration.KueueResourceFlavor == "" {
		return err
	}
	cur := meta.FindStatusCondition(cl.Status.Conditions, ConditionKueueSynced)
	want := metav1.Condition{Type: ConditionKueueSynced, Status: metav1.ConditionFalse, Reason: ReasonResourceFlavorCRDMissing,
		Message: "Kueue's ResourceFlavor CRD (resourceflavors.kueue.x-k8s.io, v1beta1) is not installed, so ResourceFlavor " +
			cl.Spec.Integration.KueueResourceFlavor + " cannot be made; berth makes it once Kueue is installed"}
	if !missing {
		if cur == nil || cur.Status == metav1.ConditionTrue {
			return nil
		}
		want = metav1.Condition{Type: ConditionKueueSynced, Status: metav1.ConditionTrue, Reason: ReasonResourceFlavorCRDInstalled,
			Message: "Kueue's ResourceFlavor CRD is installed; berth syncs ResourceFlavor " + cl.Spec.Integration.KueueResourceFlavor + " from this class"}
	}
	if cur != nil && cur.Status == want.Status && cur.Reason == want.Reason && cur.Message == want.Message {
		return nil
	}
	want.LastTransitionTime = metav1.NewTime(k.c.now())
	body, err := json.Marshal(map[string]any{
		"apiVersion": v1beta1.SchemeGroupVersion.String(), "kind": "AcceleratorClass",
		"metadata": map[string]any{"name": name},
		"status":   map[string]any{"conditions": []metav1.Condition{want}},
	})
	if err != nil {
		return err
	}
	force := true
	_, err = k.c.berth.OmeV1beta1().AcceleratorClasses().Patch(ctx, name, types.ApplyPatchType, body,
		metav1.PatchOptions{FieldManager: fieldManagerKueue, Force: &force}, "status")
	if err == nil && missing {
		k.c.recorder.Eventf(cl, corev1.EventTypeWarning, ReasonResourceFlavorCRDMissing, "%s", want.Message)
	}
	return err
}

// getFlavor reads flavor name from the cache as Kueue's Go type.
func (k *kueueSync) getFlavor(name string) (*kueue.ResourceFlavor, error) {
	o, err := k.flavors.Get(name)
	if err != nil {
		return nil, err
	}
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return nil, apierrors.NewNotFound(ResourceFlavorGVR.GroupResource(), name)
	}
	var f kueue.ResourceFlavor
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &f); err != nil {
		return nil, fmt.Errorf("read ResourceFlavor %s as %s: %w", name, ResourceFlavorGVR.GroupVersion(), err)
	}
	return &f, nil
}

// flavorObject is f as the dynamic client sends it.
func flavorObject(f *kueue.ResourceFlavor) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(f)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(ResourceFlavorGVR.GroupVersion().String())
	u.SetKind("ResourceFlavor")
	return u, nil
}

// flavorToClass: a flavor annotated ome.io/accelerator-class (the class's
// name) or named gpu-* makes a class of that name whose spec.nodeSelector
// is the flavor's nodeLabels.
func (k *kueueSync) flavorToClass(ctx context.Context, name string) error {
	f, err := k.getFlavor(name)
	if apierrors.IsNotFound(err) {
		// The class it made stays: it is berth's, and its nodes are
		// still there (Kueue may be reinstalled). Its annotation finds
		// the flavor again when one of that name comes back.
		return nil
	}
	if err != nil {
		return err
	}
	if f.Labels[v1beta1.LabelSyncedFrom] == v1beta1.SyncedFromAcceleratorClass {
		return nil // made by berth from a class: that class is its source
	}
	className := f.Annotations[v1beta1.AnnotationAcceleratorClass]
	if className == "" && strings.HasPrefix(name, FlavorPrefix) {
		className = name
	}
	if className == "" {
		return nil
	}
	nodeLabels := f.Spec.NodeLabels
	if len(nodeLabels) == 0 {
		k.c.warnOnce("flavor-nolabels/"+name, func() {
			k.c.log.Warn("Kueue sync: ResourceFlavor has no spec.nodeLabels; no AcceleratorClass made", "resourceflavor", name)
		})
		return nil
	}
	cur, err := k.c.classes.Get(className)
	if apierrors.IsNotFound(err) {
		return k.createClassFromFlavor(ctx, f, className, nodeLabels)
	}
	if err != nil {
		return err
	}
	if cur.Labels[v1beta1.LabelSyncedFrom] != v1beta1.SyncedFromResourceFlavor || cur.Annotations[v1beta1.AnnotationKueueResourceFlavor] != name {
		k.c.warnOnce("class-taken/"+className+"/"+name, func() {
			k.c.log.Warn("Kueue sync: an AcceleratorClass not made from this ResourceFlavor holds its name; left alone",
				"acceleratorclass", className, "resourceflavor", name)
		})
		return nil
	}
	spec := k.classSpecFromFlavor(&cur.Spec, nodeLabels)
	owners := withoutFlavorOwners(cur.OwnerReferences)
	if apiequality.Semantic.DeepEqual(spec, &cur.Spec) && len(owners) == len(cur.OwnerReferences) {
		return nil
	}
	upd := cur.DeepCopy()
	upd.Spec = *spec
	upd.OwnerReferences = owners // an earlier berth made the flavor the owner
	_, err = k.c.berth.OmeV1beta1().AcceleratorClasses().Update(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManagerKueue})
	return err
}

func (k *kueueSync) createClassFromFlavor(ctx context.Context, f *kueue.ResourceFlavor, className string, nodeLabels map[string]string) error {
	// No owner reference: a class is never owned by another project's
	// object (uninstalling Kueue would delete it and its status). The
	// label and the annotation name the source.
	obj := &v1beta1.AcceleratorClass{ObjectMeta: metav1.ObjectMeta{Name: className,
		Labels:      map[string]string{v1beta1.LabelSyncedFrom: v1beta1.SyncedFromResourceFlavor},
		Annotations: map[string]string{v1beta1.AnnotationKueueResourceFlavor: f.Name}},
		Spec: *k.classSpecFromFlavor(&v1beta1.AcceleratorClassSpec{}, nodeLabels)}
	created, err := k.c.berth.OmeV1beta1().AcceleratorClasses().Create(ctx, obj, metav1.CreateOptions{FieldManager: fieldManagerKueue})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err == nil {
		k.c.recorder.Eventf(created, corev1.EventTypeNormal, "FromResourceFlavor", "created from Kueue ResourceFlavor %s", f.Name)
	}
	return err
}

// classSpecFromFlavor is cur with spec.nodeSelector set to the flavor's
// nodeLabels and, when the nodes those labels select carry exactly one
// GPU product, the vendor, family, model, memory, compute capability,
// features and resources discovery reads from their labels.
func (k *kueueSync) classSpecFromFlavor(cur *v1beta1.AcceleratorClassSpec, nodeLabels map[string]string) *v1beta1.AcceleratorClassSpec {
	s := cur.DeepCopy()
	s.NodeSelector = maps.Clone(nodeLabels)
	nodes, err := k.c.nodes.List(labels.SelectorFromSet(nodeLabels))
	if err != nil {
		return s
	}
	gn := make([]gpudiscovery.Node, 0, len(nodes))
	for _, n := range nodes {
		gn = append(gn, gpudiscovery.Node{Name: n.Name, Labels: n.Labels, Resources: allocatableNames(n)})
	}
	props, _ := gpudiscovery.Propose(gn)
	if len(props) != 1 {
		return s
	}
	p := &props[0].Spec
	s.Vendor, s.Family, s.Model = p.Vendor, p.Family, p.Model
	s.Capabilities.MemoryGB, s.Capabilities.ComputeCapability = p.Capabilities.MemoryGB, p.Capabilities.ComputeCapability
	s.Capabilities.Features, s.Resources = p.Capabilities.Features, p.Resources
	return s
}

// classToFlavor: a class with spec.integration.kueueResourceFlavor gets a
// ResourceFlavor of that name whose nodeLabels are the class's node
// selector, nodeTaints the taints every node of the class carries, and
// tolerations one per such taint.
func (k *kueueSync) classToFlavor(ctx context.Context, name string) error {
	cl, err := k.c.classes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil // a flavor it made goes with it (owner reference)
	}
	if err != nil || cl.Spec.Integration == nil || cl.Spec.Integration.KueueResourceFlavor == "" {
		return err
	}
	fname := cl.Spec.Integration.KueueResourceFlavor
	if cl.Labels[v1beta1.LabelSyncedFrom] == v1beta1.SyncedFromResourceFlavor && cl.Annotations[v1beta1.AnnotationKueueResourceFlavor] == fname {
		return nil // the flavor is this class's source
	}
	want, ok := k.flavorSpec(cl)
	if !ok {
		k.c.warnOnce("class-terms/"+name, func() {
			k.c.recorder.Eventf(cl, corev1.EventTypeWarning, "ResourceFlavorNotSynced",
				"integration.kueueResourceFlavor %s: a ResourceFlavor's nodeLabels can only say discovery.nodeSelector and spec.nodeSelector, and this class has none (or has nodeSelectorTerms)", fname)
		})
		return nil
	}
	f, err := k.getFlavor(fname)
	if apierrors.IsNotFound(err) {
		return k.createFlavor(ctx, cl, fname, want)
	}
	if err != nil {
		return err
	}
	if f.Labels[v1beta1.LabelSyncedFrom] != v1beta1.SyncedFromAcceleratorClass || !ownedBy(f.OwnerReferences, cl.UID) {
		k.c.warnOnce("flavor-taken/"+fname+"/"+name, func() {
			k.c.recorder.Eventf(cl, corev1.EventTypeWarning, "ResourceFlavorNotSynced",
				"ResourceFlavor %s exists and was not made from this class; berth leaves it alone", fname)
		})
		return nil
	}
	if sameFlavorSpec(&f.Spec, &want) {
		return nil
	}
	// The fields berth owns are set; the others (topologyName, set by a
	// person) are kept.
	f.Spec.NodeLabels, f.Spec.NodeTaints, f.Spec.Tolerations = want.NodeLabels, want.NodeTaints, want.Tolerations
	upd, err := flavorObject(f)
	if err != nil {
		return err
	}
	_, err = k.c.dyn.Resource(ResourceFlavorGVR).Update(ctx, upd, metav1.UpdateOptions{FieldManager: fieldManagerKueue})
	return err
}

func (k *kueueSync) createFlavor(ctx context.Context, cl *v1beta1.AcceleratorClass, fname string, spec kueue.ResourceFlavorSpec) error {
	u, err := flavorObject(&kueue.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: fname,
		Labels:      map[string]string{v1beta1.LabelSyncedFrom: v1beta1.SyncedFromAcceleratorClass},
		Annotations: map[string]string{v1beta1.AnnotationAcceleratorClass: cl.Name},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "AcceleratorClass",
			Name: cl.Name, UID: cl.UID}}},
		Spec: spec})
	if err != nil {
		return err
	}
	_, err = k.c.dyn.Resource(ResourceFlavorGVR).Create(ctx, u, metav1.CreateOptions{FieldManager: fieldManagerKueue})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	if err == nil {
		k.c.recorder.Eventf(cl, corev1.EventTypeNormal, "ResourceFlavorCreated", "created Kueue ResourceFlavor %s", fname)
	}
	return err
}

// flavorSpec is the flavor spec a class asks for (the fields berth
// owns); false when the class's nodes cannot be said as nodeLabels.
func (k *kueueSync) flavorSpec(cl *v1beta1.AcceleratorClass) (kueue.ResourceFlavorSpec, bool) {
	if len(cl.Spec.Discovery.NodeSelectorTerms) > 0 {
		return kueue.ResourceFlavorSpec{}, false
	}
	sel := maps.Clone(cl.Spec.Discovery.NodeSelector)
	if sel == nil {
		sel = map[string]string{}
	}
	maps.Copy(sel, cl.Spec.NodeSelector)
	if len(sel) == 0 {
		return kueue.ResourceFlavorSpec{}, false
	}
	spec := kueue.ResourceFlavorSpec{NodeLabels: sel}
	if taints := k.commonTaints(cl); len(taints) > 0 {
		tols := make([]corev1.Toleration, 0, len(taints))
		for _, t := range taints {
			tols = append(tols, corev1.Toleration{Key: t.Key, Operator: corev1.TolerationOpEqual, Value: t.Value, Effect: t.Effect})
		}
		spec.NodeTaints, spec.Tolerations = taints, tols
	}
	return spec, true
}

// commonTaints are the taints (key, value, effect) every node of the class
// carries, sorted; none when it matches no node.
func (k *kueueSync) commonTaints(cl *v1beta1.AcceleratorClass) []corev1.Taint {
	nodes, err := k.c.nodes.List(labels.Everything())
	if err != nil {
		return nil
	}
	match := selection.ClassNodeMatcher(cl)
	var common []corev1.Taint
	first := true
	for _, n := range nodes {
		if !match(selection.NodeInfo{Name: n.Name, Labels: n.Labels}) {
			continue
		}
		var keep []corev1.Taint
		for _, t := range n.Spec.Taints {
			t = corev1.Taint{Key: t.Key, Value: t.Value, Effect: t.Effect}
			if first || containsTaint(common, t) {
				keep = append(keep, t)
			}
		}
		common, first = keep, false
	}
	sort.Slice(common, func(i, j int) bool {
		return common[i].Key+"\x00"+common[i].Value+"\x00"+string(common[i].Effect) <
			common[j].Key+"\x00"+common[j].Value+"\x00"+string(common[j].Effect)
	})
	return common
}

func containsTaint(ts []corev1.Taint, t corev1.Taint) bool {
	for _, x := range ts {
		if x.Key == t.Key && x.Value == t.Value && x.Effect == t.Effect {
			return true
		}
	}
	return false
}

// sameFlavorSpec compares the fields berth writes: nodeLabels, nodeTaints
// and tolerations (an empty one equals a missing one, as the apiserver
// omits both).
func sameFlavorSpec(cur, want *kueue.ResourceFlavorSpec) bool {
	return apiequality.Semantic.DeepEqual(cur.NodeLabels, want.NodeLabels) &&
		apiequality.Semantic.DeepEqual(cur.NodeTaints, want.NodeTaints) &&
		apiequality.Semantic.DeepEqual(cur.Tolerations, want.Tolerations)
}

// withoutFlavorOwners is refs without Kueue ResourceFlavors.
func withoutFlavorOwners(refs []metav1.OwnerReference) []metav1.OwnerReference {
	var out []metav1.OwnerReference
	for _, r := range refs {
		if r.Kind != "ResourceFlavor" || !strings.HasPrefix(r.APIVersion, ResourceFlavorGVR.Group+"/") {
			out = append(out, r)
		}
	}
	return out
}

func ownedBy(refs []metav1.OwnerReference, uid types.UID) bool {
	for _, r := range refs {
		if r.UID == uid {
			return true
		}
	}
	return false
}
