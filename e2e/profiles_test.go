package e2e

// Engine runtime profiles (KEP-92) and their updateStrategy: editing a
// RollingUpdate profile rolls the serving groups that use it; editing a
// NoUpdate profile leaves running pods alone and reaches new pods only.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// sidecarImage is the image of the profile's container in pod p ("" when
// the pod has none).
func sidecarImage(p *corev1.Pod) string {
	for _, c := range p.Spec.Containers {
		if c.Name == "engine-runtime" {
			return c.Image
		}
	}
	return ""
}

func TestProfileUpdateStrategy(t *testing.T) {
	t.Parallel()
	for _, strategy := range []v1beta1.ProfileUpdateStrategy{v1beta1.ProfileRollingUpdate, v1beta1.ProfileNoUpdate} {
		t.Run(string(strategy), func(t *testing.T) {
			t.Parallel()
			bc := berthClient(t)
			prof := &v1beta1.ClusterEngineRuntimeProfile{ObjectMeta: metav1.ObjectMeta{Name: uniqueName("e2e-prof")},
				Spec: v1beta1.ClusterEngineRuntimeProfileSpec{UpdateStrategy: strategy, Containers: []corev1.Container{
					{Name: "engine-runtime", Image: "registry.berth.dev/e2e/sidecar:v1"}}}}
			_, err := bc.OmeV1beta1().ClusterEngineRuntimeProfiles().Create(ctxT(t, apiTimeout), prof, metav1.CreateOptions{})
			require.NoError(t, err)
			t.Cleanup(func() {
				_ = bc.OmeV1beta1().ClusterEngineRuntimeProfiles().Delete(ctxT(t, apiTimeout), prof.Name, metav1.DeleteOptions{})
			})
			ns := lifecycleNamespace(t, "e2e-prof")
			rt := MakeRuntime(uniqueName("e2e-prof")).Obj()
			rt.Spec.EngineConfig.EngineRuntimes = []v1beta1.EngineRuntimeRef{{ProfileName: prof.Name}}
			rt = createRuntime(t, rt)
			createService(t, MakeService(ns, "prof").Runtime(rt.Name).MinMax(2, 3).Replicas(2).Obj())
			isvc := waitService(t, ns, "prof", "Ready=True with 2 groups", func(s *v1beta1.InferenceService) bool {
				return serviceReady(s) && s.Status.Components[v1beta1.ComponentEngine].ReadyReplicas == 2
			})
			oldRev := isvc.Status.Components[v1beta1.ComponentEngine].Revision
			before := waitPods(t, ns, "prof", "2 groups", podsNamed(groupNames("prof", 2)...))
			for i := range before {
				require.Equal(t, "registry.berth.dev/e2e/sidecar:v1", sidecarImage(&before[i]), "pod %s has the profile's container", before[i].Name)
			}

			require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
				p, err := bc.OmeV1beta1().ClusterEngineRuntimeProfiles().Get(ctxT(t, apiTimeout), prof.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				p.Spec.Containers[0].Image = "registry.berth.dev/e2e/sidecar:v2"
				_, err = bc.OmeV1beta1().ClusterEngineRuntimeProfiles().Update(ctxT(t, apiTimeout), p, metav1.UpdateOptions{})
				return err
			}))

			if strategy == v1beta1.ProfileRollingUpdate {
				isvc = waitService(t, ns, "prof", "rolled to a new revision", rolloutDone(oldRev, 2, 2))
				after := waitPods(t, ns, "prof", "2 groups", podsNamed(groupNames("prof", 2)...))
				for i := range after {
					p := &after[i]
					assert.NotEqual(t, podByName(before, p.Name).UID, p.UID, "%s was recreated", p.Name)
					assert.Equal(t, "registry.berth.dev/e2e/sidecar:v2", sidecarImage(p), "%s has the edited profile", p.Name)
				}
				return
			}
			// NoUpdate: a new group (scale 2 -> 3) gets the edited profile,
			// which shows the change was seen; the running groups keep
			// their pods, revision and the old container.
			updateService(t, ns, "prof", func(s *v1beta1.InferenceService) { s.Spec.Engine.Replicas = ptr(int32(3)) })
			after := waitPods(t, ns, "prof", "3 groups", podsNamed(groupNames("prof", 3)...))
			for i := range after {
				p := &after[i]
				if old := podByName(before, p.Name); old != nil {
					assert.Equal(t, old.UID, p.UID, "%s kept", p.Name)
					assert.Equal(t, "registry.berth.dev/e2e/sidecar:v1", sidecarImage(p), "%s keeps the profile it was made with", p.Name)
				} else {
					assert.Equal(t, "registry.berth.dev/e2e/sidecar:v2", sidecarImage(p), "the new pod %s has the edited profile", p.Name)
				}
				assert.Equal(t, oldRev, p.Annotations[v1beta1.AnnotationRevision], "%s: a NoUpdate profile's spec is not in the revision", p.Name)
			}
		})
	}
}
