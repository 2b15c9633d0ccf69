package handlers

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

func hasEnv(env []corev1.EnvVar, name string) bool {
	for _, e := range env {
		if e.Name == name {
			return true
		}
	}
	return false
}

func envVar(name, value string) corev1.EnvVar { return corev1.EnvVar{Name: name, Value: value} }

func isZeroRunner(r *v1beta1.RunnerSpec) bool { return reflect.DeepEqual(*r, v1beta1.RunnerSpec{}) }

// everything selects every object of a lister.
var everything = labels.Everything()
