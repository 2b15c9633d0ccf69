package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1beta1 "github.com/berthdev/berth/api/v1beta1"
	"github.com/berthdev/berth/pin"
)

func repinCommand() Command {
	return Command{Name: "repin", Summary: "ask berth to decide an InferenceService's runtime and class again", Run: runRepin}
}

const repinHelp = `
berth repin asks berth to decide an InferenceService's runtime and
AcceleratorClass again, as on create. berth never moves a pinned service on
its own, not even while its pinned runtime or class is deleted (the service
is then Degraded, RuntimeDeleted or AcceleratorClassDeleted, and keeps its
pods); this is the explicit request. It sets annotation ome.io/repin to the
current time with one merge patch; the webhook decides again, and the
reconciler rolls the service's groups onto the new decision. A service that
no runtime can serve now is refused, and keeps its pin.

Usage:
  berth repin isvc/NAME [-n NAMESPACE] [--kubeconfig FILE]

Examples:
  # The pinned runtime was deleted; move the service to what berth picks now.
  berth repin chat -n team-a
  berth explain isvc/chat -n team-a   # the new decision
`

// runRepin patches annotation ome.io/repin and prints the decision the
// webhook stored, with its warnings.
func runRepin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("repin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var src sourceFlags
	fs.StringVar(&src.namespace, "n", "", "namespace of the InferenceService (default: the kubeconfig context's)")
	fs.StringVar(&src.kubeconfig, "kubeconfig", "", "kubeconfig (default $KUBECONFIG, then ~/.kube/config)")
	fs.Usage = usageFunc(fs, stderr, repinHelp)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return fmt.Errorf("name one InferenceService, as isvc/NAME")
	}
	name, err := serviceName(pos[0])
	if err != nil {
		return err
	}
	c, err := src.clients()
	if err != nil {
		return err
	}
	ns := src.namespace
	if ns == "" {
		ns = c.namespace
	}
	patch, err := repinPatch(time.Now())
	if err != nil {
		return err
	}
	before, err := c.berth.OmeV1beta1().InferenceServices(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	after, err := c.berth.OmeV1beta1().InferenceServices(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("InferenceService %s/%s: berth did not decide again: %w", ns, name, err)
	}
	fmt.Fprintf(stdout, "InferenceService %s/%s: %s -> %s\n", ns, name, pinText(before), pinText(after))
	return nil
}

// repinPatch is the merge patch that sets annotation ome.io/repin to t
// (pin.RepinPatch).
func repinPatch(t time.Time) ([]byte, error) {
	return pin.RepinPatch(t.UTC().Format(time.RFC3339Nano)), nil
}

// pinText is the pinned runtime and class of a service, as stored.
func pinText(isvc *v1beta1.InferenceService) string {
	if !pin.Pinned(isvc) {
		return "not pinned (it waits; see its status)"
	}
	p, _ := pin.Read(isvc) // a malformed pin is shown as it is
	if p.AcceleratorClass != "" {
		return p.Runtime() + " on AcceleratorClass " + p.AcceleratorClass
	}
	return p.Runtime()
}
