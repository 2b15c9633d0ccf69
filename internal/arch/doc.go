// Package arch holds no code: its test enforces the import rules of the
// house, so a wrong-way arrow fails the build's tests instead of waiting
// for a reviewer to spot it.
//
// The rules (docs/design-rules.md links here):
//
//  1. The pure cores never reach client-go, directly or through another
//     package of this module: selection, merge, reconcile/plan and pin
//     decide from values they are handed, never from an API call. Nor
//     controller-runtime, or Kueue's API packages, which import it.
//     selection stands on berth's API types alone: merge, pin and the
//     webhook are above it.
//  2. The local control plane (internal/devenv) is used only by the
//     commands that start it: berth (up, demo) and the load tools that
//     measure against it, and by tests.
//  3. The controllers under reconcile/ do not import one another: the
//     manager wires them, and the pure planner (reconcile/plan) is shared.
//
// That the test builders (internal/testing/wrappers) are imported by tests
// only is that package's own test.
package arch
