package crcache

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kubetyped/informer"
)

// InformerCost is what one informer of a cache keeps on the heap.
type InformerCost struct {
	// GroupVersionKind is the kind the informer caches.
	GroupVersionKind schema.GroupVersionKind
	// Form is how it caches the objects: "typed", "unstructured", or
	// "metadata" (as *metav1.PartialObjectMetadata).
	Form string
	// Namespace is the namespace it lists and watches; empty for all
	// namespaces (and for cluster-scoped kinds).
	Namespace string
	// Report is its cost report, by field (see [informer.Informer.Cost]).
	Report informer.CostReport
}

// Cost reports what each informer of c, a cache made by [New], [NewWith]
// or a [Fleet], keeps on the heap, by field: one [InformerCost] per
// informer (per kind and form, and per namespace of a cache with several),
// the largest first. The objects are walked without the informers' locks, as
// [informer.Informer.Cost] does, informer by informer; a value shared
// between informers (or the clusters of a fleet) is counted in each. It fails if c is not such a cache,
// and stops early with ctx's error if ctx is done. Safe for concurrent use,
// while the cache runs.
func Cost(ctx context.Context, c cache.Cache) ([]InformerCost, error) {
	if fc, ok := c.(*fleetCache); ok {
		c = fc.Cache
	}
	var sets []*informerSet
	switch c := c.(type) {
	case *informerSet:
		sets = append(sets, c)
	case *multiNamespaceCache:
		sets = append(sets, c.sets()...)
	case *byGVKCache:
		for _, kc := range c.caches {
			switch kc := kc.(type) {
			case *informerSet:
				sets = append(sets, kc)
			case *multiNamespaceCache:
				sets = append(sets, kc.sets()...)
			}
		}
		if def, ok := c.defaultCache.(*informerSet); ok {
			sets = append(sets, def)
		} else if def, ok := c.defaultCache.(*multiNamespaceCache); ok {
			sets = append(sets, def.sets()...)
		}
	default:
		return nil, fmt.Errorf("crcache: Cost needs a cache made by crcache.New, NewWith or a Fleet, got a %T", c)
	}
	var costs []InformerCost
	for _, s := range sets {
		for _, e := range s.entriesForCost() {
			report, err := e.inf.inf.Cost(ctx)
			if err != nil {
				return nil, err
			}
			costs = append(costs, InformerCost{GroupVersionKind: e.key.gvk, Form: e.key.form.String(), Namespace: s.namespace, Report: report})
		}
	}
	slices.SortFunc(costs, func(a, b InformerCost) int {
		return cmp.Or(cmp.Compare(b.Report.Bytes, a.Report.Bytes), cmp.Compare(a.GroupVersionKind.String(), b.GroupVersionKind.String()),
			cmp.Compare(a.Form, b.Form), cmp.Compare(a.Namespace, b.Namespace))
	})
	return costs, nil
}

// sets returns the informer sets of c: one per namespace, and the
// cluster-scoped kinds' if any.
func (c *multiNamespaceCache) sets() []*informerSet {
	var sets []*informerSet
	for _, s := range c.namespaces {
		sets = append(sets, s)
	}
	if c.cluster != nil {
		sets = append(sets, c.cluster)
	}
	return sets
}

// entriesForCost returns the informers of s not removed.
func (s *informerSet) entriesForCost() []*entry {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var entries []*entry
	for _, e := range s.entries {
		if !e.removed {
			entries = append(entries, e)
		}
	}
	return entries
}
