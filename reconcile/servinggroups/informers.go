package servinggroups

import (
	kubeinformers "k8s.io/client-go/informers"

	"github.com/berthdev/berth/internal/strip"
)

// ownedInformers are the options of the informer factory of the objects
// the controller owns (pods, Services, HPAs, ControllerRevisions, the
// router's RBAC): only those carrying the InferenceService label, cached
// without their managedFields (strip.ManagedFields), which no reader
// reads.
var ownedInformers = []kubeinformers.SharedInformerOption{
	kubeinformers.WithTweakListOptions(managedSelector),
	kubeinformers.WithTransform(strip.ManagedFields),
}

// KubeInformers is the informer factory of the objects the controller
// owns. The manager hands it to the LoRA adapters controller
// (reconcile/adapters), which reads the same pods: one cache of them per
// process.
func (c *Controller) KubeInformers() kubeinformers.SharedInformerFactory { return c.kubeInformers }
