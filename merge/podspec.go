package merge

import (
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/berthdev/berth/api/v1beta1"
)

// mergePodLevel lays the pod-level settings of src over dst: scalars and
// pointers when set, nodeSelector per key, affinity ANDed, tolerations and
// other lists unioned or merged by name. Containers are left to the caller,
// which knows which one is the main container.
func mergePodLevel(dst *corev1.PodSpec, src *v1beta1.PodSpec) {
	dst.Volumes = mergeByKey(dst.Volumes, src.Volumes, func(v corev1.Volume) string { return v.Name })
	dst.InitContainers = mergeContainersByName(dst.InitContainers, src.InitContainers)
	dst.EphemeralContainers = mergeByKey(dst.EphemeralContainers, src.EphemeralContainers, func(c corev1.EphemeralContainer) string { return c.Name })
	if src.RestartPolicy != "" {
		dst.RestartPolicy = src.RestartPolicy
	}
	setPtr(&dst.TerminationGracePeriodSeconds, src.TerminationGracePeriodSeconds)
	setPtr(&dst.ActiveDeadlineSeconds, src.ActiveDeadlineSeconds)
	if src.DNSPolicy != "" {
		dst.DNSPolicy = src.DNSPolicy
	}
	dst.NodeSelector = MergeNodeSelector(dst.NodeSelector, src.NodeSelector)
	if src.ServiceAccountName != "" {
		dst.ServiceAccountName = src.ServiceAccountName
	}
	if src.DeprecatedServiceAccount != "" {
		dst.DeprecatedServiceAccount = src.DeprecatedServiceAccount
	}
	setPtr(&dst.AutomountServiceAccountToken, src.AutomountServiceAccountToken)
	if src.NodeName != "" {
		dst.NodeName = src.NodeName
	}
	dst.HostNetwork = dst.HostNetwork || src.HostNetwork
	dst.HostPID = dst.HostPID || src.HostPID
	dst.HostIPC = dst.HostIPC || src.HostIPC
	setPtr(&dst.ShareProcessNamespace, src.ShareProcessNamespace)
	if src.SecurityContext != nil {
		dst.SecurityContext = src.SecurityContext.DeepCopy()
	}
	dst.ImagePullSecrets = mergeByKey(dst.ImagePullSecrets, src.ImagePullSecrets, func(r corev1.LocalObjectReference) string { return r.Name })
	if src.Hostname != "" {
		dst.Hostname = src.Hostname
	}
	if src.Subdomain != "" {
		dst.Subdomain = src.Subdomain
	}
	dst.Affinity = MergeAffinity(dst.Affinity, src.Affinity)
	if src.SchedulerName != "" {
		dst.SchedulerName = src.SchedulerName
	}
	dst.Tolerations = MergeTolerations(dst.Tolerations, src.Tolerations)
	dst.HostAliases = mergeByKey(dst.HostAliases, src.HostAliases, func(h corev1.HostAlias) string { return h.IP })
	if src.PriorityClassName != "" {
		dst.PriorityClassName = src.PriorityClassName
	}
	setPtr(&dst.Priority, src.Priority)
	if src.DNSConfig != nil {
		dst.DNSConfig = src.DNSConfig.DeepCopy()
	}
	dst.ReadinessGates = mergeByKey(dst.ReadinessGates, src.ReadinessGates, func(g corev1.PodReadinessGate) string { return string(g.ConditionType) })
	setPtr(&dst.RuntimeClassName, src.RuntimeClassName)
	setPtr(&dst.EnableServiceLinks, src.EnableServiceLinks)
	setPtr(&dst.PreemptionPolicy, src.PreemptionPolicy)
	dst.Overhead = overlayResources(dst.Overhead, src.Overhead)
	dst.TopologySpreadConstraints = unionDeep(dst.TopologySpreadConstraints, src.TopologySpreadConstraints)
	setPtr(&dst.SetHostnameAsFQDN, src.SetHostnameAsFQDN)
	if src.OS != nil {
		dst.OS = src.OS.DeepCopy()
	}
	setPtr(&dst.HostUsers, src.HostUsers)
	dst.SchedulingGates = mergeByKey(dst.SchedulingGates, src.SchedulingGates, func(g corev1.PodSchedulingGate) string { return g.Name })
	dst.ResourceClaims = mergeByKey(dst.ResourceClaims, src.ResourceClaims, func(c corev1.PodResourceClaim) string { return c.Name })
	if src.Resources != nil {
		dst.Resources = src.Resources.DeepCopy()
	}
	setPtr(&dst.HostnameOverride, src.HostnameOverride)
	setPtr(&dst.WorkloadRef, src.WorkloadRef)
}

// setPtr copies *src into a fresh *dst when src is set.
func setPtr[T any](dst **T, src *T) {
	if src == nil {
		return
	}
	v := *src
	*dst = &v
}

// mergeMetadata sets over's keys on base, except the identity labels the
// reconciler owns: a runtime or service label can never move a pod to
// another group or component.
func mergeMetadata(base, over map[string]string, protected []string) map[string]string {
	for k, v := range over {
		if slices.Contains(protected, k) {
			if _, set := base[k]; set {
				continue
			}
		}
		if base == nil {
			base = make(map[string]string, len(over))
		}
		base[k] = v
	}
	return base
}

var identityLabels = []string{
	v1beta1.LabelInferenceService, v1beta1.LabelComponent, v1beta1.LabelRole,
	v1beta1.LabelGroupIndex, v1beta1.LabelWorkerIndex, LabelOMEComponent, LabelLWSWorkerIndex,
}
