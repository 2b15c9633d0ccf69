// Package deploy holds berth's Kubernetes manifests (kustomize): the
// generated CRDs, the out-of-box ClusterServingRuntimes in runtimes/ and the
// AcceleratorClasses in accelerators/. It has no Go code of its own; its
// tests check that every manifest decodes strictly into the API types and
// passes the CRDs' OpenAPI schema and CEL rules, the way the apiserver
// would, so a broken manifest fails `go test` instead of `kubectl apply`.
package deploy
