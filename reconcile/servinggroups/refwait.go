package servinggroups

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/pin"
)

// ReasonModelNotFound and ReasonRuntimeNotFound (Resolved=False): the
// service is not pinned because spec.model.name, resp. spec.runtime.name,
// names an object that does not exist (yet): `kubectl apply -f dir/`
// creates files in name order. The webhook admitted it unpinned; the
// reconciler nudges it once the object exists, and the webhook decides.
// The values are selection's denial codes for the same lookups.
const (
	ReasonModelNotFound   = "ModelNotFound"
	ReasonRuntimeNotFound = "RuntimeNotFound"
)

// waitingReason says whether Resolved=False with this reason is a wait
// (expected, not Degraded) rather than a fault.
func waitingReason(reason string) bool {
	return reason == ReasonModelMetadataPending || reason == ReasonModelNotFound || reason == ReasonRuntimeNotFound
}

// refs is what an unpinned service names, as the cache has it.
type refs struct {
	model        *model // the model spec.model.name names; nil when missing or not named
	modelMissing string // when named and missing: `no ClusterBaseModel "x"`, ...
	// runtime identifies the runtime spec.runtime.name names,
	// <Kind>/<name>@<uid> (the value of the nudge annotation); "" when
	// missing or not named.
	runtime        string
	runtimeMissing string // when named and missing: `no ClusterServingRuntime "x"`, ...
}

// nudges are the annotations a nudge patches (pin.Nudge), and what they
// say happened.
type nudges struct {
	set   pin.Nudge
	why   []string // "the metadata of ClusterBaseModel llama is known", "ClusterServingRuntime/rt exists"
	model *model   // set when the model's revision is nudged
}

// serviceWait decides, for a service the webhook has not pinned, whether it
// waits and why, or which nudge annotations to patch (pure):
//
//  1. pinned: nothing;
//  2. a named model or runtime is missing: it waits, Resolved=False reason
//     ModelNotFound (the model is missing, whether or not the runtime is
//     too) or RuntimeNotFound; no nudge, the webhook would wait again;
//  3. its model awaits metadata: modelWait's ModelMetadataPending;
//  4. otherwise nudge each annotation that differs:
//     ome.io/model-metadata-revision (modelWait) and
//     ome.io/runtime-revision, the named runtime's <Kind>/<name>@<uid>.
//     A recreated runtime has a new uid, so it nudges again. Once both
//     equal, the webhook had its chance: the service is NotPinned.
func serviceWait(isvc *v1beta1.InferenceService, r refs) (*nudges, *unresolved) {
	if pin.Pinned(isvc) {
		return nil, nil
	}
	if u := missingWait(isvc, r); u != nil {
		return nil, u
	}
	rev, wait := modelWait(isvc, r.model)
	if wait != nil {
		return nil, wait
	}
	n := &nudges{}
	if rev != "" {
		n.set.ModelRevision = rev
		n.why = append(n.why, "the metadata of "+r.model.ref()+" is known (revision "+rev+")")
		n.model = r.model
	}
	if r.runtime != "" && pin.NudgeBase(pin.ReadNudge(isvc).RuntimeRevision) != r.runtime {
		n.set.RuntimeRevision = r.runtime
		ref, _, _ := strings.Cut(r.runtime, "@")
		n.why = append(n.why, ref+" exists")
	}
	if n.set.IsZero() {
		return nil, nil
	}
	return n, nil
}

// missingWait is the wait for named references that do not exist; nil
// when none is missing.
func missingWait(isvc *v1beta1.InferenceService, r refs) *unresolved {
	var parts, fields []string
	reason := ReasonRuntimeNotFound
	if r.modelMissing != "" {
		parts, fields, reason = append(parts, "spec.model.name: "+r.modelMissing), append(fields, "spec.model.name"), ReasonModelNotFound
	}
	if r.runtimeMissing != "" {
		parts, fields = append(parts, "spec.runtime.name: "+r.runtimeMissing), append(fields, "spec.runtime.name")
	}
	svc := "InferenceService " + isvc.Namespace + "/" + isvc.Name
	switch len(parts) {
	case 0:
		return nil
	case 1:
		return &unresolved{reason, svc + " waits: " + parts[0] + "; the webhook pins a runtime once it is created; if the name is a typo, fix " + fields[0]}
	}
	return &unresolved{reason, svc + " waits: " + strings.Join(parts, "; ") +
		"; the webhook pins a runtime once both are created; if a name is a typo, fix spec.model.name or spec.runtime.name"}
}

// serviceRefs looks up what the service names, as selection does.
func (c *Controller) serviceRefs(isvc *v1beta1.InferenceService) (refs, error) {
	var r refs
	m, err := c.serviceModel(isvc)
	if err != nil {
		return r, err
	}
	r.model = m
	if ref := isvc.Spec.Model; m == nil && ref != nil && ref.Name != "" {
		r.modelMissing = missingModelWords(isvc.Namespace, ref)
	}
	if ref := isvc.Spec.Runtime; ref != nil && ref.Name != "" {
		r.runtime, r.runtimeMissing, err = c.namedRuntime(isvc.Namespace, ref)
	}
	return r, err
}

// missingModelWords says what does not exist, in selection's words; ""
// for an unknown kind (the webhook denies it).
func missingModelWords(ns string, ref *v1beta1.ModelRef) string {
	q := `"` + ref.Name + `"`
	switch kindOf(ref.Kind) {
	case KindBaseModel:
		return "no BaseModel " + q + " in namespace " + ns
	case KindClusterBaseModel:
		return "no ClusterBaseModel " + q
	case "":
		return "no BaseModel " + q + " in namespace " + ns + " and no ClusterBaseModel " + q
	}
	return ""
}

// namedRuntime finds the runtime spec.runtime names: a ServingRuntime in
// the namespace, else a ClusterServingRuntime (spec.runtime.kind
// restricts it). id is <Kind>/<name>@<uid>; missing says what does not
// exist. Both are "" for an unknown kind.
func (c *Controller) namedRuntime(ns string, ref *v1beta1.ServingRuntimeRef) (id, missing string, err error) {
	q := `"` + ref.Name + `"`
	kind := kindOf(ref.Kind)
	if kind == "ServingRuntime" || kind == "" {
		sr, err := c.runtimes.ServingRuntimes(ns).Get(ref.Name)
		switch {
		case err == nil:
			return "ServingRuntime/" + ref.Name + "@" + string(sr.UID), "", nil
		case !apierrors.IsNotFound(err):
			return "", "", err
		case kind != "":
			return "", "no ServingRuntime " + q + " in namespace " + ns, nil
		}
	}
	if kind != "ClusterServingRuntime" && kind != "" {
		return "", "", nil
	}
	csr, err := c.clusterRuntimes.Get(ref.Name)
	switch {
	case err == nil:
		return "ClusterServingRuntime/" + ref.Name + "@" + string(csr.UID), "", nil
	case !apierrors.IsNotFound(err):
		return "", "", err
	case kind != "":
		return "", "no ClusterServingRuntime " + q, nil
	}
	return "", "no ServingRuntime " + q + " in namespace " + ns + " and no ClusterServingRuntime " + q, nil
}

func kindOf(k *string) string {
	if k == nil {
		return ""
	}
	return *k
}

// waitForReferences applies serviceWait, then renudge, to an unpinned
// service: it returns why the service waits, or nudges it (nudged: the
// service's own update event syncs it again, by then pinned if the webhook
// could decide), or when to look again (requeue).
func (c *Controller) waitForReferences(ctx context.Context, isvc *v1beta1.InferenceService) (wait *unresolved, nudged bool, requeue time.Duration, err error) {
	if pin.Pinned(isvc) {
		c.nudged(isvc, time.Time{})
		return nil, false, 0, nil
	}
	r, err := c.serviceRefs(isvc)
	if err != nil {
		return nil, false, 0, err
	}
	n, wait := serviceWait(isvc, r)
	if n == nil && wait == nil {
		n, requeue = renudge(isvc, r, c.sinceNudge(isvc))
	}
	if n == nil {
		return wait, false, requeue, nil
	}
	wait, nudged, err = c.nudge(ctx, isvc, n)
	if nudged {
		c.nudged(isvc, c.now())
	}
	return wait, nudged, 0, err
}

// Re-nudging: the webhook decides on the nudge's UPDATE from its own cache,
// which may not have the model's status or the new runtime yet (it waits
// for it briefly). Then it admits the update unpinned, and the annotations
// already equal what serviceWait would write. renudge asks again, with the
// attempt counted in the value ("<value>#<n>", pin.Nudge.Retry; the
// webhook ignores values), after renudgeDelay·2^(n-1), at most maxNudges
// times in all.
const (
	maxNudges    = 3
	renudgeDelay = 2 * time.Second
)

// renudge decides (pure) whether an unpinned service that serviceWait
// leaves alone is nudged again: only when it carries nudge annotations for
// what it names, fewer than maxNudges attempts were made and the delay
// since the last one (since; large when unknown) has passed. Otherwise it
// says when to look again (0: never).
func renudge(isvc *v1beta1.InferenceService, r refs, since time.Duration) (*nudges, time.Duration) {
	if pin.Pinned(isvc) {
		return nil, 0
	}
	carried, last := pin.ReadNudge(isvc), pin.Nudge{}
	if r.model != nil {
		last.ModelRevision = carried.ModelRevision
	}
	if r.runtime != "" {
		last.RuntimeRevision = carried.RuntimeRevision
	}
	attempt := last.Attempt()
	if last.IsZero() || attempt >= maxNudges {
		return nil, 0
	}
	if delay := renudgeDelay << (attempt - 1); since < delay {
		return nil, delay - since
	}
	n := &nudges{set: last.Retry(attempt + 1), why: []string{fmt.Sprintf(
		"the webhook left the service unpinned after the last nudge (its cache may have lagged); asking again, attempt %d of %d", attempt+1, maxNudges)}}
	if last.ModelRevision != "" {
		n.model = r.model
	}
	return n, 0
}

// nudged records when this process last nudged the service (zero: forget).
func (c *Controller) nudged(isvc *v1beta1.InferenceService, at time.Time) {
	key := isvc.Namespace + "/" + isvc.Name
	c.mu.Lock()
	defer c.mu.Unlock()
	if at.IsZero() {
		delete(c.nudgedAt, key)
		return
	}
	c.nudgedAt[key] = at
}

// sinceNudge is the time since this process last nudged the service; an
// hour when it never did (a restart forgets: the attempt count still
// bounds the nudges).
func (c *Controller) sinceNudge(isvc *v1beta1.InferenceService) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.nudgedAt[isvc.Namespace+"/"+isvc.Name]
	if !ok {
		return time.Hour
	}
	return c.now().Sub(at)
}
