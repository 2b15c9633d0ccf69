package gpudiscovery

import (
	"maps"
	"slices"
	"sort"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
)

// ExistingClass is a class as Plan sees it: the object and the nodes
// (among those discovery counts) it matches, sorted.
type ExistingClass struct {
	Class *v1beta1.AcceleratorClass
	Nodes []string
}

// ActionKind is what Plan asks the caller to write.
type ActionKind string

// Action kinds.
const (
	// Create the class Name with Spec, labelled ome.io/auto-discovered.
	Create ActionKind = "Create"
	// Update the auto-discovered class Name's spec to Spec.
	Update ActionKind = "Update"
	// SetStale sets the Stale condition of the class Name to Stale,
	// with Reason and Message.
	SetStale ActionKind = "SetStale"
	// NameTaken: an admin class holds the proposal's name; nothing is
	// written (the caller says so once).
	NameTaken ActionKind = "NameTaken"
)

// Reasons of the Stale condition.
const (
	ReasonNoNodes    = "NoNodes"
	ReasonSuperseded = "Superseded"
	ReasonHasNodes   = "NodesPresent"
)

// Action is one write.
type Action struct {
	Kind ActionKind
	Name string
	// Spec for Create and Update.
	Spec *v1beta1.AcceleratorClassSpec
	// Stale, Reason and Message for SetStale.
	Stale           bool
	Reason, Message string
}

// Plan is every write that brings the classes to the proposals (see the
// package doc), sorted by name; nothing when they agree.
func Plan(props []Proposal, existing []ExistingClass) []Action {
	byName := map[string]*ExistingClass{}
	var admin []*ExistingClass
	for i := range existing {
		e := &existing[i]
		byName[e.Class.Name] = e
		if !IsAutoDiscovered(e.Class) {
			admin = append(admin, e)
		}
	}
	var out []Action
	proposed := map[string]bool{}
	for i := range props {
		p := &props[i]
		proposed[p.Name] = true
		cur := byName[p.Name]
		if by := supersededBy(p, admin); by != "" {
			if cur != nil && IsAutoDiscovered(cur.Class) {
				out = appendStale(out, cur.Class, true, ReasonSuperseded, "AcceleratorClass "+by+" covers the nodes of "+p.ProductLabel+"="+p.Product)
			}
			continue
		}
		switch {
		case cur == nil:
			out = append(out, Action{Kind: Create, Name: p.Name, Spec: p.Spec.DeepCopy()})
		case !IsAutoDiscovered(cur.Class):
			out = append(out, Action{Kind: NameTaken, Name: p.Name})
		default:
			if spec := Merge(&cur.Class.Spec, &p.Spec); spec != nil {
				out = append(out, Action{Kind: Update, Name: p.Name, Spec: spec})
			}
			out = appendStale(out, cur.Class, false, ReasonHasNodes, nodesMessage(p))
		}
	}
	for i := range existing {
		c := existing[i].Class
		if IsAutoDiscovered(c) && !proposed[c.Name] {
			out = appendStale(out, c, true, ReasonNoNodes, "no node carries the product of this class any more")
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// IsAutoDiscovered: the class carries ome.io/auto-discovered=true.
func IsAutoDiscovered(c *v1beta1.AcceleratorClass) bool {
	return c.Labels[v1beta1.LabelAutoDiscovered] == "true"
}

// supersededBy names the admin class whose selector is the proposal's, or
// which matches exactly the proposal's nodes.
func supersededBy(p *Proposal, admin []*ExistingClass) string {
	for _, e := range admin {
		if sel, ok := plainSelector(&e.Class.Spec); ok && maps.Equal(sel, p.Spec.Discovery.NodeSelector) {
			return e.Class.Name
		}
		if len(e.Nodes) > 0 && slices.Equal(e.Nodes, p.Nodes) {
			return e.Class.Name
		}
	}
	return ""
}

// plainSelector is the class's discovery.nodeSelector and spec.nodeSelector
// together, when it has no nodeSelectorTerms.
func plainSelector(s *v1beta1.AcceleratorClassSpec) (map[string]string, bool) {
	if len(s.Discovery.NodeSelectorTerms) > 0 {
		return nil, false
	}
	sel := maps.Clone(s.Discovery.NodeSelector)
	if sel == nil {
		sel = map[string]string{}
	}
	maps.Copy(sel, s.NodeSelector)
	return sel, len(sel) > 0
}

// Merge is cur with the fields discovery owns taken from want, or nil
// when they are equal already.
func Merge(cur, want *v1beta1.AcceleratorClassSpec) *v1beta1.AcceleratorClassSpec {
	s := cur.DeepCopy()
	s.Vendor, s.Family, s.Model = want.Vendor, want.Family, want.Model
	s.Discovery.NodeSelector = maps.Clone(want.Discovery.NodeSelector)
	s.Discovery.PCIVendorID = want.Discovery.PCIVendorID
	s.Discovery.DeviceIDs = slices.Clone(want.Discovery.DeviceIDs)
	s.Capabilities.MemoryGB = nil
	if m := want.Capabilities.MemoryGB; m != nil {
		q := m.DeepCopy()
		s.Capabilities.MemoryGB = &q
	}
	s.Capabilities.ComputeCapability = want.Capabilities.ComputeCapability
	s.Capabilities.Features = slices.Clone(want.Capabilities.Features)
	s.Resources = nil
	for _, r := range want.Resources {
		s.Resources = append(s.Resources, *r.DeepCopy())
	}
	if apiequality.Semantic.DeepEqual(s, cur) {
		return nil
	}
	return s
}

// appendStale appends a SetStale when the class's Stale condition says
// otherwise. A class without the condition is not stale.
func appendStale(out []Action, c *v1beta1.AcceleratorClass, stale bool, reason, msg string) []Action {
	cond := meta.FindStatusCondition(c.Status.Conditions, v1beta1.ConditionStale)
	want := metav1.ConditionFalse
	if stale {
		want = metav1.ConditionTrue
	}
	if cond == nil && !stale || cond != nil && cond.Status == want && cond.Reason == reason {
		return out
	}
	return append(out, Action{Kind: SetStale, Name: c.Name, Stale: stale, Reason: reason, Message: msg})
}

func nodesMessage(p *Proposal) string {
	return "nodes carry " + p.ProductLabel + "=" + p.Product
}
