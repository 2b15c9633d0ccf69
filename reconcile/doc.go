// Package reconcile holds berth's controllers, one package each, joined by
// reconcile/manager (cmd/berth-reconciler's --controllers names them; the
// adapters controller runs with servinggroups, whose pods it reads):
//
//   - reconcile/servinggroups: serving groups, their rollouts, Services,
//     HPAs, gang PodGroups (its step reconcile/servinggroups/gang) and
//     InferenceService status;
//   - reconcile/models: BaseModel and ClusterBaseModel metadata;
//   - reconcile/accelerators: AcceleratorClass status;
//   - reconcile/classsync: AcceleratorClass discovery and the Kueue
//     ResourceFlavor sync;
//   - reconcile/policy: ServingPolicy status and quotas;
//   - reconcile/adapters: LoRA adapters on engine pods.
//
// reconcile/plan is the pure half they share (no client-go). A controller
// never imports another (internal/arch checks it); what one needs of
// another crosses an interface the manager wires. Each package's doc.go is
// its rulebook.
package reconcile
