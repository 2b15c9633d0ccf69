package merge

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestCheckPod(t *testing.T) {
	ok := corev1.Container{Name: "ome-container", Image: "vllm:1", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		Env: []corev1.EnvVar{{Name: "MODEL_PATH", Value: "/mnt/models"}, {Name: "my.relaxed-name", Value: "1"}}}
	c0 := field.NewPath("spec", "containers").Index(0)
	tests := []struct {
		name   string
		mutate func(p *corev1.Pod)
		want   field.ErrorList
	}{
		{name: "valid", mutate: func(*corev1.Pod) {}},
		{name: "no image", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Image = "" },
			want: field.ErrorList{field.Required(c0.Child("image"), `container "ome-container" has no image`)}},
		{name: "no name", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Name = "" },
			want: field.ErrorList{field.Required(c0.Child("name"), "every container needs a name")}},
		{name: "name not a DNS label", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Name = "Ome_Container" },
			want: field.ErrorList{field.Invalid(c0.Child("name"), "Ome_Container", "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')")}},
		{name: "init container with the main container's name", mutate: func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "ome-container", Image: "dl:1"}}
		}, want: field.ErrorList{field.Duplicate(c0.Child("name"), "ome-container")}},
		{name: "port out of range", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 0 },
			want: field.ErrorList{field.Invalid(c0.Child("ports").Index(0).Child("containerPort"), int32(0), "must be between 1 and 65535, inclusive")}},
		{name: "host port out of range", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].HostPort = 70000 },
			want: field.ErrorList{field.Invalid(c0.Child("ports").Index(0).Child("hostPort"), int32(70000), "must be between 1 and 65535, inclusive")}},
		{name: "port name too long", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].Name = "metrics-endpoint" },
			want: field.ErrorList{field.Invalid(c0.Child("ports").Index(0).Child("name"), "metrics-endpoint", "must be no more than 15 characters")}},
		{name: "port name twice", mutate: func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, corev1.ContainerPort{Name: "http", ContainerPort: 9090})
		}, want: field.ErrorList{field.Duplicate(c0.Child("ports").Index(1).Child("name"), "http")}},
		{name: "protocol", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].Protocol = "HTTP" },
			want: field.ErrorList{field.NotSupported(c0.Child("ports").Index(0).Child("protocol"), corev1.Protocol("HTTP"), []string{"TCP", "UDP", "SCTP"})}},
		{name: "env name with =", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Env[1].Name = "A=B" },
			want: field.ErrorList{field.Invalid(c0.Child("env").Index(1).Child("name"), "A=B", "a valid environment variable name must consist only of printable ASCII characters other than '='")}},
		{name: "empty env name", mutate: func(p *corev1.Pod) { p.Spec.Containers[0].Env[0].Name = "" },
			want: field.ErrorList{field.Required(c0.Child("env").Index(0).Child("name"), "every environment variable needs a name")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{*ok.DeepCopy()}}}
			tc.mutate(p)
			assert.Equal(t, tc.want, CheckPod(p))
		})
	}
	assert.Nil(t, CheckPod(nil))
}
