package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/pin"
	"github.com/berthdev/berth/webhook/handlers"
)

const explainHelp = `
Usage:
  berth explain -f SERVICE.yaml --from DIR_OR_FILE... [--nodes NODES.yaml | --fleet FILE] [-o text|json|yaml]
  berth explain isvc/NAME [-n NAMESPACE] [--kubeconfig FILE] [-o text|json|yaml]

Explain says which ServingRuntime and AcceleratorClass berth's webhook
chooses for an InferenceService, and why every other candidate lost, in the
webhook's own words (it runs the webhook's handlers, not a copy of them).

Offline (nothing is applied, no cluster needed): -f names the service's
file; --from names the files and directories that hold the runtimes,
models, AcceleratorClasses, profiles and ServingPolicies (directories are
read recursively; multi-document YAML; kustomization.yaml is skipped).
Without --nodes or --fleet no node exists, so every class "has no room
now"; give them to see availability as a cluster would.

Online: isvc/NAME reads the stored service and every object the webhook
reads from the cluster in your kubeconfig (read-only). A stored service is
pinned (annotations ome.io/resolved-*): explain says whether a decision made
today would differ, and why, while the pin keeps the service where it is.

Output: the decision, then every candidate runtime and class, ranked
(chosen, then those that could serve but rank lower, then those excluded),
each with the rule that decided it; then admission's verdict. The exit code
is 1 when admission would deny the service.

Examples:
  # Which runtime would berth pick for my service, among the shipped ones?
  berth explain -f my-isvc.yaml --from deploy/runtimes --from deploy/accelerators

  # The same, with the local fake GPU fleet for availability, as JSON
  berth explain -f my-isvc.yaml --from deploy/ --fleet default -o json

  # Why did my running service get this runtime, and would it today?
  berth explain isvc/llama-3-2-1b-instruct -n default
`

func explainCommand() Command {
	return Command{
		Name:    "explain",
		Summary: "say which runtime and AcceleratorClass the webhook chooses for an InferenceService and why the others lost (offline or online)",
		Run:     runExplain,
	}
}

func runExplain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("berth explain", flag.ContinueOnError)
	var src sourceFlags
	src.register(fs)
	output := fs.String("o", "text", "output format: text, json or yaml")
	fs.SetOutput(stderr)
	fs.Usage = usageFunc(fs, stderr, explainHelp)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if err := checkOutput(*output); err != nil {
		return err
	}
	w, subjects, err := src.subjects(ctx, pos)
	if err != nil {
		return err
	}
	var reports []*Report
	for _, isvc := range subjects {
		r, err := Explain(ctx, w, isvc)
		if err != nil {
			return err
		}
		reports = append(reports, r)
	}
	if err := printReports(stdout, *output, reports); err != nil {
		return err
	}
	for _, r := range reports {
		if !r.Allowed {
			return ErrFailed
		}
	}
	return nil
}

func checkOutput(o string) error {
	switch o {
	case "text", "json", "yaml":
		return nil
	}
	return fmt.Errorf("-o %s: want text, json or yaml", o)
}

// Explain reports the webhook's decision for isvc in w: for a new
// service, what admission (mutating, then validating handler) decides; for
// a pinned one, the pin, checked as an unchanged UPDATE would check it,
// and the decision berth would make today.
func Explain(ctx context.Context, w *world, isvc *v1beta1.InferenceService) (*Report, error) {
	var old *v1beta1.InferenceService
	if isPinned(isvc) {
		old = isvc // an unchanged re-apply: the pin holds
	}
	adm, err := w.isvcs.Admit(ctx, isvc, old)
	if err != nil {
		return nil, err
	}
	r := &Report{Service: isvc.Namespace + "/" + isvc.Name, Source: "offline", Allowed: adm.Denial == "", Denial: adm.Denial, Warnings: adm.Warnings}
	if w.online != "" {
		r.Source = w.online
	}
	if !isPinned(isvc) {
		d, err := w.isvcs.Fresh(adm.Service)
		if err != nil {
			r.Candidates = failedCandidates(err)
		} else {
			r.Decision = outcome(d, false)
		}
		return r, nil
	}
	r.Pin, r.Decision = w.pinReport(adm.Service)
	return r, nil
}

// pinReport checks a stored service's pin and compares it with a fresh
// decision; the outcome is the pinned decision (nil when it no longer
// resolves).
func (w *world) pinReport(svc *v1beta1.InferenceService) (*PinReport, *Outcome) {
	pinned, _ := pin.Read(svc) // a malformed pin is reported as written; the check below says what is wrong
	p := &PinReport{
		Runtime:                 pinned.Runtime(),
		AcceleratorClass:        pinned.AcceleratorClass,
		DecoderAcceleratorClass: pinned.DecoderAcceleratorClass,
	}
	kept, verr, _, err := w.isvcs.Pinned(svc)
	p.Passes = verr == nil
	if verr != nil {
		p.Problem = verr.Error()
	}
	fresh, ferr := w.isvcs.Fresh(svc)
	if ferr != nil {
		p.FreshError = ferr.Error()
		p.FreshDiffers = true
		p.Why = []string{"a decision made today would fail (" + firstLine(ferr.Error()) + "); the pin keeps " + p.Runtime}
	} else {
		p.Fresh = outcome(fresh, false)
		p.Why = w.differences(svc, p, fresh)
		p.FreshDiffers = len(p.Why) > 0
		if !p.FreshDiffers {
			p.Why = []string{"a decision made today would choose the same runtime and AcceleratorClass"}
		}
	}
	if err != nil {
		p.Problem = strings.TrimSpace(p.Problem + "; " + err.Error())
		return p, nil
	}
	return p, outcome(kept, true)
}

// differences says how a fresh decision differs from the pin, in the
// fresh decision's own words about the pinned runtime and class.
func (w *world) differences(svc *v1beta1.InferenceService, p *PinReport, fresh *handlers.Decided) []string {
	var out []string
	if got := fresh.Engine.RuntimeRef(); got != p.Runtime {
		out = append(out, fmt.Sprintf("%s%s; %s; the pin keeps %s", w.newer(svc, got), got, lossOf(fresh, p.Runtime), p.Runtime))
	}
	if got := fresh.Engine.AcceleratorClassName(); got != p.AcceleratorClass {
		out = append(out, fmt.Sprintf("a decision made today would choose AcceleratorClass %s; %s; the pin keeps %s",
			orNone(got), lossOf(fresh, "AcceleratorClass/"+p.AcceleratorClass), orNone(p.AcceleratorClass)))
	}
	if fresh.Decoder != nil {
		if got := fresh.Decoder.AcceleratorClassName(); got != p.DecoderAcceleratorClass && p.DecoderAcceleratorClass != "" {
			out = append(out, fmt.Sprintf("a decision made today would run the decoder on AcceleratorClass %s; the pin keeps %s", orNone(got), p.DecoderAcceleratorClass))
		}
	}
	return out
}

// newer introduces the runtime a fresh decision chooses: "a newer runtime"
// when it was created after the service, else "a decision made today
// would choose runtime".
func (w *world) newer(svc *v1beta1.InferenceService, ref string) string {
	kind, name, _ := strings.Cut(ref, "/")
	var created = svc.CreationTimestamp
	for _, o := range w.set.ClusterServingRuntimes {
		if kind == "ClusterServingRuntime" && o.Name == name && !svc.CreationTimestamp.IsZero() && o.CreationTimestamp.After(created.Time) {
			return "a newer runtime (created " + o.CreationTimestamp.UTC().Format("2006-01-02 15:04:05Z") + ", after the service) now exists: "
		}
	}
	for _, o := range w.set.ServingRuntimes {
		if kind == "ServingRuntime" && o.Namespace == svc.Namespace && o.Name == name && !svc.CreationTimestamp.IsZero() && o.CreationTimestamp.After(created.Time) {
			return "a newer runtime (created " + o.CreationTimestamp.UTC().Format("2006-01-02 15:04:05Z") + ", after the service) now exists: "
		}
	}
	return "a decision made today would choose runtime "
}

// lossOf is the fresh decision's line about ref ("ref: why it lost").
func lossOf(d *handlers.Decided, ref string) string {
	for _, l := range d.Lines {
		if strings.HasPrefix(l, ref+": ") {
			return l
		}
	}
	return ref + " is no candidate of a fresh decision"
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return strings.TrimSuffix(l, ":")
}

func printReports(out io.Writer, format string, reports []*Report) error {
	switch format {
	case "json":
		var v any = reports
		if len(reports) == 1 {
			v = reports[0]
		}
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	case "yaml":
		for i, r := range reports {
			b, err := yaml.Marshal(r)
			if err != nil {
				return err
			}
			if i > 0 {
				fmt.Fprintln(out, "---")
			}
			if _, err := out.Write(b); err != nil {
				return err
			}
		}
		return nil
	}
	for i, r := range reports {
		if i > 0 {
			fmt.Fprintln(out)
		}
		writeText(out, r)
	}
	return nil
}
