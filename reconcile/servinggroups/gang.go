package servinggroups

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/dynamic"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/merge"
	"github.com/berthdev/berth/reconcile/plan"
	"github.com/berthdev/berth/reconcile/servinggroups/gang"
)

// Gang scheduling is a step of the group sync, in package gang
// (reconcile/servinggroups/gang; its doc.go has the rules). Its names
// stay available here.
const (
	DefaultCoschedulingScheduler = gang.DefaultCoschedulingScheduler

	ConditionGangScheduling  = gang.ConditionGangScheduling
	ReasonPodGroupsSynced    = gang.ReasonPodGroupsSynced
	ReasonPodGroupCRDMissing = gang.ReasonPodGroupCRDMissing
	ReasonSchedulerMismatch  = gang.ReasonSchedulerMismatch
	ReasonGangUnschedulable  = gang.ReasonGangUnschedulable

	AnnotationVolcanoGroupName = gang.AnnotationVolcanoGroupName
	AnnotationVolcanoTaskSpec  = gang.AnnotationVolcanoTaskSpec
	AnnotationVolcanoQueueName = gang.AnnotationVolcanoQueueName
	LabelCoschedulingPodGroup  = gang.LabelCoschedulingPodGroup
)

// gangPlan is one sync's gang step (nil: gang scheduling off).
type gangPlan = gang.Plan

// planned is one component's step before it is applied.
type planned struct {
	topo     merge.ComponentTopology
	revision string
	step     plan.Step
	observed []plan.Pod
}

// gangs is the gang step (package gang); nil without Options.Dynamic.
type gangs = gang.Gangs

func newGangs(dyn dynamic.Interface, resync time.Duration) *gangs { return gang.New(dyn, resync) }

// wireGangInformers gives the gang step the controller's queue, metrics
// and coscheduling scheduler; its CRD informers join the controller's
// readiness.
func (c *Controller) wireGangInformers() {
	c.synced = append(c.synced, c.gang.Wire(gang.Config{CoschedulingScheduler: c.opts.CoschedulingScheduler,
		RequeueAll: c.enqueueAll, RequeueOwner: c.enqueueOwner, CountWrite: c.m.write})...)
}

func (c *Controller) startGangs(ctx context.Context) { c.gang.Start(ctx) }

// planGang runs the gang step's plan on the components' steps, composing
// pods from the pinned decision as the pod webhook will.
func (c *Controller) planGang(ctx context.Context, isvc *v1beta1.InferenceService, dec *decision, ps []planned, pods []*corev1.Pod) (*gangPlan, error) {
	members := make([]gang.Member, 0, len(ps))
	for _, p := range ps {
		members = append(members, gang.Member{Topology: p.topo, Step: p.step, Observed: p.observed})
	}
	compose := func(t merge.ComponentTopology, id merge.GroupIdentity) (*corev1.Pod, error) {
		in := dec.input(isvc, t.Component)
		in.Group = id
		pod := merge.SkeletonPod(isvc, t.Component, id)
		if err := merge.ComposePod(in, pod); err != nil {
			return nil, &composeError{component: t.Component, err: err}
		}
		return pod, nil
	}
	return c.gang.Plan(ctx, gang.Input{Service: isvc, Components: members, Pods: pods, Compose: compose})
}

// writeGangsBeforePods creates new PodGroups and lowers those that ask
// less, before the step's pod deletes.
func (c *Controller) writeGangsBeforePods(ctx context.Context, isvc *v1beta1.InferenceService, g *gangPlan) error {
	return c.gang.Write(ctx, isvc, g, gang.BeforePods)
}

// writeGangsAfterPods raises the PodGroups that ask more, after the
// step's pod creates.
func (c *Controller) writeGangsAfterPods(ctx context.Context, isvc *v1beta1.InferenceService, g *gangPlan) error {
	return c.gang.Write(ctx, isvc, g, gang.AfterPods)
}

// deleteGangs deletes the PodGroups no longer wanted.
func (c *Controller) deleteGangs(ctx context.Context, isvc *v1beta1.InferenceService, g *gangPlan) error {
	return c.gang.DeleteStale(ctx, isvc, g)
}

// setGangCondition puts the gang condition on a status, or removes a
// stale one when gang scheduling is off.
func setGangCondition(st *v1beta1.InferenceServiceStatus, g *gangPlan) { gang.SetCondition(st, g) }
