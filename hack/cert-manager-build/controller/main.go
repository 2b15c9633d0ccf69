// Command cert-manager-controller runs cert-manager's controllers for
// namespaced CA and self-signed Issuers and their Certificates, in one
// process, from the served github.com/cert-manager/cert-manager module:
// what upstream's cmd/controller does with the default controllers, minus
// ACME, Vault, Venafi, ClusterIssuers, the ingress/gateway shims,
// CertificateSigningRequests and leader election.
//
//	cert-manager-controller --kubeconfig FILE
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"sync"
	"syscall"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	// The controllers register themselves with controllerpkg.Known().
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	_ "github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	_ "github.com/cert-manager/cert-manager/pkg/controller/issuers"
	// The Issuer types the issuers controller sets up (Ready condition).
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the cluster")
	namespace := flag.String("namespace", "", "only this namespace (default: all)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *kubeconfig, *namespace); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager-controller:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, kubeconfig, namespace string) error {
	ctx = logf.NewContext(ctx, logf.Log, "controller")
	log := logf.FromContext(ctx)
	opts := controllerpkg.ContextOptions{
		Kubeconfig:         kubeconfig,
		KubernetesAPIQPS:   50,
		KubernetesAPIBurst: 100,
		Namespace:          namespace,
		// The factory makes the clock, the metrics and the ACME account
		// registry itself (cert-manager v1.20).
		IssuerOptions: controllerpkg.IssuerOptions{ClusterResourceNamespace: "kube-system"},
	}
	factory, err := controllerpkg.NewContextFactory(ctx, opts)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(controllerpkg.Known()))
	for n := range controllerpkg.Known() {
		names = append(names, n)
	}
	sort.Strings(names)
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	for _, n := range names {
		iface, err := controllerpkg.Known()[n](factory)
		if err != nil {
			return fmt.Errorf("controller %s: %w", n, err)
		}
		log.Info("starting controller", "controller", n)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := iface.Run(5, ctx); err != nil {
				errs <- fmt.Errorf("controller %s: %w", n, err)
			}
		}()
	}
	// Every Context of the factory shares its informer factories; start
	// them once the controllers asked for their informers.
	shared, err := factory.Build()
	if err != nil {
		return err
	}
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.SharedInformerFactory.Start(ctx.Done())
	shared.HTTP01ResourceMetadataInformersFactory.Start(ctx.Done())
	fmt.Fprintf(os.Stderr, "cert-manager-controller: running %v\n", names)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}
