//go:build tools

// Package schedbuild pins the scheduler-plugins commands the local control
// plane runs next to kube-scheduler: cmd/scheduler (kube-scheduler with the
// Coscheduling plugin and the other out-of-tree plugins compiled in) and
// cmd/controller (the PodGroup and ElasticQuota controllers).
package schedbuild

import (
	_ "sigs.k8s.io/scheduler-plugins/cmd/controller"
	_ "sigs.k8s.io/scheduler-plugins/cmd/scheduler"
)
