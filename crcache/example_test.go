package crcache_test

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/crcache"
)

// newManager is a controller-runtime manager whose cache, and so whose
// client's reads, are this package's.
func newManager(config *rest.Config) (manager.Manager, error) {
	return manager.New(config, manager.Options{NewCache: crcache.New})
}

// sandboxPods is a reconciler's read that controller-runtime's cache answers
// by scanning every pod of the namespace, and crcache from its label index.
func sandboxPods(ctx context.Context, c client.Reader, namespace, sandbox string) (*corev1.PodList, error) {
	var pods corev1.PodList
	err := c.List(ctx, &pods, client.InNamespace(namespace), client.MatchingLabels{"agents.x-k8s.io/sandbox-name-hash": sandbox})
	return &pods, err
}

// The one-line switch: a manager built with crcache.New; controllers,
// sources and reads stay as they are.
func ExampleNew() {
	mgr, err := newManager(ctrl.GetConfigOrDie())
	if err != nil {
		panic(err)
	}
	pods, err := sandboxPods(context.Background(), mgr.GetClient(), "default", "0a1b2c3d")
	_, _ = pods, err
}

// newLeanManager is a manager on crcache that drops every object's managed
// fields on the wire, and turns the mutation detector on (for tests and
// CI); sharing is on by default.
func newLeanManager(config *rest.Config) (manager.Manager, error) {
	newCache := crcache.NewWith(crcache.Options{
		DropFields:      []string{informer.ManagedFields},
		DetectMutations: true,
	})
	return manager.New(config, manager.Options{NewCache: newCache})
}

// crcache's own options: what the informers drop and share, beside
// controller-runtime's cache.Options.
func ExampleNewWith() {
	mgr, err := newLeanManager(ctrl.GetConfigOrDie())
	if err != nil {
		panic(err)
	}
	_ = mgr
}

// newFleetClusters builds one controller-runtime cluster per config, by
// name, whose caches decode with the tables of one fleet: the one line per
// cluster is the NewCache option.
func newFleetClusters(configs map[string]*rest.Config) (map[string]cluster.Cluster, error) {
	fleet := crcache.NewFleet(crcache.FleetOptions{})
	clusters := map[string]cluster.Cluster{}
	for name, config := range configs {
		cl, err := cluster.New(config, func(o *cluster.Options) { o.NewCache = fleet.NewCache(name) })
		if err != nil {
			return nil, err
		}
		clusters[name] = cl
	}
	return clusters, nil
}

// The caches of a multi-cluster controller's clusters, from one fleet: what
// the clusters' objects repeat is held once. Each cluster is started as
// usual (cl.Start(ctx)), and its name is free again once that returns.
func ExampleFleet() {
	clusters, err := newFleetClusters(map[string]*rest.Config{
		"eu-1": {Host: "https://eu-1.example:6443"},
		"us-1": {Host: "https://us-1.example:6443"},
	})
	if err != nil {
		panic(err)
	}
	_ = clusters
}
