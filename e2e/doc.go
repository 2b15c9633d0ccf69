// Package e2e is berth's end-to-end suite: it runs against a real
// kube-apiserver, scheduler and controller-manager with kwok GPU nodes,
// started on 127.0.0.1 by TestMain (see internal/devenv and e2e/README.md).
// The suite never skips: a missing binary is built, and a control plane
// that cannot start fails the run with the reason.
package e2e
