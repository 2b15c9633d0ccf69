package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/berthdev/berth/api/client/clientset/versioned"
	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// BenchmarkDownloadedModelAdmission is one server-side dry-run CREATE of an
// InferenceService whose model is downloaded into its pods, through the
// real apiserver and both berth webhooks: "key" names a Secret that exists
// (the validating webhook checks it exists in the namespace), "no-key" is
// the same model without storage.key (nothing to check). The difference is
// what the Secret check costs an admission.
//
//	go test -count=1 -run '^$' -bench BenchmarkDownloadedModelAdmission -benchtime 300x ./e2e/
func BenchmarkDownloadedModelAdmission(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	bc, err := versioned.NewForConfig(env.Cluster.RESTConfig())
	if err != nil {
		b.Fatal(err)
	}
	ns := "bench-secret-" + rand.String(5)
	if _, err := env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = env.Kube.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) }()
	if _, err := env.Kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "hf-token"}, StringData: map[string]string{"token": "hf_bench"},
	}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	rt := MakeRuntime("bench-secret-" + rand.String(5)).Obj()
	if err := retryWebhook(ctx, func() error {
		_, err := bc.OmeV1beta1().ClusterServingRuntimes().Create(ctx, rt, metav1.CreateOptions{})
		return err
	}); err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = bc.OmeV1beta1().ClusterServingRuntimes().Delete(context.Background(), rt.Name, metav1.DeleteOptions{})
	}()

	for _, key := range []string{"hf-token", ""} {
		name := "key"
		if key == "" {
			name = "no-key"
		}
		m := tinyModelObj(ns)
		m.Name = "bench-model-" + name
		m.Spec.Storage = &v1beta1.StorageSpec{StorageURI: ptr("hf://acme/bench-model")}
		if key != "" {
			m.Spec.Storage.Key = ptr(key)
		}
		if err := retryWebhook(ctx, func() error {
			_, err := bc.OmeV1beta1().BaseModels(ns).Create(ctx, m, metav1.CreateOptions{})
			return err
		}); err != nil {
			b.Fatal(err)
		}
		svc := MakeService(ns, "chat").Runtime(rt.Name).Replicas(1).Obj()
		svc.Spec.Model.Name = m.Name
		admit := func() *v1beta1.InferenceService {
			got, err := bc.OmeV1beta1().InferenceServices(ns).Create(ctx, svc.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			if err != nil {
				b.Fatalf("%s: %v", m.Name, err)
			}
			return got
		}
		// Until the webhook's cache holds the model and runtime.
		for deadline := time.Now().Add(30 * time.Second); admit().Annotations[v1beta1.AnnotationResolvedRuntime] == ""; time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				b.Fatalf("%s: not pinned after 30 s", m.Name)
			}
		}
		b.Run(fmt.Sprintf("storage.key=%s", name), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				admit()
			}
		})
	}
}
