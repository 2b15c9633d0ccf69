// Package policy evaluates ServingPolicies (api/policy/v1alpha1) on what
// berth resolved at admission: the runtime, the AcceleratorClass, the
// composed pods and what they cost. It is pure: no client-go, no network.
// The webhook compiles the policies it watches into a Set, checks every
// InferenceService, runtime and berth pod against it, and hands selection
// a Gate so that a forbidden runtime or class loses instead of being
// chosen and denied. The reconciler uses the same Set for status.
//
// # Glossary
//
//   - Set: the policies in force, compiled once (Compile): selectors parsed,
//     image prefixes normalised. Immutable and safe for concurrent use; a
//     nil *Set has no policies. A policy whose selector does not parse
//     applies nowhere and is listed by Set.Problems (validation refuses it
//     at admission).
//   - Subject: who a check is about: a namespace with its labels, and the
//     service's labels when the check is about one service (nil
//     otherwise). An empty Namespace is the cluster as a whole (a
//     ClusterServingRuntime): only policies without a namespaceSelector
//     apply to it.
//   - Applies: a policy applies to a subject when its namespace is not
//     exempt, its namespaceSelector (unset or empty: every namespace)
//     matches the namespace's labels, and its serviceSelector is unset or
//     empty, or matches the service's labels. A policy with a
//     serviceSelector never applies to a check that is not about one
//     service (a runtime's or a pod's images). Exempt: kube-system always,
//     and Options.ExemptNamespaces (berth's own namespace), so a policy
//     cannot lock admins out. For lists the applicable policies.
//   - Violation: one broken rule of one policy, with the policy's actions,
//     the rule (a Rule* constant), the field when known and the whole
//     message, "ServingPolicy/<name>: ...".
//   - Outcome (Enforce): violations split by action as in Kubernetes'
//     ValidatingAdmissionPolicyBinding: Deny messages refuse the request,
//     Warn messages become admission warnings, Audit violations become
//     audit annotations (one per policy, messages joined by "; "), keyed
//     by AuditKey: the policy's name, or for a name longer than an
//     annotation key may be (63 characters once the apiserver prefixes the
//     webhook's name), its first 52 characters and a hash of the whole.
//   - Gate: the policy as selection sees it while choosing
//     (selection.Gate), judging every rule that can tell candidates apart
//     (# In selection). Only policies with Deny take part: Warn and Audit
//     never change what is chosen.
//   - Accelerators: what a service requests at its most: per composed role,
//     MaxGroups (maxReplicas, else replicas) × pods per group × the pod's
//     request (requests, limits when none; the larger of the containers'
//     sum and the largest init container), by resource name.
//
// # Rules
//
//   - acceleratorClasses, runtimes (ObjectRule): allowed when both allow
//     lists are empty or one matches, and no deny list matches. A name
//     ending in "*" is a prefix. Runtimes match by name, whichever their
//     kind, and by labels. Reasons: "not in nvidia-a100-*", "denied by
//     nvidia-h100-*", "denied by labels tier=premium". Message:
//     "ServingPolicy/team-a: AcceleratorClass nvidia-h100-80gb is not
//     allowed in namespace team-a: not in nvidia-a100-*".
//   - images: every container and init container of every composed role,
//     normalised as the container runtime reads it (imageref.Normalize:
//     lmsysorg/sglang is docker.io/lmsysorg/sglang, nginx is
//     docker.io/library/nginx; tag and digest are not compared), must start
//     with an allowed prefix on a path boundary (ghcr.io/org allows
//     ghcr.io/org/x, not ghcr.io/organisation/x). A prefix without a
//     registry is a Docker Hub path (imageref.NormalizePrefix). The message names
//     the field that sets the image: the service's
//     ("spec.engine.runner.image", also Violation.Field) when it sets that
//     image, else the runtime's ("ClusterServingRuntime/srt
//     spec.engineConfig.runner.image"; Violation.Field is nil, the field
//     is not the service's) when Service.RuntimeSpec is given, else the
//     composed pod's container ("engine leader pod, container init"):
//     "ServingPolicy/registries: spec.engine.runner.image: image
//     docker.io/evil/x:1 is not from an allowed registry (allowed:
//     registry.example.com, ghcr.io/berthdev)". A reference that does not
//     parse "is not a valid reference".
//   - maxAcceleratorsPerService: Accelerators summed over resources:
//     "InferenceService team-a/big would use 24 nvidia.com/gpu, above the
//     maximum of 16 per service".
//   - maxAcceleratorsPerNamespace: per resource name, the other services'
//     (Service.NamespaceInUse) plus this one's: "namespace team-a would use
//     24 nvidia.com/gpu, above its budget of 16 (16 of 16 nvidia.com/gpu in
//     use)".
//   - maxCostPerHour: per component, its accelerators × its class's
//     cost.perHour (the decoder uses the engine's class unless it has its
//     own; a class without perHour costs 0): "InferenceService team-a/big
//     would cost 32/hour (8 × nvidia-h100-80gb at 4/hour), above the
//     maximum of 20/hour".
//   - requiredLabels: "metadata.labels[team]" must be set and non-empty:
//     "label team is required on every InferenceService in namespace
//     team-a, with a non-empty value".
//   - allowCommand false: any command the service sets (ServiceCommands):
//     "spec.engine.runner.command: setting a container command is not
//     allowed in namespace team-a".
//
// Violations are sorted by policy, rule and message; a message repeated by
// several roles (one image in the leader and worker pods) is kept once.
//
// # In selection
//
// A Gate judges every rule that can tell candidates apart. It forbids a
// runtime by the runtimes rule, then by the images rule: an image of the
// service's pods composed with that runtime and no class
// (merge.ComposeService; profiles are not read), other than those the
// service sets itself, that no allowed prefix covers ("forbidden by
// ServingPolicy/registries: image docker.io/evil/x:1 is not from an
// allowed registry (allowed: registry.example.com)"). It forbids a class
// by the acceleratorClasses rule, then by the images rule when an
// acceleratorConfigurations entry (the runtime's or the service's) for
// that class sets a runner image (the pods are then composed with the
// class), then when the engine's use of it (selection's ClassUse:
// accelerators per pod × pods per group × groups at max replicas) would
// break maxAcceleratorsPerService, the namespace budget or maxCostPerHour.
// Only Deny policies take part. Rules are checked in that order; the
// first policy by name that forbids the candidate by the first rule that
// does is named. An image the service sets itself (spec.engine.runner
// .image) forbids no candidate, since every candidate would carry it:
// CheckService denies it, naming the service's field. A gate composes
// each candidate runtime at most once per decision, and only when an
// applicable Deny policy has an images rule. Selection's
// losing line is "AcceleratorClass/nvidia-h100-80gb: forbidden by
// ServingPolicy/team-a: not in nvidia-a100-*". The gate counts only the
// engine; CheckService on the composed pods counts every component. Each
// policy's verdict on a class object is cached in the Set (selection asks
// about every candidate class on every decision).
//
// # Cost
//
// Compile does the parsing; For caches, per namespace, which policies its
// labels select (until the labels change; at most 4096 namespaces, then
// the cache starts over), so a check costs one label match per
// service-selecting policy and the rules themselves; the namespace's gate
// policies (Deny, with a rule the gate decides on) are sorted out once per
// cached namespace, and a service gets a gate of its own only when a gate
// policy with a serviceSelector selects it. CheckService counts a
// service's accelerators (without maps), cost and image references once,
// whatever the number of policies, and reads images only when an
// applicable policy has an images rule; messages and cost breakdowns are
// built only for a violation. Image references are read through a
// process-wide cache of imageref.Normalize's readings (pure, so never
// stale; at most 4096 references, then it starts over). bench_test.go measures it: BenchmarkAdmission
// (selection, composition and CheckService with 0 and 100 policies),
// BenchmarkCheckService, BenchmarkSelectWithGate, BenchmarkFor and
// BenchmarkCompile, each with cpu-ns/op.
package policy
