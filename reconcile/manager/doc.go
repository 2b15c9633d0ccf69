// Package manager runs berth-reconciler's controllers in one process: the
// serving groups controller (package reconcile/servinggroups), the model metadata
// controller (reconcile/models), the AcceleratorClass status
// controller (reconcile/accelerators) and AcceleratorClass discovery with
// the Kueue sync (reconcile/classsync).
//
// Rules:
//
//  1. The manager is the only package that imports the controllers; they
//     do not import one another (internal/arch tests it). What one needs
//     of another it gets through the objects' status or a small interface
//     the manager wires.
//  2. Config.Controllers names the controllers to run (Names; the flag
//     --controllers); nil runs all of them, leaving out
//     accelerator-status when AcceleratorStatus.Disabled and
//     accelerator-sync when AcceleratorSync asks for neither discovery nor
//     the Kueue sync. An unknown name, or accelerator-sync named with
//     neither, is an error, before anything runs.
//  3. One informer factory of berth's objects is shared: each controller
//     asks it for the informers it needs and starts them in its Run, so an
//     object type is watched once. So is the serving groups controller's
//     factory of the objects it owns (servinggroups.Controller.KubeInformers):
//     the LoRA adapters controller reads its pods. The shared factories
//     cache objects without managedFields (internal/strip.ManagedFields).
//     One Prometheus registry serves every controller's metrics; the model
//     controller's API writes count on the serving groups'
//     berth_reconciler_api_writes_total.
//  4. Every controller runs only while this replica holds the Lease
//     (LeaderElect); the first that fails stops the others and the
//     process. /readyz is ready once every running controller's caches
//     synced, or while standing by as a non-leader.
package manager
