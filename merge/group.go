package merge

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/berthdev/berth/api/v1beta1"
)

// GroupIdentity places a pod in its serving group. The reconciler writes
// GroupIndex, Role and WorkerIndex into labels (ome.io/group-index,
// ome.io/role, ome.io/worker-index) and GroupSize and LeaderAddress into the
// group env of the skeleton pod; GroupIdentityFromPod reads them back.
type GroupIdentity struct {
	GroupIndex    int
	Role          string // "" for single-pod groups, "leader" or "worker"
	WorkerIndex   int    // 0 for the leader
	GroupSize     int    // pods in the group = 1 + worker.size
	LeaderAddress string // DNS name or address of the leader pod
	// Pairing is the pod's ome.io/pairing label (Pairing), what the
	// template {{.Pairing}} renders: the reconciler stamps it on the
	// engine, decoder and router pods of a prefill/decode service. It is
	// outside every revision, as the group index is.
	Pairing string
}

// Group env names. berth's own, and the LeaderWorkerSet ones that engines
// such as SGLang and vLLM launch scripts already read.
const (
	EnvLeaderAddress    = "BERTH_LEADER_ADDRESS"
	EnvGroupSize        = "BERTH_GROUP_SIZE"
	EnvWorkerIndex      = "BERTH_WORKER_INDEX"
	EnvGroupIndex       = "BERTH_GROUP_INDEX"
	EnvLWSLeaderAddress = "LWS_LEADER_ADDRESS"
	EnvLWSGroupSize     = "LWS_GROUP_SIZE"
	EnvLWSWorkerIndex   = "LWS_WORKER_INDEX"
	// EnvPDRole is prefill on engine pods and decode on decoder pods of a
	// prefill/decode runtime.
	EnvPDRole = "BERTH_PD_ROLE"
)

// PD roles.
const (
	PDRolePrefill = "prefill"
	PDRoleDecode  = "decode"
)

// multiPod reports whether the identity is part of a group of several pods.
func (g GroupIdentity) multiPod() bool { return g.Role != "" || g.GroupSize > 1 }

// env is the group env of g, berth's names first.
func (g GroupIdentity) env() []corev1.EnvVar {
	size, worker := strconv.Itoa(g.GroupSize), strconv.Itoa(g.WorkerIndex)
	return []corev1.EnvVar{
		{Name: EnvLeaderAddress, Value: g.LeaderAddress},
		{Name: EnvGroupSize, Value: size},
		{Name: EnvWorkerIndex, Value: worker},
		{Name: EnvGroupIndex, Value: strconv.Itoa(g.GroupIndex)},
		{Name: EnvLWSLeaderAddress, Value: g.LeaderAddress},
		{Name: EnvLWSGroupSize, Value: size},
		{Name: EnvLWSWorkerIndex, Value: worker},
	}
}

// GroupIdentityFromPod reads a pod's group identity: index, role, worker
// index and pairing from its labels, size and leader address from the group env of its
// containers (BERTH_* first, LWS_* as a fallback). Missing values are
// zero; malformed ones are errors naming the label or variable.
func GroupIdentityFromPod(pod *corev1.Pod) (GroupIdentity, error) {
	var g GroupIdentity
	if pod == nil {
		return g, fmt.Errorf("merge: no pod given")
	}
	name := pod.Namespace + "/" + pod.Name
	if pod.GenerateName != "" && pod.Name == "" {
		name = pod.Namespace + "/" + pod.GenerateName + "*"
	}
	readInt := func(label string) (int, error) {
		v, ok := pod.Labels[label]
		if !ok || v == "" {
			return 0, nil
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("pod %s: label %s=%q is not a non-negative integer; the reconciler sets it, remove or fix it", name, label, v)
		}
		return n, nil
	}
	var err error
	if g.GroupIndex, err = readInt(v1beta1.LabelGroupIndex); err != nil {
		return g, err
	}
	if g.WorkerIndex, err = readInt(v1beta1.LabelWorkerIndex); err != nil {
		return g, err
	}
	g.Role = pod.Labels[v1beta1.LabelRole]
	g.Pairing = pod.Labels[v1beta1.LabelPairing]
	if g.Role != "" && g.Role != RoleLeader && g.Role != RoleWorker {
		return g, fmt.Errorf("pod %s: label %s=%q must be %s or %s", name, v1beta1.LabelRole, g.Role, RoleLeader, RoleWorker)
	}
	env := func(names ...string) (string, string, bool) {
		for _, n := range names {
			for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
				for _, c := range cs {
					for _, e := range c.Env {
						if e.Name == n && e.ValueFrom == nil {
							return e.Value, n, true
						}
					}
				}
			}
		}
		return "", "", false
	}
	if v, n, ok := env(EnvGroupSize, EnvLWSGroupSize); ok && v != "" {
		size, err := strconv.Atoi(v)
		if err != nil || size < 1 {
			return g, fmt.Errorf("pod %s: env %s=%q is not a positive integer; the reconciler sets it, remove or fix it", name, n, v)
		}
		g.GroupSize = size
	}
	if v, _, ok := env(EnvLeaderAddress, EnvLWSLeaderAddress); ok {
		g.LeaderAddress = v
	}
	return g, nil
}

// PodName is the name of a pod of a serving group:
// <isvc>-<component>-<group> for single-pod groups and
// <isvc>-<component>-<group>-<worker> for multi-pod groups (g.Role set; the
// leader is worker 0), as LeaderWorkerSet names them.
func PodName(service, component string, g GroupIdentity) string {
	name := GroupServiceName(service, component, g.GroupIndex)
	if g.Role == "" {
		return name
	}
	return name + "-" + strconv.Itoa(g.WorkerIndex)
}

// GroupServiceName is <isvc>-<component>-<group>: the headless Service of a
// multi-pod group, and the subdomain of its pods.
func GroupServiceName(service, component string, group int) string {
	return service + "-" + component + "-" + strconv.Itoa(group)
}

// LeaderAddress is the DNS name of a multi-pod group's leader as pods in the
// cluster resolve it: <leaderPodName>.<groupService>.<namespace>, the form
// LeaderWorkerSet writes into LWS_LEADER_ADDRESS.
func LeaderAddress(service, namespace, component string, group int) string {
	leader := PodName(service, component, GroupIdentity{GroupIndex: group, Role: RoleLeader})
	return leader + "." + GroupServiceName(service, component, group) + "." + namespace
}

// Labels OME's own runtimes select pods on, which berth's pods carry next
// to its identity labels so that those runtimes' routers, applied
// unchanged, find their workers: OME labels every pod component=<engine|
// decoder|router>, and its multi-node PD runtimes select group leaders by
// the LeaderWorkerSet label worker-index=0. They are set by the reconciler
// (OMECompatLabels), outside SkeletonPod and so outside every revision:
// adding them rolls no running group. Like the identity labels, a runtime
// or service label cannot override them.
const (
	LabelOMEComponent   = "component"
	LabelLWSWorkerIndex = "leaderworkerset.sigs.k8s.io/worker-index"
)

// OMECompatLabels are the labels OME's runtimes select on for a pod of
// component with identity g: component, and for multi-pod groups the
// LeaderWorkerSet worker index (the leader is 0). Only the worker index
// label of LeaderWorkerSet is set, never its set name, so LeaderWorkerSet's
// own webhook and controller ignore the pods.
func OMECompatLabels(component string, g GroupIdentity) map[string]string {
	l := map[string]string{LabelOMEComponent: component}
	if g.Role != "" {
		l[LabelLWSWorkerIndex] = strconv.Itoa(g.WorkerIndex)
	}
	return l
}

// SkeletonPod is the pod the reconciler creates for one member of a serving
// group, before the pod webhook completes it with ComposePod: its name
// (PodName) in the service's namespace; the identity labels
// (ome.io/inferenceservice, ome.io/component, ome.io/group-index, and for
// multi-pod groups ome.io/role and ome.io/worker-index); a controller owner
// reference to the service when it has a UID; for multi-pod groups hostname
// and subdomain (GroupServiceName) so the leader address resolves; and one
// placeholder container named DefaultRunnerName without an image, carrying
// the group env of multi-pod groups (BERTH_GROUP_SIZE, BERTH_LEADER_ADDRESS
// and the rest). GroupIdentityFromPod reads g back; a single-pod group's
// GroupSize and LeaderAddress are not written and read back as zero.
// svc must not be nil.
func SkeletonPod(svc *v1beta1.InferenceService, component string, g GroupIdentity) *corev1.Pod {
	name := PodName(svc.Name, component, g)
	labels := map[string]string{
		v1beta1.LabelInferenceService: svc.Name,
		v1beta1.LabelComponent:        component,
		v1beta1.LabelGroupIndex:       strconv.Itoa(g.GroupIndex),
	}
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: svc.Namespace, Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: DefaultRunnerName}}},
	}
	if svc.UID != "" {
		yes := true
		pod.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: v1beta1.SchemeGroupVersion.String(), Kind: "InferenceService",
			Name: svc.Name, UID: svc.UID, Controller: &yes, BlockOwnerDeletion: &yes,
		}}
	}
	if g.Role != "" {
		labels[v1beta1.LabelRole] = g.Role
		labels[v1beta1.LabelWorkerIndex] = strconv.Itoa(g.WorkerIndex)
		pod.Spec.Hostname = name
		pod.Spec.Subdomain = GroupServiceName(svc.Name, component, g.GroupIndex)
	}
	if g.multiPod() {
		pod.Spec.Containers[0].Env = g.env()
	}
	return pod
}

// applyGroupEnv sets the group and PD env on every container of a pod.
func applyGroupEnv(spec *corev1.PodSpec, g GroupIdentity, pdRole string) {
	var vars []corev1.EnvVar
	if g.multiPod() {
		vars = g.env()
	}
	if pdRole != "" {
		vars = append(vars, corev1.EnvVar{Name: EnvPDRole, Value: pdRole})
	}
	if len(vars) == 0 {
		return
	}
	for i := range spec.InitContainers {
		setEnvFirst(&spec.InitContainers[i], vars)
	}
	for i := range spec.Containers {
		setEnvFirst(&spec.Containers[i], vars)
	}
}
