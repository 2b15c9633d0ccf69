package events

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// sink records the events the broadcaster writes.
type sink struct {
	mu      sync.Mutex
	reasons map[string]int
}

func (s *sink) add(e *corev1.Event) (*corev1.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reasons[e.Reason]++
	return e, nil
}
func (s *sink) Create(e *corev1.Event) (*corev1.Event, error)          { return s.add(e) }
func (s *sink) Update(e *corev1.Event) (*corev1.Event, error)          { return s.add(e) }
func (s *sink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) { return s.add(e) }
func (s *sink) has(reason string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reasons[reason] > 0
}

// emit records 30 events of one reason on a service, then one of
// another, and reports whether the last reached the sink.
func emit(t *testing.T, b record.EventBroadcaster, r record.EventRecorder) bool {
	t.Helper()
	s := &sink{reasons: map[string]int{}}
	w := b.StartRecordingToSink(s)
	defer w.Stop()
	isvc := &v1beta1.InferenceService{ObjectMeta: metav1.ObjectMeta{Name: "pd", Namespace: "ns", UID: "u"}}
	for i := range 30 {
		r.Eventf(isvc, corev1.EventTypeNormal, "RollingGroup", "engine: replacing group %d", i)
	}
	r.Event(isvc, corev1.EventTypeNormal, "RouterRetired", "router: deleting pod pd-router-0")
	assert.Eventually(t, func() bool { return s.has("RollingGroup") }, 5*time.Second, 10*time.Millisecond)
	// The last event is written after the ones before it, or dropped.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && !s.has("RouterRetired") {
		time.Sleep(10 * time.Millisecond)
	}
	return s.has("RouterRetired")
}

// TestEveryReasonHasItsOwnBudget: client-go's default spam filter drops
// an object's 26th event of a type whatever its reason; berth's keeps
// one reason's burst from silencing the next.
func TestEveryReasonHasItsOwnBudget(t *testing.T) {
	b, r := New()
	defer b.Shutdown()
	assert.True(t, emit(t, b, r), "berth's recorder dropped the event after a burst of another reason")

	def := record.NewBroadcaster()
	defer def.Shutdown()
	assert.False(t, emit(t, def, recorder(def)), "client-go's default filter let it through: this test no longer shows the difference")
}
