package informer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubetyped/informer/internal/wire"
)

// FleetOptions configures a [Fleet]. The zero value is valid for a typed
// object of the built-in types.
type FleetOptions[T Object] struct {
	// Informer configures the informer of every cluster, as for
	// [NewInformer]: Indexers, ResyncPeriod, Transform, Deduplicate,
	// Backoff, WatchErrorHandler, Clock, Metrics, DetectMutations,
	// ConsistencyCheck and Snapshot apply to each cluster alike. Name names
	// the fleet; each cluster's informer is named "<Name>/<cluster>" (or
	// the cluster's name if Name is empty) in logs and metrics, and its
	// logs carry the key "cluster". Deduplicate shares sub-objects across
	// the whole fleet (strings are always shared fleet-wide, see [Fleet]).
	// Snapshot.Dir, if set, holds one directory per cluster, named after
	// the cluster.
	//
	// DropFields, Shard and DisableWatchList are rejected: dropped fields
	// are REST's, a fleet's unit of sharding is the cluster, and a fleet's
	// clusters always list in pages (see MaxConcurrentSyncs).
	Informer InformerOptions[T]
	// REST configures the REST ListerWatcher [Fleet.AddCluster] builds for
	// each cluster from its *rest.Config, as for [NewRESTListerWatcher]:
	// Resource, Namespace, TweakListOptions, ContentType, DropFields,
	// Scheme. HTTPClient and DecodingTable must be nil: each cluster gets
	// an HTTP client of its own, made from its config, closed when the
	// cluster is removed, and decodes with the fleet's table.
	REST RESTOptions
	// MaxConcurrentSyncs is the number of clusters that list at once, so
	// that a fleet starting, or many clusters relisting together, holds
	// at most this many partial lists in memory. A cluster's list holds
	// its slot from its first page to its last (or to its next watch:
	// a list never continued), but no longer than
	// syncSlotHold (30 s): a list that takes longer, as one from a server
	// that hangs, goes on without it, so that a hung cluster cannot keep
	// the others from starting. Default 8; negative means no limit.
	MaxConcurrentSyncs int
	// SyncTimeout is how long a cluster may take to sync, from when it
	// starts (its AddCluster, or Run for one added before): a cluster not
	// synced by then is failed for the fleet's readiness ([Fleet.HasSynced])
	// and its statistics, though it goes on trying, and is synced as soon as
	// it has synced. Default 2 minutes; negative means never failed, so
	// that the fleet is not synced while any cluster is not.
	SyncTimeout time.Duration
	// Group, if set, splits the fleet's clusters among the replicas of a
	// controller that share the group (see [ShardGroup]): every replica
	// adds every cluster, and each runs only the clusters the group
	// assigns it, by the hash of the cluster's name, a cluster being the
	// unit. When the group's members change, a replica stops the clusters
	// it lost (its handlers receive OnDelete with DeletedObject.Moved for
	// their objects) and starts those it gained, so that the clusters of a
	// replica that died are taken over once its Lease expires. The group
	// must run (ShardGroup.Run) for any cluster to start.
	Group *ShardGroup
}

// Defaults of FleetOptions.
const (
	defaultMaxConcurrentSyncs = 8
	defaultFleetSyncTimeout   = 2 * time.Minute
	// syncSlotHold bounds how long one list holds a sync slot (see
	// FleetOptions.MaxConcurrentSyncs).
	syncSlotHold = 30 * time.Second
)

// Fleet is one cache of one resource type over many clusters: each cluster
// has its own informer (reflector, resource version, backoff, "410 Gone"
// handling, errors, statistics, snapshot), and the fleet adds, on top,
// handlers that learn the cluster of every event, a Lister over all
// clusters, readiness over all clusters, a bound on how many clusters list
// at once, and one intern table for the whole fleet: every string the
// clusters' decoders intern (label keys and values, images, node names…)
// is held once in the fleet, and with Informer.Deduplicate so is every
// equal sub-object (see InformerOptions.Deduplicate for what sharing
// means for handlers). Objects are known by (cluster, namespace, name).
//
// Clusters are added and removed while the fleet runs. A cluster that is
// slow, unreachable, refuses the fleet's credentials or lacks the resource
// holds up no other cluster: its informer runs on its own goroutines, and
// it is failed for readiness after FleetOptions.SyncTimeout.
//
// All methods are safe for concurrent use, handlers included: a handler
// may add and remove clusters and handlers, and read the Lister. Objects
// in the cache and in notifications are shared and must not be modified.
// See docs/fleet.md.
type Fleet[T Object] struct {
	opts FleetOptions[T]
	// table is the table every cluster's decoder interns in, and shares
	// sub-objects in with Deduplicate (and no transform, which could write
	// into them): see newFleetTable.
	table *DecodingTable
	// slots is the semaphore of MaxConcurrentSyncs; nil without a limit.
	slots chan struct{}
	clock clock.WithTicker

	mu sync.Mutex
	// clusters are the fleet's clusters by name; view is the same set
	// sorted by name, replaced on every change, for readers that take no
	// lock (the Lister).
	clusters map[string]*fleetCluster[T]
	view     atomic.Pointer[[]*fleetCluster[T]]
	// handlers are the registered handlers, in registration order.
	handlers []*FleetRegistration[T]
	// leaving holds, per cluster name, the removal still delivering its
	// deletes: a cluster re-added under that name starts once it is done,
	// so that its adds come after the old cluster's deletes.
	leaving map[string]chan struct{}
	// owned are the slots the Group assigns this replica, and groupKnown
	// whether the group's members are known yet (see followGroup).
	owned      slotSet
	groupKnown bool
	// run is the context of Run; nil before Run. stopped is set once
	// Run's context is done.
	run     context.Context
	logger  klog.Logger
	stopped bool
	// running counts the goroutines of clusters and removals, which Run
	// waits for.
	running sync.WaitGroup
}

// NewFleet returns a fleet with no cluster. It does nothing until Run is
// called; clusters may be added before. It fails if an option is invalid.
func NewFleet[T Object](opts FleetOptions[T]) (*Fleet[T], error) {
	opts, err := resolveFleetOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("%s: invalid options: %w", fleetName[T](opts.Informer.Name), err)
	}
	f := &Fleet[T]{
		opts:     opts,
		table:    newFleetTable(opts.Informer),
		clock:    opts.Informer.Clock,
		clusters: map[string]*fleetCluster[T]{},
		leaving:  map[string]chan struct{}{},
		logger:   klog.Background(),
	}
	if f.clock == nil {
		f.clock = clock.RealClock{}
	}
	if opts.MaxConcurrentSyncs > 0 {
		f.slots = make(chan struct{}, opts.MaxConcurrentSyncs)
	}
	f.view.Store(&[]*fleetCluster[T]{})
	return f, nil
}

// resolveFleetOptions returns opts with their defaults, or why they are
// invalid: the one place a fleet's defaults are decided.
func resolveFleetOptions[T Object](opts FleetOptions[T]) (FleetOptions[T], error) {
	switch {
	case len(opts.Informer.DropFields) > 0:
		return opts, errors.New("FleetOptions.Informer.DropFields: set FleetOptions.REST.DropFields, the fields every cluster's ListerWatcher drops")
	case opts.Informer.Shard != nil:
		return opts, errors.New("FleetOptions.Informer.Shard: a fleet is not sharded within a cluster; its clusters are its unit")
	case opts.Informer.DisableWatchList:
		return opts, errors.New("FleetOptions.Informer.DisableWatchList: a fleet's clusters always list in pages")
	case opts.REST.HTTPClient != nil:
		return opts, errors.New("FleetOptions.REST.HTTPClient: each cluster's HTTP client is made from its config")
	case opts.REST.DecodingTable != nil:
		return opts, errors.New("FleetOptions.REST.DecodingTable: the fleet's clusters decode with the fleet's table")
	case !opts.REST.Resource.Empty() && !opts.Informer.Resource.Empty() && opts.REST.Resource != opts.Informer.Resource:
		return opts, fmt.Errorf("FleetOptions.Informer.Resource %v and REST.Resource %v differ: set REST.Resource", opts.Informer.Resource, opts.REST.Resource)
	}
	if opts.Informer.Resource.Empty() {
		opts.Informer.Resource = opts.REST.Resource
	}
	if err := wire.ValidateDropFields(opts.REST.DropFields); err != nil {
		return opts, fmt.Errorf("FleetOptions.REST.DropFields: %w", err)
	}
	if err := opts.Informer.Snapshot.validate(); err != nil {
		return opts, fmt.Errorf("FleetOptions.Informer.%w", err)
	}
	if err := validateResync("FleetOptions.Informer.ResyncPeriod", inherit(opts.Informer.ResyncPeriod, 0)); err != nil {
		return opts, err
	}
	if opts.MaxConcurrentSyncs == 0 {
		opts.MaxConcurrentSyncs = defaultMaxConcurrentSyncs
	}
	if opts.SyncTimeout == 0 {
		opts.SyncTimeout = defaultFleetSyncTimeout
	}
	return opts, nil
}

// newFleetTable returns the table a fleet's clusters decode with: one
// that shares sub-objects too with Deduplicate and no transform (a
// transform could write into what the decoder shares, so with one the
// queue's pass deduplicates after it, see Informer.deduplicate), strings
// only otherwise.
func newFleetTable[T Object](opts InformerOptions[T]) *DecodingTable {
	return NewDecodingTable(inherit(opts.Deduplicate, false) && opts.Transform == nil)
}

// fleetName names a fleet in errors.
func fleetName[T Object](name string) string {
	if name == "" {
		var zero T
		return fmt.Sprintf("Fleet %T", zero)
	}
	return "Fleet " + name
}

// Run runs the fleet's clusters, those added before and those added while
// it runs, and blocks until ctx is done and every goroutine the fleet
// started has returned: each cluster's informer, then the removals still
// delivering deletes. Its logger comes from ctx. A fleet runs once; later
// calls return at once.
func (f *Fleet[T]) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if f.opts.Informer.Name != "" {
		logger = klog.LoggerWithValues(logger, "fleet", f.opts.Informer.Name)
	}
	f.mu.Lock()
	if f.run != nil {
		f.mu.Unlock()
		logger.Info("Warning: the fleet has already been started, ignoring Run")
		return
	}
	f.run, f.logger = ctx, logger
	for _, c := range *f.view.Load() {
		if run := c.run.Load(); run != nil {
			f.start(c, run)
		}
	}
	f.mu.Unlock()
	if p, ok := f.opts.Informer.Metrics.(FleetMetricsProvider); ok {
		remove := p.AddFleet(f.metricsID(), f.Stats)
		defer remove()
	}
	if f.opts.Group != nil {
		f.followGroup(ctx)
	}
	<-ctx.Done()
	f.mu.Lock()
	f.stopped = true
	f.mu.Unlock()
	f.running.Wait()
}

// metricsID is the fleet's identity for a FleetMetricsProvider: named as
// an informer of its options would be.
func (f *Fleet[T]) metricsID() InformerID {
	cfg := config[T]{Name: f.opts.Informer.Name, Resource: f.opts.Informer.Resource}
	return cfg.metricsID()
}

// AddCluster adds the cluster config points to under name, listed and
// watched through a REST ListerWatcher of FleetOptions.REST with an HTTP
// client of its own. The cluster starts at once if the fleet runs, at Run
// otherwise; AddCluster never waits for it. It fails if name is invalid or
// taken, if config cannot give a client, or once Run has returned.
//
// name is the cluster's identity in the fleet: it is passed to handlers,
// keys the Lister, names the cluster's snapshot directory and is part of
// its snapshot's scope, so that one cluster's snapshot is never restored
// into another. It must be a non-empty name of at most 253 characters
// without "/", not "." or "..".
func (f *Fleet[T]) AddCluster(name string, config *rest.Config) error {
	if err := ValidateClusterName(name); err != nil {
		return fmt.Errorf("%s: AddCluster: %w", fleetName[T](f.opts.Informer.Name), err)
	}
	lw, client, err := f.restListerWatcher(config)
	if err != nil {
		return fmt.Errorf("%s: AddCluster %q: %w", fleetName[T](f.opts.Informer.Name), name, err)
	}
	if err := f.add(name, lw, client); err != nil {
		client.CloseIdleConnections()
		return err
	}
	return nil
}

// AddClusterListerWatcher adds a cluster listed and watched through lw
// under name, as [Fleet.AddCluster] does: for a cluster reached another
// way (a dynamic or metadata ListerWatcher, a test's fake). A ListerWatcher
// of this package built from a *rest.Config decodes with the fleet's intern
// table; any other holds its own strings. [Fleet.UpdateCluster] does not
// apply to it.
func (f *Fleet[T]) AddClusterListerWatcher(name string, lw ListerWatcher[T]) error {
	if err := ValidateClusterName(name); err != nil {
		return fmt.Errorf("%s: AddClusterListerWatcher: %w", fleetName[T](f.opts.Informer.Name), err)
	}
	if lw == nil {
		return fmt.Errorf("%s: AddClusterListerWatcher %q: nil ListerWatcher", fleetName[T](f.opts.Informer.Name), name)
	}
	return f.add(name, f.decodingWithFleet(lw), nil)
}

// ValidateClusterName returns why name cannot name a cluster of a fleet
// (this package's [Fleet], or crcache's), or nil: a cluster's name must be
// a non-empty name of at most 253 characters without "/", not "." or
// "..", since it names the cluster's snapshot directory.
func ValidateClusterName(name string) error {
	switch {
	case name == "":
		return errors.New("cluster name is empty")
	case len(name) > 253:
		return fmt.Errorf("cluster name %.20q… is longer than 253 characters", name)
	case strings.ContainsAny(name, "/\x00"), name == ".", name == "..":
		return fmt.Errorf("cluster name %q: names a path, not a directory", name)
	}
	return nil
}

// restListerWatcher returns the REST ListerWatcher of a cluster at config,
// decoding with the fleet's table, and the HTTP client of its own it
// requests through.
func (f *Fleet[T]) restListerWatcher(config *rest.Config) (ListerWatcher[T], *http.Client, error) {
	if config == nil {
		return nil, nil, errors.New("rest config is nil")
	}
	// A transport of the cluster's own, which its removal closes: client-go
	// hands out a shared one to configs without TLS options, but never to a
	// config naming a proxy function (see NewFactory).
	cfg := rest.CopyConfig(config)
	if cfg.Proxy == nil {
		cfg.Proxy = http.ProxyFromEnvironment
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("HTTP client: %w", err)
	}
	opts := f.opts.REST
	opts.HTTPClient, opts.DecodingTable = client, f.table
	lw, err := NewRESTListerWatcher[T](config, opts)
	if err != nil {
		client.CloseIdleConnections()
		return nil, nil, err
	}
	return lw, client, nil
}

// decodingWithFleet returns lw decoding with the fleet's table when lw
// can (see describedListerWatcher), lw itself otherwise.
func (f *Fleet[T]) decodingWithFleet(lw ListerWatcher[T]) ListerWatcher[T] {
	d, ok := lw.(describedListerWatcher[T])
	if !ok || d.description().interns == f.table.table || checkDecodingWith(d.description(), f.table.table) != nil {
		return lw
	}
	shared, err := d.decodingWith(f.table.table)
	if err != nil {
		return lw
	}
	return shared
}

// add adds a cluster over lw (requesting through client, nil if not the
// fleet's own), and starts it if the fleet runs it.
func (f *Fleet[T]) add(name string, lw ListerWatcher[T], client *http.Client) error {
	c := &fleetCluster[T]{name: name, lw: newClusterListerWatcher(name, lw, client, f.slots, f.clock)}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.stopped:
		return fmt.Errorf("%s: AddCluster %q: the fleet has stopped", fleetName[T](f.opts.Informer.Name), name)
	case f.clusters[name] != nil:
		return fmt.Errorf("%s: AddCluster %q: the fleet has a cluster of that name", fleetName[T](f.opts.Informer.Name), name)
	}
	if f.opts.Group == nil || f.holds(name) {
		// Built at once, so that a cluster the fleet cannot run is refused.
		run, err := f.newRun(c)
		if err != nil {
			return fmt.Errorf("%s: cluster %q: %w", fleetName[T](f.opts.Informer.Name), name, err)
		}
		c.run.Store(run)
		if f.run != nil {
			f.start(c, run)
		}
	}
	f.clusters[name] = c
	f.publishAdded(c)
	return nil
}

// newRun returns a new run of cluster c with the fleet's handlers
// registered; f.mu held.
func (f *Fleet[T]) newRun(c *fleetCluster[T]) (*clusterRun[T], error) {
	inf, err := f.newClusterInformer(c.name, c.lw)
	if err != nil {
		return nil, err
	}
	run := &clusterRun[T]{inf: inf, regs: map[*FleetRegistration[T]]*Registration{}, done: make(chan struct{})}
	for _, r := range f.handlers {
		reg, err := inf.AddEventHandlerWithOptions(clusterHandler[T]{cluster: c.name, h: r.handler}, r.opts)
		if err != nil {
			return nil, err
		}
		run.regs[r] = reg
	}
	return run, nil
}

// newClusterInformer returns the informer of cluster name over lw.
func (f *Fleet[T]) newClusterInformer(name string, lw *clusterListerWatcher[T]) (*Informer[T], error) {
	opts := f.opts.Informer
	opts.Name = name
	if f.opts.Informer.Name != "" {
		opts.Name = f.opts.Informer.Name + "/" + name
	}
	opts.DisableWatchList = true
	if opts.Snapshot.Dir != "" {
		opts.Snapshot.Dir = filepath.Join(opts.Snapshot.Dir, name)
	}
	cfg := resolveConfig(FactoryOptions{}, opts)
	cfg.interns = f.table.table
	return newInformer[T](lw, cfg, opts.Indexers)
}

// publishAdded and publishRemoved replace the sorted view of the clusters
// with a copy that holds c, or no longer holds the cluster name; f.mu held.
// Each copies the view once (readers hold the old one) and sorts nothing.
func (f *Fleet[T]) publishAdded(c *fleetCluster[T]) {
	old := *f.view.Load()
	at, _ := slices.BinarySearchFunc(old, c.name, compareClusterName[T])
	view := make([]*fleetCluster[T], 0, len(old)+1)
	view = append(append(append(view, old[:at]...), c), old[at:]...)
	f.view.Store(&view)
}

func (f *Fleet[T]) publishRemoved(name string) {
	old := *f.view.Load()
	if at, found := slices.BinarySearchFunc(old, name, compareClusterName[T]); found {
		view := make([]*fleetCluster[T], 0, len(old)-1)
		view = append(append(view, old[:at]...), old[at+1:]...)
		f.view.Store(&view)
	}
}

// compareClusterName orders the view's clusters by name.
func compareClusterName[T Object](c *fleetCluster[T], name string) int {
	return strings.Compare(c.name, name)
}

// start runs run, cluster c's informer, once a previous run of a cluster
// of the same name has delivered its deletes; f.mu held and f.run set.
func (f *Fleet[T]) start(c *fleetCluster[T], run *clusterRun[T]) {
	ctx, cancel := context.WithCancel(klog.NewContext(f.run, klog.LoggerWithValues(f.logger, "cluster", c.name)))
	run.cancel = cancel
	run.started.Store(f.clock.Now().UnixNano())
	after := f.leaving[c.name]
	f.running.Go(func() {
		defer close(run.done)
		defer cancel()
		if after != nil {
			select {
			case <-after:
			case <-ctx.Done():
				return
			}
		}
		run.inf.Run(ctx)
	})
}

// UpdateCluster replaces the credentials (or any other client setting) of
// the cluster added under name by AddCluster with config's, without
// dropping its cache or relisting: every request from now on goes through
// a client made from config. The watch in progress goes on (the server
// checked its credentials when it was opened) until it ends, and the next
// one uses config; the old client's connections close once idle. config
// must name the same server, host and
// certificate authorities, as the cluster's: a different server is a
// different cluster (remove it and add the new one). It fails for a cluster
// added by AddClusterListerWatcher.
func (f *Fleet[T]) UpdateCluster(name string, config *rest.Config) error {
	f.mu.Lock()
	c := f.clusters[name]
	f.mu.Unlock()
	if c == nil {
		return fmt.Errorf("%s: UpdateCluster %q: no such cluster", fleetName[T](f.opts.Informer.Name), name)
	}
	if c.lw.client == nil {
		return fmt.Errorf("%s: UpdateCluster %q: the cluster was added with its own ListerWatcher", fleetName[T](f.opts.Informer.Name), name)
	}
	if config != nil {
		if was, now := c.lw.desc.listed.server, serverIdentityOf(config); was.Host != now.Host || was.CA != now.CA {
			return fmt.Errorf("%s: UpdateCluster %q: the config names another server (%s, not %s): remove the cluster and add the new one", fleetName[T](f.opts.Informer.Name), name, now.Host, was.Host)
		}
	}
	lw, client, err := f.restListerWatcher(config)
	if err != nil {
		return fmt.Errorf("%s: UpdateCluster %q: %w", fleetName[T](f.opts.Informer.Name), name, err)
	}
	c.lw.replace(lw, client)
	return nil
}

// RemoveCluster removes the cluster added under name and returns at once:
// its informer stops, the fleet's Lister no longer holds its objects, and
// each handler then receives OnDelete for every object the cluster's cache
// held, with DeletedObject.ClusterRemoved set (the objects were not
// deleted: a controller should forget them). Notifications the cluster's
// handlers had not received yet are dropped, as when an informer stops. A
// cluster re-added under the same name starts once these deletes have been
// delivered. Its goroutines, HTTP connections and the memory of its
// objects are released (the fleet's shared strings and sub-objects go when
// no cached object holds them). It fails if there is no such cluster.
func (f *Fleet[T]) RemoveCluster(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.clusters[name]
	if c == nil {
		return fmt.Errorf("%s: RemoveCluster %q: no such cluster", fleetName[T](f.opts.Informer.Name), name)
	}
	delete(f.clusters, name)
	f.publishRemoved(name)
	f.retire(c, func(d *DeletedObject[T]) { d.ClusterRemoved = true }, c.lw.close)
	return nil
}

// retire stops cluster c's run, if it has one, and then delivers to the
// run's handlers a delete, marked by mark, for every object its cache held,
// and calls then (if not nil); f.mu held. A run that never started has
// delivered nothing, and delivers no delete.
func (f *Fleet[T]) retire(c *fleetCluster[T], mark func(*DeletedObject[T]), then func()) {
	run := c.run.Swap(nil)
	if run == nil || run.cancel == nil {
		if run != nil {
			run.inf.stopUnstarted()
		}
		if then != nil {
			then()
		}
		return
	}
	run.cancel()
	handlers := make([]*FleetRegistration[T], 0, len(run.regs))
	for _, r := range f.handlers {
		if run.regs[r] != nil {
			handlers = append(handlers, r)
		}
	}
	left := make(chan struct{})
	prev := f.leaving[c.name]
	f.leaving[c.name] = left
	f.running.Go(func() {
		defer close(left)
		<-run.done
		if prev != nil {
			<-prev
		}
		f.deliverRetired(c.name, run, handlers, mark)
		if then != nil {
			then()
		}
		f.mu.Lock()
		if f.leaving[c.name] == left {
			delete(f.leaving, c.name)
		}
		f.mu.Unlock()
	})
}

// deliverRetired delivers to handlers the deletes of cluster's stopped
// run, marked by mark, each handler in turn, unless the fleet stops
// meanwhile.
func (f *Fleet[T]) deliverRetired(cluster string, run *clusterRun[T], handlers []*FleetRegistration[T], mark func(*DeletedObject[T])) {
	objs := run.inf.indexer.List()
	logger := klog.LoggerWithValues(f.logger, "cluster", cluster)
	for _, r := range handlers {
		for _, obj := range objs {
			if f.run.Err() != nil || r.removed.Load() {
				break
			}
			d := DeletedObject[T]{Name: NameOf(obj), Object: obj}
			mark(&d)
			r.deliverDelete(logger, cluster, d)
		}
	}
}

// Clusters returns the names of the fleet's clusters, sorted.
func (f *Fleet[T]) Clusters() []string {
	view := *f.view.Load()
	names := make([]string, len(view))
	for i, c := range view {
		names[i] = c.name
	}
	return names
}

// HasSynced reports whether the fleet is ready: Run has started (and,
// with a Group, the group's members are known), and every cluster this
// replica runs has synced (its informer's HasSynced) or failed (not synced
// within FleetOptions.SyncTimeout of its start). A fleet of no cluster is
// ready once it runs. Readiness can turn false again when a cluster is
// added or gained from the group. [Fleet.Stats] names the failed clusters
// and their last errors.
func (f *Fleet[T]) HasSynced() bool {
	f.mu.Lock()
	ready := f.run != nil && (f.opts.Group == nil || f.groupKnown)
	f.mu.Unlock()
	if !ready {
		return false
	}
	now := f.clock.Now()
	for _, c := range *f.view.Load() {
		if f.state(c, now) == ClusterSyncing {
			return false
		}
	}
	return true
}

// ClusterState is where a cluster of a [Fleet] is in its sync.
type ClusterState string

// The states of a cluster.
const (
	// ClusterSyncing: the cluster has not synced yet, and not for longer
	// than FleetOptions.SyncTimeout (or the fleet does not run).
	ClusterSyncing ClusterState = "Syncing"
	// ClusterSynced: the cluster's first list has been delivered.
	ClusterSynced ClusterState = "Synced"
	// ClusterFailed: the cluster has not synced within SyncTimeout; it
	// goes on trying.
	ClusterFailed ClusterState = "Failed"
	// ClusterElsewhere: another member of the fleet's Group runs the
	// cluster; this replica holds none of its objects.
	ClusterElsewhere ClusterState = "Elsewhere"
)

// state returns c's state at now.
func (f *Fleet[T]) state(c *fleetCluster[T], now time.Time) ClusterState {
	run := c.run.Load()
	if run == nil {
		return ClusterElsewhere
	}
	switch started := run.started.Load(); {
	case run.inf.HasSynced():
		return ClusterSynced
	case started != 0 && f.opts.SyncTimeout > 0 && now.Sub(time.Unix(0, started)) >= f.opts.SyncTimeout:
		return ClusterFailed
	}
	return ClusterSyncing
}

// FleetStats describes a [Fleet]'s clusters.
type FleetStats struct {
	// Clusters describes each cluster, sorted by name.
	Clusters []ClusterStats
	// Synced, Syncing, Failed and Elsewhere count the clusters in each
	// state.
	Synced, Syncing, Failed, Elsewhere int
}

// ClusterStats describes one cluster of a [Fleet].
type ClusterStats struct {
	// Name is the cluster's name in the fleet.
	Name string
	// State is where the cluster is in its sync.
	State ClusterState
	// Objects is the number of objects its cache holds.
	Objects int
	// LastError is the error of its last failed list or watch, until one
	// succeeds; nil if none.
	LastError error
	// Informer are its informer's counters; zero for a cluster another
	// member runs.
	Informer InformerStats
}

// Stats returns the state, size, last error and counters of every cluster.
func (f *Fleet[T]) Stats() FleetStats {
	now := f.clock.Now()
	var s FleetStats
	for _, c := range *f.view.Load() {
		cs := ClusterStats{Name: c.name, State: f.state(c, now)}
		if run := c.run.Load(); run != nil {
			cs.Objects, cs.LastError, cs.Informer = run.inf.indexer.size(), run.inf.lastError(), run.inf.Stats()
		}
		switch cs.State {
		case ClusterSynced:
			s.Synced++
		case ClusterFailed:
			s.Failed++
		case ClusterElsewhere:
			s.Elsewhere++
		default:
			s.Syncing++
		}
		s.Clusters = append(s.Clusters, cs)
	}
	return s
}

// FleetMetricsProvider is a [MetricsProvider] that also receives the
// state of fleets: a [Fleet] whose InformerOptions.Metrics implements it
// registers itself with AddFleet when Run starts, and calls the returned
// remove when Run returns, after its clusters' informers (registered with
// AddInformer as any informer is, named "<fleet>/<cluster>") have been
// removed. read returns [Fleet.Stats]: each cluster's state and last error,
// which no informer's metrics say (an informer does not know its fleet's
// SyncTimeout). It is safe for concurrent use and may be called at any
// time, even after remove; per cluster it costs what Informer.Stats does. The
// module github.com/kubetyped/informer/metrics/prometheus implements it.
type FleetMetricsProvider interface {
	MetricsProvider
	AddFleet(id InformerID, read func() FleetStats) (remove func())
}

// fleetCluster is one cluster of a fleet, as added.
type fleetCluster[T Object] struct {
	name string
	lw   *clusterListerWatcher[T]
	// run is the cluster's informer in this replica; nil while another
	// member of the fleet's group holds the cluster. Written under the
	// fleet's mu.
	run atomic.Pointer[clusterRun[T]]
}

// clusterRun is one run of a cluster's informer: an informer runs once, so
// a cluster that moves away and back gets a new one.
type clusterRun[T Object] struct {
	inf *Informer[T]
	// regs are the run's registrations of the fleet's handlers; guarded
	// by the fleet's mu.
	regs map[*FleetRegistration[T]]*Registration
	// cancel stops the run; set by start, under the fleet's mu.
	cancel context.CancelFunc
	// started is when the run started (UnixNano), 0 before.
	started atomic.Int64
	// done is closed once the run's goroutine has returned.
	done chan struct{}
}
