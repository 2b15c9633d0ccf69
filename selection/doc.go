// Package selection decides, for an InferenceService, which model, which
// serving runtime and which AcceleratorClass it gets, and explains why every
// other candidate lost.
//
// It is pure: no client-go, no network. The webhook feeds an Index from
// informer events, the CLI and tests feed it from files, and all of them get
// the same answer for the same objects, whatever order they arrived in.
//
// Objects handed to an Index are deep-copied; objects handed back in a
// Decision are shared with the Index and must be treated as read-only.
package selection
