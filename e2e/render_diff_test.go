package e2e

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// berth render composes the pods the reconciler creates, and --diff
// compares every field it composes: a gang-scheduled prefill/decode
// service's running pods (PodGroup label, gang scheduler, the router's
// account) match the render; a runtime change that a partition keeps from
// the running pods (an annotation and a toleration, fields the old --diff
// did not look at) is listed for every pod it would change.
func TestRenderDiffComparesEveryField(t *testing.T) {
	t.Parallel()
	ns := lifecycleNamespace(t, "e2e-render")
	kc := "--kubeconfig=" + env.Cluster.KubeconfigPath

	t.Run("what the reconciler adds is rendered", func(t *testing.T) {
		rt := createRuntime(t, MakeRuntime(uniqueName("e2e-render-pd")).PD().Obj())
		svc := MakeService(ns, "pd").Runtime(rt.Name).Replicas(1).Obj()
		svc.Spec.GangPolicy = &v1beta1.GangPolicy{Scheduler: v1beta1.GangSchedulerCoscheduling}
		createService(t, svc)
		waitPods(t, ns, "pd", "engine, decoder and router", podsNamed("pd-engine-0", "pd-decoder-0", "pd-router-0"))
		pods := renderedPods(t, "isvc/pd", "-n", ns, kc)
		require.Len(t, pods, 3)
		for _, p := range pods {
			switch p.Labels[v1beta1.LabelComponent] {
			case v1beta1.ComponentRouter:
				assert.Equal(t, "pd-router", p.Spec.ServiceAccountName)
			default:
				assert.Equal(t, "pd", p.Labels["scheduling.x-k8s.io/pod-group"], "pod %s's PodGroup", p.Name)
				assert.Equal(t, "scheduler-plugins-scheduler", p.Spec.SchedulerName, "pod %s", p.Name)
			}
		}
		diff, err := berthCLI(t, "render", "isvc/pd", "-n", ns, kc, "--diff")
		require.NoError(t, err)
		assert.Equal(t, "no changes: the running pods match what berth composes now\n", diff)
	})

	t.Run("a change the partition holds back is listed", func(t *testing.T) {
		rt := createRuntime(t, MakeRuntime(uniqueName("e2e-render")).Obj())
		createService(t, MakeService(ns, "held").Runtime(rt.Name).Replicas(2).Partition(intstr.FromInt32(2)).Obj())
		waitPods(t, ns, "held", "two groups", podsNamed("held-engine-0", "held-engine-1"))
		diff, err := berthCLI(t, "render", "isvc/held", "-n", ns, kc, "--diff")
		require.NoError(t, err)
		require.Equal(t, "no changes: the running pods match what berth composes now\n", diff)

		updateRuntime(t, rt.Name, func(r *v1beta1.ClusterServingRuntime) {
			ec := r.Spec.EngineConfig
			if ec.Annotations == nil {
				ec.Annotations = map[string]string{}
			}
			ec.Annotations["example.com/tuned"] = "yes"
			ec.Tolerations = append(ec.Tolerations, corev1.Toleration{Key: "example.com/dedicated", Operator: corev1.TolerationOpExists})
		})
		waitFor(t, ns, "render --diff to list the held-back change", func() bool {
			diff, err = berthCLI(t, "render", "isvc/held", "-n", ns, kc, "--diff")
			return err == nil && strings.Contains(diff, "example.com/tuned")
		})
		for _, pod := range []string{"held-engine-0", "held-engine-1"} {
			assert.Contains(t, diff, "pod "+pod+" (engine): metadata.annotations example.com/tuned: added yes\n")
			assert.Contains(t, diff, "pod "+pod+` (engine): spec.tolerations: added {"key":"example.com/dedicated","operator":"Exists"}`+"\n")
			assert.Contains(t, diff, "pod "+pod+" (engine): metadata.annotations "+v1beta1.AnnotationRevision+": ")
		}
		t.Logf("berth render --diff:\n%s", diff)
	})
}
