package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
)

// RunnerSpec is a container whose every field, the name included, is optional:
// runtimes and InferenceServices describe the main container of a component
// without naming it, and berth fills the gaps when it composes the pod.
//
// Its fields are exactly those of corev1.Container, in the same order and of
// the same types, so corev1.Container(runner) is a plain conversion. If a
// k8s.io/api upgrade adds a field, that conversion stops compiling, which is
// the reminder to mirror it here.
type RunnerSpec struct {
	// Name of the container; defaults to the component's main container name.
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Image string `json:"image,omitempty"`
	// Command replaces the image entrypoint. When an InferenceService sets it,
	// args from acceleratorConfigurations are not applied (the user owns the
	// command line).
	// +optional
	// +listType=atomic
	Command []string `json:"command,omitempty"`
	// Args are merged by flag: runtime < accelerator configuration < user.
	// +optional
	// +listType=atomic
	Args []string `json:"args,omitempty"`
	// +optional
	WorkingDir string `json:"workingDir,omitempty"`
	// +optional
	// +listType=atomic
	Ports []corev1.ContainerPort `json:"ports,omitempty"`
	// +optional
	// +listType=atomic
	EnvFrom []corev1.EnvFromSource `json:"envFrom,omitempty"`
	// Env is merged by name: runtime < accelerator configuration < user.
	// +optional
	// +listType=atomic
	Env []corev1.EnvVar `json:"env,omitempty"`
	// +optional
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	// +listType=atomic
	ResizePolicy []corev1.ContainerResizePolicy `json:"resizePolicy,omitempty"`
	// +optional
	RestartPolicy *corev1.ContainerRestartPolicy `json:"restartPolicy,omitempty"`
	// +optional
	// +listType=atomic
	RestartPolicyRules []corev1.ContainerRestartRule `json:"restartPolicyRules,omitempty"`
	// +optional
	// +listType=atomic
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`
	// +optional
	// +listType=atomic
	VolumeDevices []corev1.VolumeDevice `json:"volumeDevices,omitempty"`
	// +optional
	LivenessProbe *corev1.Probe `json:"livenessProbe,omitempty"`
	// +optional
	ReadinessProbe *corev1.Probe `json:"readinessProbe,omitempty"`
	// +optional
	StartupProbe *corev1.Probe `json:"startupProbe,omitempty"`
	// +optional
	Lifecycle *corev1.Lifecycle `json:"lifecycle,omitempty"`
	// +optional
	TerminationMessagePath string `json:"terminationMessagePath,omitempty"`
	// +optional
	TerminationMessagePolicy corev1.TerminationMessagePolicy `json:"terminationMessagePolicy,omitempty"`
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
	// +optional
	Stdin bool `json:"stdin,omitempty"`
	// +optional
	StdinOnce bool `json:"stdinOnce,omitempty"`
	// +optional
	TTY bool `json:"tty,omitempty"`
}

// Container returns the runner as a core container.
func (r *RunnerSpec) Container() corev1.Container { return corev1.Container(*r) }

// PodSpec is corev1.PodSpec with every field optional (containers included),
// so that a component can set only what it changes. corev1.PodSpec(p) is a
// plain conversion; see RunnerSpec for why the mirror is exact.
type PodSpec struct {
	// +optional
	// +listType=atomic
	Volumes []corev1.Volume `json:"volumes,omitempty"`
	// +optional
	// +listType=atomic
	InitContainers []corev1.Container `json:"initContainers,omitempty"`
	// Containers besides the runner (sidecars). Matched by name when merged.
	// +optional
	// +listType=atomic
	Containers []corev1.Container `json:"containers,omitempty"`
	// +optional
	// +listType=atomic
	EphemeralContainers []corev1.EphemeralContainer `json:"ephemeralContainers,omitempty"`
	// +optional
	RestartPolicy corev1.RestartPolicy `json:"restartPolicy,omitempty"`
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`
	// +optional
	DNSPolicy corev1.DNSPolicy `json:"dnsPolicy,omitempty"`
	// NodeSelector is merged key by key: AcceleratorClass < runtime < InferenceService component.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// +optional
	DeprecatedServiceAccount string `json:"serviceAccount,omitempty"`
	// +optional
	AutomountServiceAccountToken *bool `json:"automountServiceAccountToken,omitempty"`
	// +optional
	NodeName string `json:"nodeName,omitempty"`
	// +optional
	HostNetwork bool `json:"hostNetwork,omitempty"`
	// +optional
	HostPID bool `json:"hostPID,omitempty"`
	// +optional
	HostIPC bool `json:"hostIPC,omitempty"`
	// +optional
	ShareProcessNamespace *bool `json:"shareProcessNamespace,omitempty"`
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`
	// +optional
	// +listType=atomic
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// +optional
	Hostname string `json:"hostname,omitempty"`
	// +optional
	Subdomain string `json:"subdomain,omitempty"`
	// Affinity terms from every layer are ANDed, never replaced.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`
	// Tolerations from every layer are unioned.
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// +optional
	// +listType=atomic
	HostAliases []corev1.HostAlias `json:"hostAliases,omitempty"`
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// +optional
	Priority *int32 `json:"priority,omitempty"`
	// +optional
	DNSConfig *corev1.PodDNSConfig `json:"dnsConfig,omitempty"`
	// +optional
	// +listType=atomic
	ReadinessGates []corev1.PodReadinessGate `json:"readinessGates,omitempty"`
	// +optional
	RuntimeClassName *string `json:"runtimeClassName,omitempty"`
	// +optional
	EnableServiceLinks *bool `json:"enableServiceLinks,omitempty"`
	// +optional
	PreemptionPolicy *corev1.PreemptionPolicy `json:"preemptionPolicy,omitempty"`
	// +optional
	Overhead corev1.ResourceList `json:"overhead,omitempty"`
	// +optional
	// +listType=atomic
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// +optional
	SetHostnameAsFQDN *bool `json:"setHostnameAsFQDN,omitempty"`
	// +optional
	OS *corev1.PodOS `json:"os,omitempty"`
	// +optional
	HostUsers *bool `json:"hostUsers,omitempty"`
	// +optional
	// +listType=atomic
	SchedulingGates []corev1.PodSchedulingGate `json:"schedulingGates,omitempty"`
	// +optional
	// +listType=atomic
	ResourceClaims []corev1.PodResourceClaim `json:"resourceClaims,omitempty"`
	// Pod-level resources (Kubernetes PodLevelResources).
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
	// +optional
	HostnameOverride *string `json:"hostnameOverride,omitempty"`
	// +optional
	WorkloadRef *corev1.WorkloadReference `json:"workloadRef,omitempty"`
}

// CorePodSpec returns the spec as a core pod spec.
func (p *PodSpec) CorePodSpec() corev1.PodSpec { return corev1.PodSpec(*p) }
