package cli

import (
	"errors"
	"strings"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/pin"
	"github.com/berthdev/berth/selection"
	"github.com/berthdev/berth/webhook/handlers"
)

// Report is what `berth explain` says about one InferenceService (-o
// json|yaml prints it as it is).
type Report struct {
	Service string `json:"service"`
	// Source is "offline" or the cluster's address.
	Source string `json:"source"`
	// Allowed says whether admission would accept the service as it is;
	// Denial is the webhook's denial message when not.
	Allowed bool   `json:"allowed"`
	Denial  string `json:"denial,omitempty"`
	// Decision is the decision in force: the one admission makes for a
	// new service, or the pinned one of a stored service.
	Decision *Outcome `json:"decision,omitempty"`
	// Pin is said for a service whose annotations pin a decision.
	Pin *PinReport `json:"pin,omitempty"`
	// Candidates are, when no decision could be made, every candidate
	// selection considered and why it cannot serve (the denial's list).
	Candidates []Candidate `json:"candidates,omitempty"`
	// Warnings are admission's warnings.
	Warnings []string `json:"warnings,omitempty"`
}

// Outcome is one decision and every candidate it ranked.
type Outcome struct {
	// Headline is the first line of annotation ome.io/decision.
	Headline                string `json:"headline"`
	Runtime                 string `json:"runtime"`
	AutoSelected            bool   `json:"autoSelected"`
	Model                   string `json:"model"`
	Protocol                string `json:"protocol"`
	AcceleratorClass        string `json:"acceleratorClass,omitempty"`
	AcceleratorAvailable    bool   `json:"acceleratorAvailable"`
	DecoderAcceleratorClass string `json:"decoderAcceleratorClass,omitempty"`
	// Runtimes and AcceleratorClasses are ranked: the chosen one, then
	// those that could serve but rank lower, then those that cannot
	// serve; each with the rule that decided it, in the webhook's words.
	Runtimes                  []Candidate `json:"runtimes"`
	AcceleratorClasses        []Candidate `json:"acceleratorClasses"`
	DecoderAcceleratorClasses []Candidate `json:"decoderAcceleratorClasses,omitempty"`
	// Explanation are the webhook's lines as annotation ome.io/decision
	// holds them, after the headline.
	Explanation []string `json:"explanation"`
}

// Candidate is one runtime or class and why it won or lost.
type Candidate struct {
	Rank int    `json:"rank"`
	Name string `json:"name"`
	// Verdict is "chosen", "ranked lower" or "excluded".
	Verdict string `json:"verdict"`
	Rule    string `json:"rule"`
}

// PinReport compares a stored service's pinned decision with the one
// berth would make today.
type PinReport struct {
	Runtime                 string `json:"runtime"`
	AcceleratorClass        string `json:"acceleratorClass,omitempty"`
	DecoderAcceleratorClass string `json:"decoderAcceleratorClass,omitempty"`
	// Passes: the pin passes every check an explicit choice must pass
	// today; Problem says why not.
	Passes  bool   `json:"passes"`
	Problem string `json:"problem,omitempty"`
	// FreshDiffers: a decision made today would choose differently
	// (Why says how); Fresh is that decision, FreshError why it fails.
	FreshDiffers bool     `json:"freshDiffers"`
	Why          []string `json:"why"`
	Fresh        *Outcome `json:"fresh,omitempty"`
	FreshError   string   `json:"freshError,omitempty"`
}

const (
	verdictChosen   = "chosen"
	verdictLower    = "ranked lower"
	verdictExcluded = "excluded"
)

// outcome turns a decision into its ranked candidates. The explanation
// lines are the webhook's (annotation ome.io/decision): a loser that
// "matches, but" or "fits, but" could have served and ranks lower, any
// other was excluded by the rule its line states.
//
// pinned says the decision is a service's pin, not one made for it now.
func outcome(d *handlers.Decided, pinned bool) *Outcome {
	e := d.Engine
	o := &Outcome{
		Headline: d.Headline, Runtime: e.RuntimeRef(), AutoSelected: e.Runtime.AutoSelected,
		Model: e.Model.Ref(), Protocol: string(e.Protocol),
		AcceleratorClass: e.AcceleratorClassName(), AcceleratorAvailable: e.AcceleratorAvailable,
		Explanation: append([]string{}, d.Lines...),
	}
	if d.Decoder != nil {
		o.DecoderAcceleratorClass = d.Decoder.AcceleratorClassName()
	}
	var rts, acs, decs []Candidate
	for _, l := range d.Lines {
		decoder := strings.HasPrefix(l, decoderPrefix)
		l = strings.TrimPrefix(l, decoderPrefix)
		name, rule, _ := strings.Cut(l, ": ")
		c := Candidate{Name: name, Rule: rule, Verdict: verdictExcluded}
		if strings.HasPrefix(rule, "matches, but") || strings.HasPrefix(rule, "fits, but") {
			c.Verdict = verdictLower
		}
		switch {
		case decoder:
			decs = append(decs, c)
		case strings.HasPrefix(name, "AcceleratorClass/"):
			acs = append(acs, c)
		default:
			rts = append(rts, c)
		}
	}
	o.Runtimes = rank(chosenRuntime(d, pinned), rts)
	o.AcceleratorClasses = rank(chosenClass(e), acs)
	if d.Decoder != nil {
		o.DecoderAcceleratorClasses = rank(chosenClass(d.Decoder), decs)
	}
	return o
}

const decoderPrefix = "decoder: "

func chosenRuntime(d *handlers.Decided, pinned bool) *Candidate {
	how := "named in spec.runtime, and passes every check"
	switch {
	case pinned:
		how = "pinned in annotation " + pin.RuntimeAnnotation
	case d.Engine.Runtime.AutoSelected:
		how = "auto-selected: serves the model and ranks first"
	}
	return &Candidate{Name: d.Engine.RuntimeRef(), Verdict: verdictChosen, Rule: how}
}

// chosenClass is the chosen class and how it was chosen (selection's
// ClassChosenBy), nil when the decision has no class.
func chosenClass(d *selection.Decision) *Candidate {
	name := d.AcceleratorClassName()
	if name == "" {
		return nil
	}
	rule := "chosen"
	switch d.ClassChosenBy {
	case selection.ChosenByAnnotation:
		rule = "named in annotation " + v1beta1.AnnotationAcceleratorClass
	case selection.ChosenByPreferredClasses:
		rule = "the first class of spec.acceleratorSelector.preferredClasses that fits"
	case selection.ChosenByPreferenceOrder:
		rule = "the first class of the runtime's acceleratorRequirements.preferenceOrder that fits"
	case selection.ChosenByStrategy:
		rule = "ranks first among the classes that fit, by strategy " + string(d.Strategy)
	case selection.ChosenByPin:
		rule = "pinned in annotation " + pin.ClassAnnotation
	}
	if d.AcceleratorAvailable {
		rule += "; has room now"
	} else {
		rule += "; no room now"
	}
	return &Candidate{Name: "AcceleratorClass/" + name, Verdict: verdictChosen, Rule: rule}
}

// rank puts the chosen candidate first, then those ranked lower, then
// those excluded (each group in the webhook's order), numbered from 1.
func rank(chosen *Candidate, losers []Candidate) []Candidate {
	out := []Candidate{}
	if chosen != nil {
		out = append(out, *chosen)
	}
	for _, v := range []string{verdictLower, verdictExcluded} {
		for _, c := range losers {
			if c.Verdict == v {
				out = append(out, c)
			}
		}
	}
	for i := range out {
		out[i].Rank = i + 1
	}
	return out
}

// isPinned says whether a service carries berth's pin.
func isPinned(isvc *v1beta1.InferenceService) bool { return pin.Pinned(isvc) }

// failedCandidates are the candidates of a selection error, each excluded.
func failedCandidates(err error) []Candidate {
	var se *selection.Error
	if !errors.As(err, &se) {
		return nil
	}
	out := make([]Candidate, 0, len(se.Candidates))
	for i, l := range se.Candidates {
		name, rule, _ := strings.Cut(l, ": ")
		out = append(out, Candidate{Rank: i + 1, Name: name, Verdict: verdictExcluded, Rule: rule})
	}
	return out
}
