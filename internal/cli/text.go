package cli

import (
	"fmt"
	"io"
	"strings"
)

// writeText prints a report for people.
func writeText(w io.Writer, r *Report) {
	fmt.Fprintf(w, "InferenceService %s (%s)\n", r.Service, r.Source)
	if p := r.Pin; p != nil {
		writePin(w, p)
	}
	if o := r.Decision; o != nil {
		if r.Pin != nil {
			fmt.Fprintf(w, "\nPinned decision: %s\n", o.Headline)
		} else {
			fmt.Fprintf(w, "\nDecision: %s\n", o.Headline)
		}
		writeOutcome(w, o)
	}
	fmt.Fprintln(w)
	if r.Allowed {
		fmt.Fprintln(w, "Admission: allowed")
	} else {
		fmt.Fprintf(w, "Admission: denied\n%s\n", indent(r.Denial, "  "))
	}
	if len(r.Warnings) > 0 {
		fmt.Fprintln(w, "Warnings:")
		for _, x := range r.Warnings {
			fmt.Fprintf(w, "  - %s\n", x)
		}
	}
}

func writePin(w io.Writer, p *PinReport) {
	fmt.Fprintf(w, "\nPinned: runtime %s, AcceleratorClass %s", p.Runtime, orNone(p.AcceleratorClass))
	if p.DecoderAcceleratorClass != "" {
		fmt.Fprintf(w, ", decoder AcceleratorClass %s", p.DecoderAcceleratorClass)
	}
	fmt.Fprintln(w)
	if p.Passes {
		fmt.Fprintln(w, "  the pin passes every check today")
	} else {
		fmt.Fprintf(w, "  the pin no longer passes: %s\n", indent(p.Problem, "    ")[4:])
	}
	for _, why := range p.Why {
		fmt.Fprintf(w, "  %s\n", why)
	}
	if p.Fresh != nil && p.FreshDiffers {
		fmt.Fprintf(w, "\nDecision made today: %s\n", p.Fresh.Headline)
		writeOutcome(w, p.Fresh)
	}
}

func writeOutcome(w io.Writer, o *Outcome) {
	writeCandidates(w, "Runtimes", o.Runtimes, "none lists the model's format")
	writeCandidates(w, "AcceleratorClasses", o.AcceleratorClasses, "none: the service asks for no accelerator, or none exists")
	if o.DecoderAcceleratorClass != "" || len(o.DecoderAcceleratorClasses) > 0 {
		writeCandidates(w, "Decoder AcceleratorClasses", o.DecoderAcceleratorClasses, "none")
	}
}

func writeCandidates(w io.Writer, title string, cs []Candidate, empty string) {
	fmt.Fprintf(w, "\n%s, ranked:\n", title)
	if len(cs) == 0 {
		fmt.Fprintf(w, "  (%s)\n", empty)
		return
	}
	for _, c := range cs {
		fmt.Fprintf(w, "  %d. %s  [%s] %s\n", c.Rank, c.Name, c.Verdict, c.Rule)
	}
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}
