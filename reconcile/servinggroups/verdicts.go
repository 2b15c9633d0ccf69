package servinggroups

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubeinformers "k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// PolicyOptions configure the service's side of ServingPolicy: the
// PolicyCompliant condition (from the ServingPolicy controller's
// verdicts) and QuotaExceeded (any ResourceQuota's refusal). Zero values
// are the defaults.
type PolicyOptions struct {
	// Verdicts are the ServingPolicy controller's (reconcile/policy; the
	// manager wires them). nil: it is not running, and services behave as
	// with no ServingPolicy: they carry no PolicyCompliant condition (a
	// stale one is removed by their next status write) and QuotaExceeded
	// names no policy.
	Verdicts Verdicts
	// QuotaRetryBase is the first retry delay of a service whose pods a
	// quota refuses; it doubles up to QuotaRetryMax (defaults 5s, 5m).
	QuotaRetryBase, QuotaRetryMax time.Duration
	// Quotas is an unfiltered informer factory whose ResourceQuotas are
	// watched (shared with the ServingPolicy controller; nil makes one).
	Quotas kubeinformers.SharedInformerFactory
}

// Verdicts is what the serving side reads of the ServingPolicy controller.
type Verdicts interface {
	// Compliance is the service's PolicyCompliant condition (nil: no
	// policy selects it); known is false while it is not known yet (the
	// condition is then left as it is).
	Compliance(key string, generation int64) (cond *metav1.Condition, known bool)
	// QuotaPolicy names the ServingPolicy whose namespace budget a
	// ResourceQuota keeps ("" for any other quota).
	QuotaPolicy(q *corev1.ResourceQuota) string
}

// noPolicies are the verdicts without a ServingPolicy controller.
type noPolicies struct{}

func (noPolicies) Compliance(string, int64) (*metav1.Condition, bool) { return nil, true }
func (noPolicies) QuotaPolicy(*corev1.ResourceQuota) string           { return "" }

func (o PolicyOptions) withDefaults() PolicyOptions {
	if o.Verdicts == nil {
		o.Verdicts = noPolicies{}
	}
	if o.QuotaRetryBase <= 0 {
		o.QuotaRetryBase = 5 * time.Second
	}
	if o.QuotaRetryMax < o.QuotaRetryBase {
		o.QuotaRetryMax = max(5*time.Minute, o.QuotaRetryBase)
	}
	return o
}

// policyController is the service's side of ServingPolicy: the verdicts, the
// ResourceQuotas (every quota can refuse pods) and the retry delays of
// the services they refuse (quotaexceeded.go).
type policyController struct {
	c        *Controller
	opts     PolicyOptions
	verdicts Verdicts
	kube     kubeinformers.SharedInformerFactory
	quotas   corelisters.ResourceQuotaLister

	mu sync.Mutex
	// quotaDelay: the last retry delay of services a quota refuses.
	quotaDelay map[string]time.Duration
}

func newPolicyController(c *Controller) *policyController {
	opts := c.opts.Policy.withDefaults()
	p := &policyController{c: c, opts: opts, verdicts: opts.Verdicts, kube: opts.Quotas, quotaDelay: map[string]time.Duration{}}
	if p.kube == nil {
		p.kube = kubeinformers.NewSharedInformerFactory(c.kube, c.opts.Resync)
	}
	qinf := p.kube.Core().V1().ResourceQuotas()
	p.quotas = qinf.Lister()
	_, err := qinf.Informer().AddEventHandler(p.quotaEvents())
	utilruntime.Must(err)
	return p
}

// run starts the quota informer and waits until ctx is done.
func (p *policyController) run(ctx context.Context) {
	p.kube.Start(ctx.Done())
	<-ctx.Done()
}

// Enqueue queues a service (namespace/name): the ServingPolicy
// controller's verdict on it changed (the manager wires it).
func (c *Controller) Enqueue(key string) { c.queue.Add(key) }

// servingPolicyConditions puts the conditions of ServingPolicy into a
// status the service's sync is about to write: QuotaExceeded goes (the
// sync created every pod), PolicyCompliant follows the verdicts.
func (c *Controller) servingPolicyConditions(isvc *v1beta1.InferenceService, st *v1beta1.InferenceServiceStatus) {
	c.clearQuotaExceeded(isvc, st)
	cond, known := c.pol.verdicts.Compliance(isvc.Namespace+"/"+isvc.Name, isvc.Generation)
	switch {
	case !known:
	case cond == nil:
		meta.RemoveStatusCondition(&st.Conditions, ConditionPolicyCompliant)
	default:
		meta.SetStatusCondition(&st.Conditions, *cond)
	}
}

// The service conditions of ServingPolicy (the rules: reconcile/policy),
// and the label of the objects the reconciler keeps.
const (
	// ConditionPolicyCompliant is on every InferenceService at least one
	// ServingPolicy selects (policy.ConditionPolicyCompliant).
	ConditionPolicyCompliant = "PolicyCompliant"
	// LabelManagedBy (app.kubernetes.io/managed-by) is ManagedByReconciler
	// on the objects the reconciler keeps beside pods and Services (the
	// router's RBAC; reconcile/policy's ResourceQuotas say the same).
	LabelManagedBy      = "app.kubernetes.io/managed-by"
	ManagedByReconciler = "berth-reconciler"
)
