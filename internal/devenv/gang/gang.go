// Package gang is what the local control plane (internal/devenv) offers for
// gang scheduling: the name of its second scheduler, the
// scheduler-plugins scheduler with the Coscheduling plugin, and the
// PodGroup CRDs of the two gang schedulers berth knows — scheduler-plugins'
// Coscheduling (scheduling.x-k8s.io/v1alpha1) and Volcano
// (scheduling.volcano.sh/v1beta1) — compiled in from crds/.
//
// devenv.Up installs every CRD of crds/ into each local cluster, after
// berth's own, and then (on the local control plane, not on an attached kind
// cluster) starts the scheduler-plugins scheduler and its PodGroup
// controller (cluster.Cluster.StartGangScheduler). Only Coscheduling
// schedules here: Volcano's CRD is installed so that PodGroups of that kind
// can be created and read, but no Volcano scheduler runs.
//
// crds/ is generated (`make generate-gang-crds`, part of `make generate`,
// checked by `make verify`): never edit it by hand.
package gang

import (
	"embed"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/berthdev/berth/internal/devenv/install"
)

// SchedulerName is the schedulerName of the local control plane's second
// scheduler: a pod whose spec.schedulerName is this is placed by the
// scheduler-plugins scheduler, with the Coscheduling plugin, instead of
// kube-scheduler. It is the name scheduler-plugins' own "as a second
// scheduler" install uses (manifests/install/charts/as-a-second-scheduler).
const SchedulerName = "scheduler-plugins-scheduler"

// PodGroupLabel is the label that makes a pod a member of the Coscheduling
// PodGroup it names (in the pod's namespace): scheduling.x-k8s.io/pod-group.
const PodGroupLabel = "scheduling.x-k8s.io/pod-group"

// PermitWaitingTimeSeconds is the Coscheduling argument of the second
// scheduler: how long the members that fit wait, reserved but not bound, in
// the Permit phase for the rest of their PodGroup (minMember) to fit too.
// When it passes, the waiting members are rejected, give their room back
// and are retried later, for example when a node is added.
const PermitWaitingTimeSeconds = 10

// The PodGroup resources of the two gang schedulers.
var (
	// CoschedulingPodGroupGVR: scheduler-plugins' PodGroup (spec.minMember,
	// members labelled PodGroupLabel), scheduled by SchedulerName here.
	CoschedulingPodGroupGVR = schema.GroupVersionResource{Group: "scheduling.x-k8s.io", Version: "v1alpha1", Resource: "podgroups"}
	// VolcanoPodGroupGVR: Volcano's PodGroup. Its CRD is installed; no
	// Volcano scheduler runs in the local control plane.
	VolcanoPodGroupGVR = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}
)

//go:embed crds/*.yaml
var crds embed.FS

// CRDs returns the CustomResourceDefinitions of crds/, sorted by file name:
// Volcano's PodGroup, and scheduler-plugins' ElasticQuota (its PodGroup
// controller watches both kinds and stops without either) and PodGroup.
func CRDs() ([]install.Object, error) {
	return install.ReadObjectsFS(crds, "crds", "internal/devenv/gang")
}
