package servinggroups

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/internal/byservice"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/reconcile/plan"
)

// Recorded revisions (the package documentation, "Partitions hold"): every
// revision a component runs is recorded in a ControllerRevision
// <isvc>-<component>-<revision> holding its composed pod templates, so a
// group below the partition comes back at its own revision.

// RevisionHistoryLimit is how many recorded revisions of a component that
// no live pod runs, and that are neither current nor stable, are kept
// (StatefulSet's and Deployment's default).
const RevisionHistoryLimit = 10

// Annotations of a recorded revision.
const (
	// annotationStableRevision, on the current revision's record: the last
	// revision every group of the component ran.
	annotationStableRevision = "ome.io/stable-revision"
	// annotationGroupSize: the pods per group of the revision's groups,
	// absent for single-pod groups.
	annotationGroupSize = "ome.io/group-size"
)

// recordedTemplates is a ControllerRevision's data: the pods of a
// revision's groups as the pod webhook composes them, one per role, for
// group 0 (the leader address of group 0, the first worker).
type recordedTemplates struct {
	Revision  string        `json:"revision"`
	Component string        `json:"component"`
	MultiNode bool          `json:"multiNode,omitempty"`
	Workers   int32         `json:"workers,omitempty"`
	Pods      []recordedPod `json:"pods"`
}

type recordedPod struct {
	Role        string            `json:"role,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Spec        corev1.PodSpec    `json:"spec"`
}

// RevisionName is the ControllerRevision recording revision rev of a
// component's pods.
func RevisionName(service, component, rev string) string {
	return service + "-" + component + "-" + rev
}

// wireRevisions watches the services' ControllerRevisions (labelled, as
// everything the controller owns); a change queues the service, so a
// record deleted by hand is written again.
func (c *Controller) wireRevisions() {
	inf := c.kubeInformers.Apps().V1().ControllerRevisions()
	c.revisions = inf.Lister()
	utilruntime.Must(byservice.Add(inf.Informer()))
	c.revisionIndex = inf.Informer().GetIndexer()
	_, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.enqueueOwner,
		UpdateFunc: func(_, n any) { c.enqueueOwner(n) },
		DeleteFunc: c.enqueueOwner,
	})
	utilruntime.Must(err)
	c.synced = append(c.synced, inf.Informer().HasSynced)
}

// history is what the planner reads of a component's records.
type history struct {
	stable   string
	recorded map[string]plan.Shape
}

// records lists the component's ControllerRevisions the service controls,
// by revision.
func (c *Controller) records(isvc *v1beta1.InferenceService, component string) map[string]*appsv1.ControllerRevision {
	out := map[string]*appsv1.ControllerRevision{}
	list, err := byservice.For[*appsv1.ControllerRevision](c.revisionIndex, isvc.Namespace, isvc.Name)
	if err != nil {
		return out
	}
	for _, r := range list {
		if r.Labels[v1beta1.LabelComponent] != component {
			continue
		}
		if rev := r.Labels[v1beta1.AnnotationRevision]; rev != "" && metav1.IsControlledBy(r, isvc) {
			out[rev] = r
		}
	}
	return out
}

// syncHistory records the current revision rev of component t (creating
// its ControllerRevision, or making it the newest again when it returns),
// keeps its stable revision, prunes the history, and returns what the
// planner needs. A write that fails is said in an event and retried on the
// next sync; the planner then works with what is recorded.
func (c *Controller) syncHistory(ctx context.Context, isvc *v1beta1.InferenceService, dec *decision,
	t merge.ComponentTopology, rev string, observed []plan.Pod) history {
	recs := c.records(isvc, t.Component)
	if err := c.recordCurrent(ctx, isvc, dec, t, rev, observed, recs); err != nil {
		c.recorder.Eventf(isvc, corev1.EventTypeWarning, "RecordRevisionFailed",
			"%s: cannot record revision %q (ControllerRevision %s): %v", t.Component, rev, RevisionName(isvc.Name, t.Component, rev), err)
	}
	h := history{recorded: map[string]plan.Shape{}}
	for r, cr := range recs {
		if r != rev {
			h.recorded[r] = shapeOf(cr)
		}
	}
	if cur := recs[rev]; cur != nil {
		h.stable = cur.Annotations[annotationStableRevision]
	}
	c.pruneHistory(ctx, isvc, rev, h.stable, observed, recs)
	return h
}

// recordCurrent ensures the record of rev and its stable revision, and
// updates recs with what it wrote.
func (c *Controller) recordCurrent(ctx context.Context, isvc *v1beta1.InferenceService, dec *decision,
	t merge.ComponentTopology, rev string, observed []plan.Pod, recs map[string]*appsv1.ControllerRevision) error {
	newest := newestRecord(recs)
	cur := recs[rev]
	switch {
	case cur == nil:
		cr, err := c.newRecord(isvc, dec, t, rev)
		if err != nil {
			return err
		}
		cr.Revision = newest.number + 1
		cr.Annotations[annotationStableRevision] = stableAfter(rev, newest.stable, liveRevisions(observed))
		c.m.write("create", "controllerrevisions")
		got, err := c.kube.AppsV1().ControllerRevisions(isvc.Namespace).Create(ctx, cr, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil // the cache lags; the next sync reads it
		}
		if err != nil {
			return err
		}
		recs[rev] = got
		return nil
	case cur.Revision < newest.number:
		// A revision that returns (a rollback) is the newest again; its
		// stable revision is what runs now.
		upd := cur.DeepCopy()
		upd.Revision = newest.number + 1
		upd.Annotations[annotationStableRevision] = stableAfter(rev, newest.stable, liveRevisions(observed))
		return c.updateRecord(ctx, upd, recs, rev)
	}
	if rolledOut(observed, rev, t.Replicas) && cur.Annotations[annotationStableRevision] != rev {
		upd := cur.DeepCopy() // every group runs rev: it is stable now
		upd.Annotations[annotationStableRevision] = rev
		return c.updateRecord(ctx, upd, recs, rev)
	}
	return nil
}

func (c *Controller) updateRecord(ctx context.Context, cr *appsv1.ControllerRevision, recs map[string]*appsv1.ControllerRevision, rev string) error {
	if cr.Annotations == nil {
		cr.Annotations = map[string]string{}
	}
	c.m.write("update", "controllerrevisions")
	got, err := c.kube.AppsV1().ControllerRevisions(cr.Namespace).Update(ctx, cr, metav1.UpdateOptions{})
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil // the cache lags; the next sync reads it again
	}
	if err != nil {
		return err
	}
	recs[rev] = got
	return nil
}

// stableAfter is the stable revision of a newly current revision rev: the
// one revision the live pods run (a finished roll, or a new service: rev);
// with none live, or pods of several revisions (a canary), the stable
// revision so far; else, with no record at all (the service ran before
// berth recorded revisions), the only other revision the pods run.
func stableAfter(rev, stableSoFar string, live []string) string {
	switch {
	case len(live) == 1:
		return live[0]
	case stableSoFar != "":
		return stableSoFar
	case len(live) == 0:
		return rev
	}
	others := slices.DeleteFunc(slices.Clone(live), func(r string) bool { return r == rev })
	if len(others) == 1 {
		return others[0]
	}
	return ""
}

// rolledOut reports whether rev is rolled out: every live pod runs it, in
// at least replicas groups (StatefulSet: updatedReplicas == replicas). A
// group that lost its pods does not count, so a protected group being
// rebuilt keeps the stable revision it comes back at.
func rolledOut(observed []plan.Pod, rev string, replicas int32) bool {
	groups := map[int32]bool{}
	for _, p := range observed {
		if p.Terminating {
			continue
		}
		if p.Revision != rev {
			return false
		}
		groups[p.Group] = true
	}
	return int32(len(groups)) >= replicas
}

// liveRevisions are the revisions of the live pods, sorted, once each.
func liveRevisions(observed []plan.Pod) []string {
	var out []string
	for _, p := range observed {
		if !p.Terminating && p.Revision != "" && !slices.Contains(out, p.Revision) {
			out = append(out, p.Revision)
		}
	}
	slices.Sort(out)
	return out
}

type newestInfo struct {
	number int64
	stable string
}

// newestRecord is the highest revision number and that record's stable
// revision.
func newestRecord(recs map[string]*appsv1.ControllerRevision) newestInfo {
	var n newestInfo
	for _, r := range recs {
		if r.Revision > n.number {
			n = newestInfo{number: r.Revision, stable: r.Annotations[annotationStableRevision]}
		}
	}
	return n
}

// shapeOf reads a record's group shape from its annotation.
func shapeOf(cr *appsv1.ControllerRevision) plan.Shape {
	size, err := strconv.Atoi(cr.Annotations[annotationGroupSize])
	if err != nil || size < 1 {
		return plan.Shape{}
	}
	return plan.Shape{MultiNode: true, Workers: int32(size - 1)}
}

// newRecord composes rev's templates, as the pod webhook composes group 0,
// into a ControllerRevision owned by the service.
func (c *Controller) newRecord(isvc *v1beta1.InferenceService, dec *decision, t merge.ComponentTopology, rev string) (*appsv1.ControllerRevision, error) {
	data := recordedTemplates{Revision: rev, Component: t.Component, MultiNode: t.MultiNode, Workers: t.Workers}
	for _, id := range merge.CanonicalRoles(isvc, t) {
		in := dec.input(isvc, t.Component)
		in.Group = id
		pod := merge.SkeletonPod(isvc, t.Component, id)
		if err := merge.ComposePod(in, pod); err != nil {
			return nil, err
		}
		data.Pods = append(data.Pods, recordedPod{Role: id.Role, Labels: pod.Labels, Annotations: pod.Annotations, Spec: pod.Spec})
	}
	raw, err := canonicalJSON(data)
	if err != nil {
		return nil, err
	}
	yes := true
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Name: RevisionName(isvc.Name, t.Component, rev), Namespace: isvc.Namespace,
			Labels: map[string]string{
				v1beta1.LabelInferenceService: isvc.Name, v1beta1.LabelComponent: t.Component,
				v1beta1.AnnotationRevision: rev, "app.kubernetes.io/managed-by": "berth-reconciler",
			},
			Annotations: map[string]string{},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "InferenceService",
				Name: isvc.Name, UID: isvc.UID, Controller: &yes, BlockOwnerDeletion: &yes,
			}},
		},
		Data: runtime.RawExtension{Raw: raw},
	}
	if t.MultiNode {
		cr.Annotations[annotationGroupSize] = strconv.Itoa(int(t.Workers) + 1)
	}
	return cr, nil
}

// pruneHistory deletes the oldest records beyond RevisionHistoryLimit among
// those no live pod runs and that are neither current nor stable.
func (c *Controller) pruneHistory(ctx context.Context, isvc *v1beta1.InferenceService, rev, stable string,
	observed []plan.Pod, recs map[string]*appsv1.ControllerRevision) {
	live := liveRevisions(observed)
	var old []*appsv1.ControllerRevision
	for r, cr := range recs {
		if r != rev && r != stable && !slices.Contains(live, r) {
			old = append(old, cr)
		}
	}
	slices.SortFunc(old, func(a, b *appsv1.ControllerRevision) int {
		return cmp.Or(cmp.Compare(a.Revision, b.Revision), cmp.Compare(a.Name, b.Name))
	})
	for len(old) > RevisionHistoryLimit {
		cr := old[0]
		old = old[1:]
		uid := cr.UID
		c.m.write("delete", "controllerrevisions")
		err := c.kube.AppsV1().ControllerRevisions(cr.Namespace).Delete(ctx, cr.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			c.log.Warn("pruning a recorded revision", "controllerrevision", cr.Namespace+"/"+cr.Name, "err", err)
		}
	}
}

// restoredPod is the pod p of a group of component t at the recorded
// revision p.Revision: the record's template for its role with the pod's
// own identity (name, labels, hostname, group env), stamped with the
// revision and marked so the pod webhook keeps it as it is. ok is false
// when the record is gone or unreadable; the caller then creates the
// skeleton at the current revision, and the event says why.
func (c *Controller) restoredPod(isvc *v1beta1.InferenceService, t merge.ComponentTopology, p plan.PodID) (*corev1.Pod, bool) {
	name := RevisionName(isvc.Name, t.Component, p.Revision)
	data, err := c.readRecord(isvc, name, p.Revision)
	if err == nil {
		pod, err2 := restore(isvc, t, p, data)
		if err2 == nil {
			pod.Annotations[v1beta1.AnnotationRestoredFrom] = name
			return pod, true
		}
		err = err2
	}
	c.recorder.Eventf(isvc, corev1.EventTypeWarning, plan.ReasonRevisionMissing,
		"%s: group %d is below the partition at revision %q, but its record %s cannot be used (%v); creating the pod at the current revision",
		t.Component, p.Group, p.Revision, name, err)
	return nil, false
}

// readRecord reads and checks a recorded revision.
func (c *Controller) readRecord(isvc *v1beta1.InferenceService, name, rev string) (*recordedTemplates, error) {
	cr, err := c.revisions.ControllerRevisions(isvc.Namespace).Get(name)
	if err != nil {
		return nil, err
	}
	if !metav1.IsControlledBy(cr, isvc) {
		return nil, fmt.Errorf("ControllerRevision %s is not controlled by the InferenceService", name)
	}
	var data recordedTemplates
	if err := json.Unmarshal(cr.Data.Raw, &data); err != nil {
		return nil, fmt.Errorf("ControllerRevision %s: %w", name, err)
	}
	if data.Revision != rev {
		return nil, fmt.Errorf("ControllerRevision %s records revision %q", name, data.Revision)
	}
	return &data, nil
}

// restore builds pod p from a record: the template of its role, the
// identity of the skeleton the reconciler would create in the record's
// shape.
func restore(isvc *v1beta1.InferenceService, t merge.ComponentTopology, p plan.PodID, data *recordedTemplates) (*corev1.Pod, error) {
	i := slices.IndexFunc(data.Pods, func(r recordedPod) bool { return r.Role == p.Role })
	if i < 0 {
		return nil, fmt.Errorf("no template for role %q", p.Role)
	}
	tmpl := data.Pods[i]
	t.MultiNode, t.Workers = data.MultiNode, data.Workers
	pod := skeleton(isvc, t, p) // name, owner, identity labels, hostname, group env
	out := &corev1.Pod{TypeMeta: pod.TypeMeta, ObjectMeta: pod.ObjectMeta, Spec: *tmpl.Spec.DeepCopy()}
	out.Labels = mergeMaps(tmpl.Labels, pod.Labels)
	out.Annotations = mergeMaps(tmpl.Annotations, pod.Annotations)
	out.Annotations[v1beta1.AnnotationRevision] = data.Revision
	out.Spec.Hostname, out.Spec.Subdomain = pod.Spec.Hostname, pod.Spec.Subdomain
	setGroupEnv(&out.Spec, pod.Spec.Containers[0].Env)
	return out, nil
}

// mergeMaps is base with over laid on top, a new map.
func mergeMaps(base, over map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(over))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range over {
		out[k] = v
	}
	return out
}

// setGroupEnv gives every container's group variables (by name) the
// values of the pod's own identity.
func setGroupEnv(spec *corev1.PodSpec, group []corev1.EnvVar) {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			for j, e := range cs[i].Env {
				if k := slices.IndexFunc(group, func(g corev1.EnvVar) bool { return g.Name == e.Name }); k >= 0 && e.ValueFrom == nil {
					cs[i].Env[j].Value = group[k].Value
				}
			}
		}
	}
}

// canonicalJSON is v as JSON with every object's keys sorted, the form the
// apiserver re-encodes a ControllerRevision's data in when it applies a
// patch to it (the garbage collector orphaning it, say): data is
// immutable, and bytes in struct-field order would differ from the
// re-encoded ones, so the patch would be refused.
func canonicalJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return nil, err
	}
	return json.Marshal(generic)
}
