package merge

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/berthdev/berth/api/v1beta1"
)

var errNoPod = errors.New("merge: no pod given")

// RevisionVersion names the revision algorithm; it is the "v" of the
// hashed envelope. Any change to what Revision hashes or how (the envelope,
// the canonical group identities, the skeleton) must bump it: a changed
// revision rolls every serving group in every cluster on upgrade, so it
// must be deliberate, and the golden test's pinned revisions say when it is
// not.
const RevisionVersion = "berth.revision/v1"

// revisionLeaderAddress is the leader address of the canonical pods: a
// fixed placeholder, as the real one differs per group.
const revisionLeaderAddress = "leader.berth-revision.invalid"

// revisionEnvelope is what Revision hashes (encoding/json: struct fields in
// order, map keys sorted).
type revisionEnvelope struct {
	V    string        `json:"v"`
	Pods []revisionPod `json:"pods"`
	// NoUpdateProfiles are the references to profiles whose updateStrategy
	// is not RollingUpdate: their name and the component's overrides count,
	// their spec does not (it reaches new pods only).
	NoUpdateProfiles []profileUse `json:"noUpdateProfiles,omitempty"`
}

// revisionPod is one canonical pod: the composed fields that reach pods.
type revisionPod struct {
	Role        string            `json:"role"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Spec        corev1.PodSpec    `json:"spec"`
}

// Revision is a stable, versioned hash of what ComposePod writes into the
// pods of in.Component, and of nothing else: for each role the component's
// groups have (Topology: "" for single-pod groups, leader and worker —
// worker only when worker.size > 0 — for multi-node ones), a canonical pod
// is composed from SkeletonPod with a fixed identity (group 0, worker 1,
// a placeholder leader address, the group size of the topology); the labels,
// annotations (ome.io/revision excluded) and spec of those pods are hashed
// in the envelope
//
//	{"v":"berth.revision/v1","pods":[{"role":..,"labels":..,"annotations":..,"spec":..}],
//	 "noUpdateProfiles":[{"name":..,"overrides":..}]}
//
// with sha256, keeping the first 20 hex digits. in.Group is ignored, so
// every pod of a component has the same revision (the pairing too:
// {{.Pairing}} renders "" in the canonical pods, so a router rendered for
// another pairing is at the same revision); object metadata, status
// and error-message text never enter. Profiles whose updateStrategy is not
// RollingUpdate are left out of the canonical pods (a change to them
// reaches new pods only); their references are hashed instead. Inputs that
// cannot be composed are an error, not a revision.
func Revision(in Input) (string, error) {
	return revision(in, buildPlan)
}

// revision is Revision with the plan builder as a parameter, so tests can
// reword what only error messages read.
func revision(in Input, build func(Input, string) (*plan, error)) (string, error) {
	in.Runtime = v1beta1.FoldedRuntime(in.Runtime) // as buildPlan and Topology read it
	in.Group = GroupIdentity{}                     // {{.Pairing}} renders "": the pairing is outside the revision
	env := revisionEnvelope{V: RevisionVersion}
	for i, g := range canonicalGroups(componentTopology(in.Service, in.Runtime, in.Component)) {
		p, err := build(in, g.Role)
		if err != nil {
			return "", err
		}
		frozen := p.freezeProfiles()
		if i == 0 {
			env.NoUpdateProfiles = frozen // the same for every role
		}
		pod := SkeletonPod(in.Service, in.Component, g)
		p.apply(pod, g)
		delete(pod.Annotations, RevisionAnnotation)
		env.Pods = append(env.Pods, revisionPod{Role: g.Role, Labels: pod.Labels, Annotations: pod.Annotations, Spec: pod.Spec})
	}
	b, err := json.Marshal(env)
	if err != nil {
		return "", fmt.Errorf("InferenceService %s: cannot encode the %s revision: %w", objectName(in.Service), in.Component, err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:10]), nil
}

// canonicalGroups are the identities Revision composes: one per role of the
// component's groups, with everything that varies per group fixed.
func canonicalGroups(t ComponentTopology) []GroupIdentity {
	if !t.MultiNode {
		return []GroupIdentity{{}}
	}
	size := t.GroupSize()
	gs := []GroupIdentity{{Role: RoleLeader, GroupSize: size, LeaderAddress: revisionLeaderAddress}}
	if t.Workers > 0 {
		gs = append(gs, GroupIdentity{Role: RoleWorker, WorkerIndex: 1, GroupSize: size, LeaderAddress: revisionLeaderAddress})
	}
	return gs
}

// freezeProfiles removes the profiles that running pods do not follow
// from p and returns them.
func (p *plan) freezeProfiles() []profileUse {
	var frozen, rolling []profileUse
	for _, u := range p.Profiles {
		if u.rolling() {
			rolling = append(rolling, u)
		} else {
			frozen = append(frozen, u)
		}
	}
	p.Profiles = rolling
	return frozen
}

// RevisionAnnotation is where the webhook stamps Revision on pods.
const RevisionAnnotation = v1beta1.AnnotationRevision
