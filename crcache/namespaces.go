package crcache

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// multiNamespaceCache holds one informerSet per configured namespace (the
// key "" standing for every namespace not configured otherwise) and, if
// cluster is set, one for cluster-scoped kinds: controller-runtime's
// multi-namespace cache, except that a list over all namespaces collects
// the objects of every namespace first and copies them once.
type multiNamespaceCache struct {
	*shared
	namespaces map[string]*informerSet
	cluster    *informerSet // nil: cluster-scoped kinds are not served
}

var _ cache.Cache = (*multiNamespaceCache)(nil)

// isNamespaced reports whether obj's kind is namespaced.
func (c *multiNamespaceCache) isNamespaced(obj runtime.Object) (bool, error) {
	return apiutil.IsObjectNamespaced(obj, c.scheme, c.mapper)
}

// clusterSet returns the set serving cluster-scoped kinds, or an error.
func (c *multiNamespaceCache) clusterSet(what any) (*informerSet, error) {
	if c.cluster == nil {
		return nil, fmt.Errorf("%T is cluster-scoped, but this cache only serves namespaces %s", what, strings.Join(c.sortedNamespaces(), ", "))
	}
	return c.cluster, nil
}

func (c *multiNamespaceCache) sortedNamespaces() []string {
	return slices.Sorted(maps.Keys(c.namespaces))
}

// GetInformer returns an informer that combines the informers for obj of
// every namespace.
func (c *multiNamespaceCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	namespaced, err := c.isNamespaced(obj)
	if err != nil {
		return nil, err
	}
	return c.combine(namespaced, obj, func(s *informerSet) (cache.Informer, error) { return s.GetInformer(ctx, obj, opts...) })
}

// GetInformerForKind is GetInformer for a kind.
func (c *multiNamespaceCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	namespaced, err := apiutil.IsGVKNamespaced(gvk, c.mapper)
	if err != nil {
		return nil, err
	}
	return c.combine(namespaced, gvk, func(s *informerSet) (cache.Informer, error) { return s.GetInformerForKind(ctx, gvk, opts...) })
}

func (c *multiNamespaceCache) combine(namespaced bool, what any, get func(*informerSet) (cache.Informer, error)) (cache.Informer, error) {
	if !namespaced {
		s, err := c.clusterSet(what)
		if err != nil {
			return nil, err
		}
		inf, err := get(s)
		if err != nil {
			return nil, err
		}
		return &multiInformer{informers: map[string]cache.Informer{metav1.NamespaceAll: inf}}, nil
	}
	infs := make(map[string]cache.Informer, len(c.namespaces))
	for ns, s := range c.namespaces {
		inf, err := get(s)
		if err != nil {
			return nil, err
		}
		infs[ns] = inf
	}
	return &multiInformer{informers: infs}, nil
}

// RemoveInformer removes the informers for obj of every namespace.
func (c *multiNamespaceCache) RemoveInformer(ctx context.Context, obj client.Object) error {
	return c.each(obj, func(s *informerSet) error { return s.RemoveInformer(ctx, obj) })
}

// IndexField adds the index to the informers for obj of every namespace.
func (c *multiNamespaceCache) IndexField(ctx context.Context, obj client.Object, field string, extractValue client.IndexerFunc) error {
	return c.each(obj, func(s *informerSet) error { return s.IndexField(ctx, obj, field, extractValue) })
}

// each calls fn with every set serving obj's kind.
func (c *multiNamespaceCache) each(obj client.Object, fn func(*informerSet) error) error {
	namespaced, err := c.isNamespaced(obj)
	if err != nil {
		return err
	}
	if !namespaced {
		s, err := c.clusterSet(obj)
		if err != nil {
			return err
		}
		return fn(s)
	}
	for _, s := range c.namespaces {
		if err := fn(s); err != nil {
			return err
		}
	}
	return nil
}

// Start starts every set and waits until all have stopped.
func (c *multiNamespaceCache) Start(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	if c.cluster != nil {
		g.Go(func() error { return c.cluster.Start(ctx) })
	}
	for ns, s := range c.namespaces {
		g.Go(func() error {
			if err := s.Start(ctx); err != nil {
				return fmt.Errorf("failed to start cache for namespace %s: %w", ns, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// WaitForCacheSync waits for every set.
func (c *multiNamespaceCache) WaitForCacheSync(ctx context.Context) bool {
	synced := true
	for _, s := range c.namespaces {
		synced = s.WaitForCacheSync(ctx) && synced
	}
	if c.cluster != nil {
		synced = c.cluster.WaitForCacheSync(ctx) && synced
	}
	return synced
}

// setFor returns the set serving namespace ns, falling back on the set of
// all other namespaces.
func (c *multiNamespaceCache) setFor(ns, verb string) (*informerSet, error) {
	if s, ok := c.namespaces[ns]; ok {
		return s, nil
	}
	if s, ok := c.namespaces[metav1.NamespaceAll]; ok {
		return s, nil
	}
	return nil, fmt.Errorf("unable to %s: %v because of unknown namespace for the cache", verb, ns)
}

// Get reads from the set of key's namespace.
func (c *multiNamespaceCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	namespaced, err := c.isNamespaced(obj)
	if err != nil {
		return err
	}
	if !namespaced {
		s, err := c.clusterSet(obj)
		if err != nil {
			return err
		}
		return s.Get(ctx, key, obj, opts...)
	}
	s, ok := c.namespaces[key.Namespace]
	if !ok {
		if s, ok = c.namespaces[metav1.NamespaceAll]; !ok {
			return fmt.Errorf("unable to get: %v because of unknown namespace for the cache", key)
		}
	}
	return s.Get(ctx, key, obj, opts...)
}

// List reads from the set of the namespace asked for, or from every set.
func (c *multiNamespaceCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	var o client.ListOptions
	o.ApplyOptions(opts)
	if o.Continue != "" {
		return errContinue
	}
	key, err := listEntryKey(c.scheme, list)
	if err != nil {
		return err
	}
	namespaced, err := apiutil.IsGVKNamespaced(key.gvk, c.mapper)
	if err != nil {
		return err
	}
	if !namespaced {
		s, err := c.clusterSet(list)
		if err != nil {
			return err
		}
		return s.List(ctx, list, opts...)
	}
	if o.Namespace != metav1.NamespaceAll {
		s, err := c.setFor(o.Namespace, "list")
		if err != nil {
			return err
		}
		return s.List(ctx, list, opts...)
	}
	var parts []listPart
	remaining := o.Limit
	for _, ns := range c.sortedNamespaces() {
		s := c.namespaces[ns]
		e, err := s.readEntry(ctx, key)
		if err != nil {
			return err
		}
		objs, err := e.collect(&o)
		if err != nil {
			return err
		}
		if o.Limit > 0 {
			if int64(len(objs)) > remaining {
				objs = objs[:remaining]
			}
			remaining -= int64(len(objs))
		}
		parts = append(parts, listPart{e: e, objs: objs, deepCopy: e.deepCopy(o.UnsafeDisableDeepCopy)})
		if o.Limit > 0 && remaining == 0 {
			break
		}
	}
	return writeList(list, parts)
}

// NeedLeaderElection reports that the cache runs without the leader lock.
func (c *multiNamespaceCache) NeedLeaderElection() bool { return false }

// multiInformer combines the informers of one kind in several namespaces:
// a handler added to it is added to each.
type multiInformer struct {
	informers map[string]cache.Informer
}

var _ cache.Informer = (*multiInformer)(nil)

// AddEventHandler adds handler to every informer.
func (m *multiInformer) AddEventHandler(handler toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return m.add(func(i cache.Informer) (toolscache.ResourceEventHandlerRegistration, error) {
		return i.AddEventHandler(handler)
	})
}

// AddEventHandlerWithResyncPeriod adds handler to every informer.
func (m *multiInformer) AddEventHandlerWithResyncPeriod(handler toolscache.ResourceEventHandler, resyncPeriod time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return m.add(func(i cache.Informer) (toolscache.ResourceEventHandlerRegistration, error) {
		return i.AddEventHandlerWithResyncPeriod(handler, resyncPeriod)
	})
}

// AddEventHandlerWithOptions adds handler to every informer.
func (m *multiInformer) AddEventHandlerWithOptions(handler toolscache.ResourceEventHandler, options toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return m.add(func(i cache.Informer) (toolscache.ResourceEventHandlerRegistration, error) {
		return i.AddEventHandlerWithOptions(handler, options)
	})
}

func (m *multiInformer) add(add func(cache.Informer) (toolscache.ResourceEventHandlerRegistration, error)) (toolscache.ResourceEventHandlerRegistration, error) {
	regs := make(map[string]toolscache.ResourceEventHandlerRegistration, len(m.informers))
	for ns, i := range m.informers {
		r, err := add(i)
		if err != nil {
			return nil, err
		}
		regs[ns] = r
	}
	checkers := make([]toolscache.DoneChecker, 0, len(regs))
	for _, r := range regs {
		checkers = append(checkers, r.HasSyncedChecker())
	}
	return &multiRegistration{regs: regs, synced: allDone(checkers)}, nil
}

// RemoveEventHandler removes a registration made through this informer.
func (m *multiInformer) RemoveEventHandler(handle toolscache.ResourceEventHandlerRegistration) error {
	r, ok := handle.(*multiRegistration)
	if !ok {
		return fmt.Errorf("registration of type %T was not returned by this informer", handle)
	}
	for ns, i := range m.informers {
		if reg, ok := r.regs[ns]; ok {
			if err := i.RemoveEventHandler(reg); err != nil {
				return err
			}
		}
	}
	return nil
}

// AddIndexers adds indexers to every informer.
func (m *multiInformer) AddIndexers(indexers toolscache.Indexers) error {
	for _, i := range m.informers {
		if err := i.AddIndexers(indexers); err != nil {
			return err
		}
	}
	return nil
}

// HasSynced reports whether every informer has synced.
func (m *multiInformer) HasSynced() bool {
	for _, i := range m.informers {
		if !i.HasSynced() {
			return false
		}
	}
	return true
}

// HasSyncedChecker returns a checker done when every informer has synced.
func (m *multiInformer) HasSyncedChecker() toolscache.DoneChecker {
	checkers := make([]toolscache.DoneChecker, 0, len(m.informers))
	for _, i := range m.informers {
		checkers = append(checkers, i.HasSyncedChecker())
	}
	return allDone(checkers)
}

// IsStopped reports whether every informer has stopped.
func (m *multiInformer) IsStopped() bool {
	for _, i := range m.informers {
		if !i.IsStopped() {
			return false
		}
	}
	return true
}

// multiRegistration is a handler's registrations with several informers.
type multiRegistration struct {
	regs   map[string]toolscache.ResourceEventHandlerRegistration
	synced toolscache.DoneChecker
}

// HasSynced reports whether every registration has synced.
func (r *multiRegistration) HasSynced() bool {
	for _, reg := range r.regs {
		if !reg.HasSynced() {
			return false
		}
	}
	return true
}

// HasSyncedChecker returns a checker done when every registration has
// synced.
func (r *multiRegistration) HasSyncedChecker() toolscache.DoneChecker { return r.synced }

// doneAll is a DoneChecker done when all of its checkers are.
type doneAll struct {
	checkers []toolscache.DoneChecker
	once     sync.Once
	done     chan struct{}
}

// allDone returns a checker whose channel closes once every checker's has.
func allDone(checkers []toolscache.DoneChecker) toolscache.DoneChecker {
	return &doneAll{checkers: checkers, done: make(chan struct{})}
}

// Name names the checkers.
func (d *doneAll) Name() string {
	names := make([]string, len(d.checkers))
	for i, c := range d.checkers {
		names[i] = c.Name()
	}
	return strings.Join(names, ", ")
}

// Done is closed when every checker is done. The first call starts the
// goroutine that waits for them (only then, so that a checker nobody waits
// on costs no goroutine); it ends when the last checker is done.
func (d *doneAll) Done() <-chan struct{} {
	d.once.Do(func() {
		go func() {
			for _, c := range d.checkers {
				<-c.Done()
			}
			close(d.done)
		}()
	})
	return d.done
}
