package handlers

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/selection"
)

// AnnotationDecision holds the full ranking of the pinned decision, one
// line per candidate that lost and why, for `kubectl describe`. Berth
// writes it whenever it decides and keeps it while the pin holds; what a
// request carries there is ignored.
const AnnotationDecision = v1beta1.AnnotationDecision

// maxDecisionAnnotation bounds the annotation: the apiserver allows 256 KiB
// of annotations per object, and a cluster of a thousand runtimes should
// not spend it on one service.
const maxDecisionAnnotation = 8 << 10

// exampleLength bounds the loser quoted in the summary warning.
const exampleLength = 200

// headline says what was chosen: runtime, class (the decoder's too when
// it has its own), protocol and model.
func headline(c *choice) string {
	var b strings.Builder
	b.WriteString("runtime ")
	b.WriteString(c.RuntimeRef())
	if c.Runtime.AutoSelected {
		b.WriteString(" (auto-selected)")
	}
	writeClass(&b, ", ", c.Decision)
	if c.decoder != nil {
		writeClass(&b, ", decoder on ", c.decoder)
	}
	fmt.Fprintf(&b, ", protocol %s, model %s", c.Protocol, c.Model.Ref())
	return b.String()
}

func writeClass(b *strings.Builder, prefix string, d *selection.Decision) {
	b.WriteString(prefix)
	c := d.AcceleratorClassName()
	if c == "" {
		b.WriteString("no AcceleratorClass")
		return
	}
	b.WriteString("AcceleratorClass ")
	b.WriteString(c)
	if d.AcceleratorAvailable {
		b.WriteString(" (has room now)")
	} else {
		b.WriteString(" (no room now)")
	}
}

// explanation is the engine's explanation lines, then the decoder's class
// lines, marked "decoder: ".
func explanation(c *choice) []string {
	if c.decoder == nil {
		return c.Explanation
	}
	lines := slices.Clone(c.Explanation)
	for _, l := range c.decoder.Explanation {
		if strings.HasPrefix(l, "AcceleratorClass/") {
			lines = append(lines, decoderLine+l)
		}
	}
	return lines
}

const decoderLine = "decoder: "

// decisionText is the annotation: the headline, then every explanation
// line, cut before maxDecisionAnnotation with a count of what was left out.
func decisionText(c *choice) string {
	var b strings.Builder
	b.WriteString(headline(c))
	lines := explanation(c)
	for i, l := range lines {
		more := "\n… and " + strconv.Itoa(len(lines)-i) + " more line(s)"
		need := b.Len() + 1 + len(l)
		if i < len(lines)-1 {
			need += len(more) // room to say what follows
		}
		if need > maxDecisionAnnotation {
			b.WriteString(more)
			return b.String()
		}
		b.WriteByte('\n')
		b.WriteString(l)
	}
	return b.String()
}

// summary is the one-line warning of a decision: what won, how many
// runtimes and classes lost with one example each, and where the rest is.
func summary(c *choice) string {
	var runtimes, classes []string
	for _, l := range c.Explanation {
		if strings.HasPrefix(l, "AcceleratorClass/") {
			classes = append(classes, l)
		} else {
			runtimes = append(runtimes, l)
		}
	}
	class := "no AcceleratorClass"
	if n := c.AcceleratorClassName(); n != "" {
		class = "AcceleratorClass " + n
	}
	if c.decoder != nil {
		dc := "no AcceleratorClass"
		if n := c.decoderClassName(); n != "" {
			dc = "AcceleratorClass " + n
		}
		class += ", decoder on " + dc
	}
	parts := []string{fmt.Sprintf("berth chose runtime %s for %s (protocol %s), %s", c.RuntimeRef(), c.Model.Ref(), c.Protocol, class)}
	if len(runtimes) > 0 {
		parts = append(parts, fmt.Sprintf("%d other %s ranked lower, e.g. %s", len(runtimes), plural(len(runtimes), "runtime", "runtimes"), cut(runtimes[0])))
	}
	if len(classes) > 0 {
		parts = append(parts, fmt.Sprintf("%d other %s ranked lower, e.g. %s", len(classes), plural(len(classes), "AcceleratorClass", "AcceleratorClasses"), cut(classes[0])))
	}
	parts = append(parts, "kubectl describe shows the full ranking (annotation "+AnnotationDecision+")")
	return strings.Join(parts, "; ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// cut shortens s to exampleLength bytes on a rune boundary.
func cut(s string) string {
	if len(s) <= exampleLength {
		return s
	}
	i := exampleLength
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
