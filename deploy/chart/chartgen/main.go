// Command chartgen regenerates the generated parts of berth's Helm chart
// (deploy/chart/berth: crds/ and templates/*.yaml) from the kustomize
// builds of deploy/, so the chart is never a second source of truth. Run
// it through `make chart`; `make verify` fails when its output is not
// committed.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/berthdev/berth/deploy/chart"
)

func main() {
	kubectl := flag.String("kubectl", "kubectl", "kubectl that runs `kubectl kustomize`")
	deployDir := flag.String("deploy", "deploy", "berth's manifests (kustomize)")
	out := flag.String("chart", "deploy/chart/berth", "the chart directory")
	flag.Parse()
	if err := chart.Generate(*kubectl, *deployDir, *out); err != nil {
		fmt.Fprintf(os.Stderr, "chartgen: %v\n", err)
		os.Exit(1)
	}
}
