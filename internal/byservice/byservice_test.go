package byservice

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

func pod(ns, name, service string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if service != "" {
		p.Labels = map[string]string{v1beta1.LabelInferenceService: service}
	}
	return p
}

func names(ps []*corev1.Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	sort.Strings(out)
	return out
}

// For gives what a label-selector list of the namespace gives, on an
// informer fed by a fake clientset: the service's own objects, not another
// service's of the same namespace, not a same-named service's of another
// namespace, not unlabelled objects; and follows updates and deletes.
func TestForListsWhatTheSelectorLists(t *testing.T) {
	kc := fake.NewClientset(pod("a", "chat-0", "chat"), pod("a", "chat-1", "chat"), pod("a", "code-0", "code"),
		pod("b", "chat-0", "chat"), pod("a", "plain", ""))
	f := informers.NewSharedInformerFactory(kc, 0)
	inf := f.Core().V1().Pods().Informer()
	require.NoError(t, Add(inf))
	require.NoError(t, Add(inf), "a second Add is a no-op")
	stop := make(chan struct{})
	defer close(stop)
	f.Start(stop)
	f.WaitForCacheSync(stop)

	selector := func(ns, svc string) []string {
		ps, err := f.Core().V1().Pods().Lister().Pods(ns).List(labels.SelectorFromSet(labels.Set{v1beta1.LabelInferenceService: svc}))
		require.NoError(t, err)
		return names(ps)
	}
	for _, c := range [][2]string{{"a", "chat"}, {"a", "code"}, {"b", "chat"}, {"b", "code"}, {"c", "chat"}} {
		got, err := For[*corev1.Pod](inf.GetIndexer(), c[0], c[1])
		require.NoError(t, err)
		assert.Equal(t, selector(c[0], c[1]), names(got), "%s/%s", c[0], c[1])
	}
	got, _ := For[*corev1.Pod](inf.GetIndexer(), "a", "chat")
	assert.Equal(t, []string{"a/chat-0", "a/chat-1"}, names(got))

	// A relabelled pod moves; a deleted one goes.
	_, err := kc.CoreV1().Pods("a").Update(t.Context(), pod("a", "chat-1", "code"), metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, kc.CoreV1().Pods("a").Delete(t.Context(), "chat-0", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		chat, _ := For[*corev1.Pod](inf.GetIndexer(), "a", "chat")
		code, _ := For[*corev1.Pod](inf.GetIndexer(), "a", "code")
		return fmt.Sprint(names(chat)) == "[]" && fmt.Sprint(names(code)) == "[a/chat-1 a/code-0]"
	}, 5*time.Second, 10*time.Millisecond)
}

func TestForRefusesAnotherType(t *testing.T) {
	kc := fake.NewClientset(pod("a", "chat-0", "chat"))
	f := informers.NewSharedInformerFactory(kc, 0)
	inf := f.Core().V1().Pods().Informer()
	require.NoError(t, Add(inf))
	stop := make(chan struct{})
	defer close(stop)
	f.Start(stop)
	f.WaitForCacheSync(stop)
	_, err := For[*corev1.Service](inf.GetIndexer(), "a", "chat")
	assert.EqualError(t, err, "byservice: index holds a *v1.Pod, not a *v1.Service")
}

// BenchmarkFor1000Services: one service's pods out of a namespace of 1,000
// services × 10 pods, by the index and by a label selector.
func BenchmarkFor1000Services(b *testing.B) {
	var objs []*corev1.Pod
	for s := 0; s < 1000; s++ {
		for g := 0; g < 10; g++ {
			objs = append(objs, pod("load", fmt.Sprintf("svc-%d-engine-%d", s, g), fmt.Sprintf("svc-%d", s)))
		}
	}
	kc := fake.NewClientset()
	f := informers.NewSharedInformerFactory(kc, 0)
	inf := f.Core().V1().Pods().Informer()
	require.NoError(b, Add(inf))
	for _, o := range objs {
		require.NoError(b, inf.GetIndexer().Add(o))
	}
	b.Run("index", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if ps, _ := For[*corev1.Pod](inf.GetIndexer(), "load", fmt.Sprintf("svc-%d", i%1000)); len(ps) != 10 {
				b.Fatal(len(ps))
			}
		}
	})
	b.Run("selector", func(b *testing.B) {
		lister := f.Core().V1().Pods().Lister()
		for i := 0; b.Loop(); i++ {
			ps, _ := lister.Pods("load").List(labels.SelectorFromSet(labels.Set{v1beta1.LabelInferenceService: fmt.Sprintf("svc-%d", i%1000)}))
			if len(ps) != 10 {
				b.Fatal(len(ps))
			}
		}
	})
}
