package informer

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// FleetEventHandler handles the notifications of a [Fleet]: those of each
// cluster's informer (see [ResourceEventHandler]), with the cluster's name.
// The notifications of one cluster come in order, one at a time, from the
// cluster's own goroutine; those of different clusters may come at the same
// time, so that a slow cluster's events never hold up another's.
type FleetEventHandler[T Object] interface {
	// OnAdd is called for an object added to cluster's cache; see
	// [ResourceEventHandler].OnAdd.
	OnAdd(cluster string, obj T, isInInitialList bool)
	// OnUpdate is called for an object of cluster's cache that changed
	// (or was resynced); see [ResourceEventHandler].OnUpdate.
	OnUpdate(cluster string, oldObj, newObj T)
	// OnDelete is called for an object that left cluster's cache: deleted,
	// or, with obj.ClusterRemoved, because the cluster was removed from the
	// fleet, or, with obj.Moved, because another replica of the fleet's
	// Group now runs the cluster.
	OnDelete(cluster string, obj DeletedObject[T])
}

// FleetEventHandlerFuncs adapts up to three functions to a
// [FleetEventHandler]. A nil function ignores its notifications. It is
// safe to copy.
type FleetEventHandlerFuncs[T Object] struct {
	AddFunc    func(cluster string, obj T, isInInitialList bool)
	UpdateFunc func(cluster string, oldObj, newObj T)
	DeleteFunc func(cluster string, obj DeletedObject[T])
}

// OnAdd calls AddFunc if it is set.
func (f FleetEventHandlerFuncs[T]) OnAdd(cluster string, obj T, isInInitialList bool) {
	if f.AddFunc != nil {
		f.AddFunc(cluster, obj, isInInitialList)
	}
}

// OnUpdate calls UpdateFunc if it is set.
func (f FleetEventHandlerFuncs[T]) OnUpdate(cluster string, oldObj, newObj T) {
	if f.UpdateFunc != nil {
		f.UpdateFunc(cluster, oldObj, newObj)
	}
}

// OnDelete calls DeleteFunc if it is set.
func (f FleetEventHandlerFuncs[T]) OnDelete(cluster string, obj DeletedObject[T]) {
	if f.DeleteFunc != nil {
		f.DeleteFunc(cluster, obj)
	}
}

// ClusterObjectName names an object of a [Fleet]: its cluster, namespace
// and name. It is the key of [EnqueueFleet]'s workqueue.
type ClusterObjectName struct {
	Cluster string
	ObjectName
}

// String returns "cluster/namespace/name" ("cluster/name" for a
// cluster-scoped object).
func (n ClusterObjectName) String() string { return n.Cluster + "/" + n.ObjectName.String() }

// EnqueueFleet returns a handler that adds the ClusterObjectName of every
// added, updated and deleted object to q, as [Enqueue] does for one
// informer: a deletion enqueues the name the object was stored under, but
// an object that left only because its cluster was removed
// (DeletedObject.ClusterRemoved) or moved to another replica of the
// fleet's Group (DeletedObject.Moved) is not enqueued. q must not be nil and
// must be safe for concurrent use, as client-go's workqueues are: the
// clusters' notifications come from goroutines of their own.
func EnqueueFleet[T Object](q workqueue.TypedInterface[ClusterObjectName]) FleetEventHandlerFuncs[T] {
	return FleetEventHandlerFuncs[T]{
		AddFunc: func(cluster string, obj T, _ bool) { q.Add(ClusterObjectName{cluster, NameOf(obj)}) },
		UpdateFunc: func(cluster string, _, newObj T) {
			q.Add(ClusterObjectName{cluster, NameOf(newObj)})
		},
		DeleteFunc: func(cluster string, d DeletedObject[T]) {
			if !d.ClusterRemoved && !d.Moved {
				q.Add(ClusterObjectName{cluster, d.Name})
			}
		},
	}
}

// clusterHandler is a fleet handler as one cluster's informer sees it.
type clusterHandler[T Object] struct {
	cluster string
	h       FleetEventHandler[T]
}

func (c clusterHandler[T]) OnAdd(obj T, initial bool)   { c.h.OnAdd(c.cluster, obj, initial) }
func (c clusterHandler[T]) OnUpdate(oldObj, newObj T)   { c.h.OnUpdate(c.cluster, oldObj, newObj) }
func (c clusterHandler[T]) OnDelete(d DeletedObject[T]) { c.h.OnDelete(c.cluster, d) }

// FleetRegistration is a handler's registration with a [Fleet]: one
// registration with each cluster's informer. Its methods are safe for
// concurrent use.
type FleetRegistration[T Object] struct {
	fleet   *Fleet[T]
	handler FleetEventHandler[T]
	opts    HandlerOptions
	// removed is set by RemoveEventHandler.
	removed atomic.Bool
	// panics counts the panics of the handler's OnDelete calls for the
	// clusters that left (removed, or moved to another replica), which no
	// informer's listener delivers.
	panics atomic.Int64
}

// AddEventHandler adds h with default options: see
// [Fleet.AddEventHandlerWithOptions].
func (f *Fleet[T]) AddEventHandler(h FleetEventHandler[T]) (*FleetRegistration[T], error) {
	return f.AddEventHandlerWithOptions(h, HandlerOptions{})
}

// AddEventHandlerWithOptions adds h to every cluster of the fleet, and to
// every cluster added later, with opts (see
// [Informer.AddEventHandlerWithOptions]): for each cluster, h receives the
// cluster's initial list as adds (isInInitialList true), or, for a cluster
// already running, its current contents as adds first, then the cluster's
// live notifications. Each cluster buffers h's notifications on its own
// (HandlerOptions.MaxBuffered applies per cluster). It never waits for the
// clusters, so handlers may call it. It fails once the fleet has stopped.
func (f *Fleet[T]) AddEventHandlerWithOptions(h FleetEventHandler[T], opts HandlerOptions) (*FleetRegistration[T], error) {
	if h == nil {
		return nil, fmt.Errorf("%s: cannot add a nil event handler", fleetName[T](f.opts.Informer.Name))
	}
	r := &FleetRegistration[T]{fleet: f, handler: h, opts: opts}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return nil, fmt.Errorf("%s: handler was not added because the fleet has stopped", fleetName[T](f.opts.Informer.Name))
	}
	added := map[*clusterRun[T]]*Registration{}
	for _, c := range f.clusters {
		run := c.run.Load()
		if run == nil {
			continue
		}
		reg, err := run.inf.AddEventHandlerWithOptions(clusterHandler[T]{cluster: c.name, h: h}, opts)
		if err != nil {
			for run, reg := range added {
				_ = run.inf.RemoveEventHandler(reg)
			}
			return nil, fmt.Errorf("%s: cluster %q: %w", fleetName[T](f.opts.Informer.Name), c.name, err)
		}
		added[run] = reg
	}
	for run, reg := range added {
		run.regs[r] = reg
	}
	f.handlers = append(f.handlers, r)
	return r, nil
}

// RemoveEventHandler removes r's handler from every cluster: it receives
// no notification once this returns, but for one being delivered. It is
// idempotent, and fails for a registration of another fleet.
func (f *Fleet[T]) RemoveEventHandler(r *FleetRegistration[T]) error {
	if r == nil || r.fleet != f {
		return errors.New("the registration is not one of this fleet's")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.removed.Swap(true) {
		return nil
	}
	var errs []error
	for _, c := range f.clusters {
		if run := c.run.Load(); run != nil && run.regs[r] != nil {
			errs = append(errs, run.inf.RemoveEventHandler(run.regs[r]))
			delete(run.regs, r)
		}
	}
	for k, h := range f.handlers {
		if h == r {
			f.handlers = append(f.handlers[:k:k], f.handlers[k+1:]...)
			break
		}
	}
	return errors.Join(errs...)
}

// HasSynced reports whether the handler has received the initial contents
// of every cluster of the fleet that has synced, and the fleet is ready
// (see [Fleet.HasSynced]): a failed cluster is not waited for.
func (r *FleetRegistration[T]) HasSynced() bool {
	f := r.fleet
	if !f.HasSynced() {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.clusters {
		if run := c.run.Load(); run != nil && run.regs[r] != nil && run.inf.HasSynced() && !run.regs[r].HasSynced() {
			return false
		}
	}
	return true
}

// Stats returns the handler's counters summed over the fleet's clusters,
// with the panics of its deletes for removed clusters.
func (r *FleetRegistration[T]) Stats() HandlerStats {
	f := r.fleet
	f.mu.Lock()
	regs := make([]*Registration, 0, len(f.clusters))
	for _, c := range f.clusters {
		if run := c.run.Load(); run != nil && run.regs[r] != nil {
			regs = append(regs, run.regs[r])
		}
	}
	f.mu.Unlock()
	var s HandlerStats
	for _, reg := range regs {
		rs := reg.Stats()
		s.Pending += rs.Pending
		s.Delivered += rs.Delivered
		s.Panics += rs.Panics
		s.Coalesced += rs.Coalesced
		s.Dropped += rs.Dropped
	}
	s.Panics += r.panics.Load()
	return s
}

// deliverDelete calls the handler's OnDelete with d, for an object of a
// cluster that was removed or moved to another replica, recovering a
// panic, which it counts and logs (the first with its stack).
func (r *FleetRegistration[T]) deliverDelete(logger klog.Logger, cluster string, d DeletedObject[T]) {
	defer func() {
		if p := recover(); p != nil {
			if r.panics.Add(1) == 1 {
				logger.Error(fmt.Errorf("%v", p), "Event handler panicked on the delete of a cluster that left", "object", d.Name.String(), "stack", string(debug.Stack()))
			}
		}
	}()
	r.handler.OnDelete(cluster, d)
}
