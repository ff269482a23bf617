package crcache_test

import (
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cluster"

	"github.com/kubetyped/informer/crcache"
)

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
