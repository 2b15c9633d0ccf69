// Package events builds the reconciler's event broadcaster and recorder:
// one scheme (Kubernetes' and berth's kinds) and one rate limit for every
// controller.
//
// client-go's default correlator lets 25 events through per object and
// event type, then one every five minutes: a rollout of a few groups
// writes more than that on its InferenceService (groups created, rolled,
// ratio holds), and the events that tell how it ended (a router retired,
// a pairing gone) were dropped. The spam filter here keys on the reason
// too, so every reason has its own budget of 25 per object; the
// aggregation of similar events (same reason, other messages) is client-go's.
package events

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"

	berthscheme "github.com/berthdev/berth/api/client/clientset/versioned/scheme"
)

// Component is the source the reconciler's events carry.
const Component = "berth-reconciler"

// SpamKey is client-go's spam key (source, involved object, type) with
// the event's reason added.
func SpamKey(e *corev1.Event) string {
	o := e.InvolvedObject
	return strings.Join([]string{e.Source.Component, e.Source.Host, o.Kind, o.Namespace, o.Name, string(o.UID),
		o.APIVersion, e.Type, e.Reason}, "\x00")
}

// New returns a broadcaster (the caller starts recording to the API with
// it) and a recorder of events from Component.
func New() (record.EventBroadcaster, record.EventRecorder) {
	b := record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{SpamKeyFunc: SpamKey}))
	return b, recorder(b)
}

// recorder is b's recorder of Component's events, for Kubernetes' and
// berth's kinds.
func recorder(b record.EventBroadcaster) record.EventRecorder {
	scheme := runtime.NewScheme()
	utilruntime.Must(kubescheme.AddToScheme(scheme))
	utilruntime.Must(berthscheme.AddToScheme(scheme))
	return b.NewRecorder(scheme, corev1.EventSource{Component: Component})
}
