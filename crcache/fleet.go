package crcache

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	informer "github.com/kubetyped/informer"
)

// FleetOptions configures a [Fleet].
type FleetOptions struct {
	// Options are crcache's settings for every cluster's cache alike, as
	// [NewWith] applies them to one cache. Snapshot.Dir, if set, holds one
	// directory per cluster, named after the cluster, so that one
	// cluster's snapshot is never restored into another's cache.
	Options Options
}

// Fleet makes the caches of the clusters of a multi-cluster controller
// (one controller-runtime cluster.Cluster per cluster, as
// multicluster-runtime's providers build them), each a cache.Cache of its
// own cluster exactly as one made by [NewWith] is, and all decoding with
// the fleet's tables: a string that several clusters' objects hold (label
// keys and values, images, names of namespaces, nodes and owners…) is held
// once in the fleet, and so is, where sharing is on (see
// [Options].Deduplicate: by default for every kind whose reads deep-copy),
// each sub-object equal to one already decoded in any cluster (label maps,
// resource lists, env and port lists, probes…). An informer with a
// transform decodes sharing strings only, since the transform may write
// into its input, and its informer's pass shares the transform's output
// in the fleet's table: for pods the same parts as the decoder, for other
// kinds only their metadata's strings and maps (see docs/fleet.md,
// "controller-runtime"). Informers of metadata only
// (*metav1.PartialObjectMetadata) intern nothing on decode and share
// nothing across clusters. What is per cluster (UIDs, IPs,
// timestamps, resource versions) stays per object, and nothing else is
// shared: each cache has its own informers, connections, errors and
// readiness, so one cluster that is slow or unreachable holds up no other.
// The rule that cached objects must not be modified spans the fleet: a
// write into a shared sub-object (of an object handed to a handler or read
// with UnsafeDisableDeepCopy) changes it in every cluster holding it, and
// in objects any cache of the fleet decodes from equal bytes later, even
// after the writer's cache has stopped, for as long as the value is
// reachable.
//
// A cluster's name is in use from its cache's Start until Start returns:
// a second cache of that name fails to be made, or to start, meanwhile,
// and once it has returned the name can be used again (a cluster removed
// and added back). Its methods are safe for concurrent use.
type Fleet struct {
	opts   Options
	tables *decodingTables

	mu      sync.Mutex
	running map[string]bool // the clusters whose cache runs
}

// NewFleet returns a fleet with no cluster; [Fleet.NewCache] makes each
// cluster's cache.
func NewFleet(o FleetOptions) *Fleet {
	return &Fleet{opts: o.Options, tables: newDecodingTables(), running: map[string]bool{}}
}

// NewCache returns the constructor of cluster's cache, for
// cluster.Options.NewCache (or manager.Options.NewCache):
//
//	cl, err := cluster.New(config, func(o *cluster.Options) { o.NewCache = fleet.NewCache(name) })
//
// The cache it makes is configured by the cache.Options it is called with
// exactly as [New] configures one (and fails as New does), and by the
// fleet's Options. It also fails on a cluster name that is empty, longer
// than 253 characters, contains "/", or is "." or "..", and while a cache
// of that name runs. Its Start fails, at once, if another cache of the
// name runs.
func (f *Fleet) NewCache(cluster string) cache.NewCacheFunc {
	return func(config *rest.Config, opts cache.Options) (cache.Cache, error) {
		return f.newCache(cluster, config, opts, nil)
	}
}

// newCache is NewCache(cluster)(config, opts) with the informers'
// ListerWatchers built by newSource (nil: from config).
func (f *Fleet) newCache(cluster string, config *rest.Config, opts cache.Options, newSource func(listWatchRequest) (source, error)) (cache.Cache, error) {
	if err := informer.ValidateClusterName(cluster); err != nil {
		return nil, fmt.Errorf("crcache: Fleet: %w", err)
	}
	if f.isRunning(cluster) {
		return nil, f.inUse(cluster)
	}
	lean := f.opts
	if lean.Snapshot.Dir != "" {
		lean.Snapshot.Dir = filepath.Join(lean.Snapshot.Dir, cluster)
	}
	c, err := newCacheIn(config, opts, lean, newSource, f.tables)
	if err != nil {
		return nil, fmt.Errorf("crcache: Fleet: cluster %q: %w", cluster, err)
	}
	return &fleetCache{Cache: c, fleet: f, cluster: cluster}, nil
}

// Clusters returns the names of the clusters whose cache runs (between
// the start and the return of its Start), sorted.
func (f *Fleet) Clusters() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.running))
}

func (f *Fleet) isRunning(cluster string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.running[cluster]
}

// claim marks cluster's name in use, or fails if it is.
func (f *Fleet) claim(cluster string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.running[cluster] {
		return f.inUse(cluster)
	}
	f.running[cluster] = true
	return nil
}

// release frees cluster's name.
func (f *Fleet) release(cluster string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.running, cluster)
}

func (f *Fleet) inUse(cluster string) error {
	return fmt.Errorf("crcache: Fleet: cluster %q already has a running cache: a cluster's name is free again once its cache's Start has returned", cluster)
}

// fleetCache is the cache of one cluster of a Fleet: a cache made by
// newCacheIn, whose Start holds the cluster's name.
type fleetCache struct {
	cache.Cache
	fleet   *Fleet
	cluster string
	started atomic.Bool
}

// Start runs the cache until ctx is done, as the cache of [New] does,
// holding the cluster's name meanwhile; it fails at once if another cache
// of the fleet holds it, and, as New's, if this cache was started before.
func (c *fleetCache) Start(ctx context.Context) error {
	if !c.started.CompareAndSwap(false, true) {
		return c.Cache.Start(ctx) // fails: started before
	}
	if err := c.fleet.claim(c.cluster); err != nil {
		c.started.Store(false)
		return err
	}
	defer c.fleet.release(c.cluster)
	return c.Cache.Start(ctx)
}
