// Package wrappers builds berth's API objects and the core Kubernetes
// objects around them for tests, in the style of Kueue's and LWS's test
// wrappers:
//
//	c := wrappers.MakeAcceleratorClass("h100").Vendor("nvidia").
//		NodeSelector("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3").
//		ResourceQuantity("nvidia.com/gpu", "1").Obj()
//
// MakeX starts an object with only its name (and namespace) set; each
// setter sets one field, creating the structs on its path, and returns the
// wrapper; Obj returns a deep copy, so one wrapper can make several
// objects. A test states only the fields it is about.
//
// The package is for tests only: _test.go files and the rest of
// internal/testing import it, production code never does (a test in this
// package fails if any non-test file elsewhere imports it). It imports no
// client-go, so the tests of selection, merge and reconcile/plan may use
// it without their packages reaching client-go.
package wrappers
