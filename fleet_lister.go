package informer

import (
	"k8s.io/apimachinery/pkg/labels"
)

// ClusterObject is an object of a [Fleet] with its cluster's name.
type ClusterObject[T Object] struct {
	Cluster string
	Object  T
}

// FleetLister reads a [Fleet]'s cache: one cluster's, through the
// everyday [Lister] of [FleetLister.Cluster], or every cluster's at once.
// The fleet-wide reads are served by each cluster's indexes (the label
// index, the namespace index, the user's Indexers), so that they cost a
// lookup per cluster and a copy per object found, not a scan of the fleet.
// They read each cluster's cache in turn, under its read lock for that
// cluster only: the result is each cluster's state at the moment it was
// read, clusters sorted by name, each cluster's objects in its Lister's
// order. A cluster that is being added or removed is either wholly in the
// result or not at all. Its methods are safe for concurrent use; the
// objects are shared with the cache and must not be modified.
type FleetLister[T Object] struct {
	fleet *Fleet[T]
}

// Lister returns the fleet's Lister.
func (f *Fleet[T]) Lister() *FleetLister[T] { return &FleetLister[T]{fleet: f} }

// Cluster returns the Lister of the cluster named name, and whether this
// replica runs that cluster (false for a cluster the fleet does not have,
// or that another member of its Group runs). The Lister stays valid after
// the cluster is removed, holding what the cluster held then.
func (l *FleetLister[T]) Cluster(name string) (*Lister[T], bool) {
	f := l.fleet
	f.mu.Lock()
	c := f.clusters[name]
	f.mu.Unlock()
	if c == nil {
		return nil, false
	}
	run := c.run.Load()
	if run == nil {
		return nil, false
	}
	return run.inf.lister, true
}

// List returns the objects of every cluster that match selector.
func (l *FleetLister[T]) List(selector labels.Selector) ([]ClusterObject[T], error) {
	return l.collect(func(c *Lister[T]) ([]T, error) { return c.List(selector) })
}

// ByIndex returns the objects of every cluster whose index indexName holds
// indexedValue; it fails if the index does not exist.
func (l *FleetLister[T]) ByIndex(indexName, indexedValue string) ([]ClusterObject[T], error) {
	return l.collect(func(c *Lister[T]) ([]T, error) { return c.ByIndex(indexName, indexedValue) })
}

// Namespace returns a lister of namespace's objects in every cluster.
func (l *FleetLister[T]) Namespace(namespace string) FleetNamespaceLister[T] {
	return FleetNamespaceLister[T]{lister: l, namespace: namespace}
}

// collect gathers read's answer for each cluster, in the order of the
// fleet's view.
func (l *FleetLister[T]) collect(read func(*Lister[T]) ([]T, error)) ([]ClusterObject[T], error) {
	var out []ClusterObject[T]
	for _, c := range *l.fleet.view.Load() {
		run := c.run.Load()
		if run == nil {
			continue
		}
		objs, err := read(run.inf.lister)
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			out = append(out, ClusterObject[T]{Cluster: c.name, Object: obj})
		}
	}
	return out, nil
}

// FleetNamespaceLister reads one namespace of every cluster of a
// [Fleet], as [FleetLister] does.
type FleetNamespaceLister[T Object] struct {
	lister    *FleetLister[T]
	namespace string
}

// List returns the objects of the namespace in every cluster that match
// selector.
func (l FleetNamespaceLister[T]) List(selector labels.Selector) ([]ClusterObject[T], error) {
	return l.lister.collect(func(c *Lister[T]) ([]T, error) { return c.Namespace(l.namespace).List(selector) })
}
