// Package crcache is a drop-in cache for controller-runtime v0.25, built
// on the informers of github.com/kubetyped/informer. A manager uses it with
// one line,
//
//	mgr, err := manager.New(config, manager.Options{NewCache: crcache.New})
//
// and nothing else in the controllers changes: reads through the manager's
// client, sources, handlers and field indexes work as with
// controller-runtime's own cache. What changes is the speed of reads: a
// List with a label selector is answered by the informers' label index
// instead of a scan of every cached object of the namespace (or of the
// cluster), a Get looks the name up without building a key, and deep
// copies go straight into the caller's list. And what the cache holds: its
// informers list and watch through the core's own ListerWatchers (built-in
// types in protobuf, decoded with their strings interned), and by default
// the objects of every kind whose reads deep-copy share their equal parts
// (see [Options] and [NewWith], which also drop fields on the wire).
// The caches of a multi-cluster controller's clusters can share what the
// clusters repeat: see [Fleet]. docs/controller-runtime.md in the
// repository lists the differences and the measurements, and
// docs/fleet.md, "controller-runtime", the fleet's caches.
package crcache

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

var _ cache.NewCacheFunc = New

// New returns a cache for the cluster config points to, configured by
// opts exactly as controller-runtime's cache.New is (see cache.Options):
// DefaultNamespaces, ByObject, selectors, transforms, SyncPeriod,
// UnsafeDisableDeepCopy, ReaderFailOnMissingInformer,
// DefaultWatchErrorHandler and DefaultEnableWatchBookmarks all mean the
// same. Options.NewInformer is the one option it cannot honour (it would
// replace this package's informers with client-go's): New fails if it is
// set.
//
// The cache makes no request until it is read from or started; like
// controller-runtime's, it creates an informer for a kind on its first use
// and starts it with Start. All methods are safe for concurrent use.
// Objects returned with UnsafeDisableDeepCopy, and those handed to event
// handlers, are shared with the cache and must not be modified: with
// crcache's default sharing (see [Options].Deduplicate), cached objects
// share equal parts with each other, so such a write would change many.
// New is NewWith(Options{}).
func New(config *rest.Config, opts cache.Options) (cache.Cache, error) {
	return newCache(config, opts, Options{}, nil)
}

// newCache is NewWith(lean) with the informers' ListerWatchers built by
// newSource instead of from config (nil: from config).
func newCache(config *rest.Config, opts cache.Options, lean Options, newSource func(listWatchRequest) (source, error)) (cache.Cache, error) {
	return newCacheIn(config, opts, lean, newSource, nil)
}

// newCacheIn is newCache for a cache of a Fleet, whose ListerWatchers
// decode with tables (nil: a cache of its own).
func newCacheIn(config *rest.Config, opts cache.Options, lean Options, newSource func(listWatchRequest) (source, error), tables *decodingTables) (cache.Cache, error) {
	if config == nil {
		return nil, fmt.Errorf("crcache: rest config is nil")
	}
	if opts.NewInformer != nil {
		return nil, fmt.Errorf("crcache: Options.NewInformer is not supported: this cache runs its own informers")
	}
	opts, err := defaultOptions(config, opts)
	if err != nil {
		return nil, fmt.Errorf("crcache: %w", err)
	}
	resolved, err := resolveLean(config, opts, lean)
	if err != nil {
		return nil, fmt.Errorf("crcache: %w", err)
	}
	s := &shared{
		config:                      rest.CopyConfig(config),
		httpClient:                  opts.HTTPClient,
		scheme:                      opts.Scheme,
		mapper:                      opts.Mapper,
		lean:                        resolved,
		readerFailOnMissingInformer: opts.ReaderFailOnMissingInformer,
		watchErrorHandler:           opts.DefaultWatchErrorHandler,
		newSource:                   newSource,
		tables:                      tables,
	}
	if s.config.UserAgent == "" {
		s.config.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if s.newSource == nil {
		s.newSource = s.newRESTSource
	}

	defaults := defaultsToConfig(&opts)
	var defaultCache cache.Cache
	if len(opts.DefaultNamespaces) > 0 {
		defaultCache = newMultiNamespaceCache(s, opts.DefaultNamespaces, &defaults)
	} else {
		defaultCache = newInformerSet(s, defaults, metav1.NamespaceAll)
	}
	if len(opts.ByObject) == 0 {
		return defaultCache, nil
	}
	byGVK := &byGVKCache{shared: s, caches: map[schema.GroupVersionKind]cache.Cache{}, defaultCache: defaultCache}
	for obj, bo := range opts.ByObject {
		gvk, err := apiutil.GVKForObject(obj, s.scheme)
		if err != nil {
			return nil, fmt.Errorf("crcache: failed to get GVK for type %T: %w", obj, err)
		}
		if len(bo.Namespaces) > 0 {
			byGVK.caches[gvk] = newMultiNamespaceCache(s, bo.Namespaces, nil)
		} else {
			byGVK.caches[gvk] = newInformerSet(s, byObjectToConfig(bo), metav1.NamespaceAll)
		}
	}
	return byGVK, nil
}

func newMultiNamespaceCache(s *shared, namespaces map[string]cache.Config, cluster *cache.Config) *multiNamespaceCache {
	c := &multiNamespaceCache{shared: s, namespaces: make(map[string]*informerSet, len(namespaces))}
	for ns, config := range namespaces {
		c.namespaces[ns] = newInformerSet(s, config, ns)
	}
	if cluster != nil {
		c.cluster = newInformerSet(s, *cluster, metav1.NamespaceAll)
	}
	return c
}

// defaultOptions fills in opts as controller-runtime's cache.New does:
// HTTP client, scheme and REST mapper; each ByObject and DefaultNamespaces
// setting defaulted from the more general ones; and, for the all-namespaces
// entry of a namespace map, a field selector excluding the namespaces
// configured on their own.
func defaultOptions(config *rest.Config, opts cache.Options) (cache.Options, error) {
	if opts.HTTPClient == nil {
		client, err := rest.HTTPClientFor(config)
		if err != nil {
			return opts, fmt.Errorf("could not create HTTP client from config: %w", err)
		}
		opts.HTTPClient = client
	}
	if opts.Scheme == nil {
		opts.Scheme = scheme.Scheme
	}
	if opts.Mapper == nil {
		mapper, err := apiutil.NewDynamicRESTMapper(config, opts.HTTPClient)
		if err != nil {
			return opts, fmt.Errorf("could not create RESTMapper from config: %w", err)
		}
		opts.Mapper = mapper
	}
	defaults := defaultsToConfig(&opts)
	opts.DefaultNamespaces = maps.Clone(opts.DefaultNamespaces)
	opts.ByObject = maps.Clone(opts.ByObject)
	for obj, bo := range opts.ByObject {
		namespaced, err := apiutil.IsObjectNamespaced(obj, opts.Scheme, opts.Mapper)
		if err != nil {
			return opts, fmt.Errorf("failed to determine if %T is namespaced: %w", obj, err)
		}
		if !namespaced && bo.Namespaces != nil {
			return opts, fmt.Errorf("type %T is not namespaced, but its ByObject.Namespaces setting is not nil", obj)
		}
		if namespaced && bo.Namespaces == nil {
			bo.Namespaces = maps.Clone(opts.DefaultNamespaces)
		} else {
			bo.Namespaces = maps.Clone(bo.Namespaces)
		}
		for ns, config := range bo.Namespaces {
			config = inherit(config, byObjectToConfig(bo))
			if nsDefaults, ok := opts.DefaultNamespaces[ns]; ok {
				config = inherit(config, nsDefaults)
			}
			config = inherit(config, defaults)
			if ns == metav1.NamespaceAll {
				config.FieldSelector = excludeOtherNamespaces(bo.Namespaces, config.FieldSelector)
			}
			bo.Namespaces[ns] = config
		}
		if !namespaced || len(bo.Namespaces) == 0 {
			c := inherit(byObjectToConfig(bo), defaults)
			bo.Label, bo.Field, bo.Transform = c.LabelSelector, c.FieldSelector, c.Transform
			bo.UnsafeDisableDeepCopy, bo.EnableWatchBookmarks, bo.SyncPeriod = c.UnsafeDisableDeepCopy, c.EnableWatchBookmarks, c.SyncPeriod
		}
		opts.ByObject[obj] = bo
	}
	for ns, config := range opts.DefaultNamespaces {
		config = inherit(config, defaults)
		if ns == metav1.NamespaceAll {
			config.FieldSelector = excludeOtherNamespaces(opts.DefaultNamespaces, config.FieldSelector)
		}
		opts.DefaultNamespaces[ns] = config
	}
	return opts, nil
}

// defaultsToConfig is the configuration of everything not configured
// otherwise.
func defaultsToConfig(opts *cache.Options) cache.Config {
	return cache.Config{
		LabelSelector:         opts.DefaultLabelSelector,
		FieldSelector:         opts.DefaultFieldSelector,
		Transform:             opts.DefaultTransform,
		UnsafeDisableDeepCopy: opts.DefaultUnsafeDisableDeepCopy,
		EnableWatchBookmarks:  opts.DefaultEnableWatchBookmarks,
		SyncPeriod:            opts.SyncPeriod,
	}
}

// byObjectToConfig is the configuration of one ByObject entry.
func byObjectToConfig(bo cache.ByObject) cache.Config {
	return cache.Config{
		LabelSelector:         bo.Label,
		FieldSelector:         bo.Field,
		Transform:             bo.Transform,
		UnsafeDisableDeepCopy: bo.UnsafeDisableDeepCopy,
		EnableWatchBookmarks:  bo.EnableWatchBookmarks,
		SyncPeriod:            bo.SyncPeriod,
	}
}

// inherit fills the unset settings of c from from.
func inherit(c, from cache.Config) cache.Config {
	if c.LabelSelector == nil {
		c.LabelSelector = from.LabelSelector
	}
	if c.FieldSelector == nil {
		c.FieldSelector = from.FieldSelector
	}
	if c.Transform == nil {
		c.Transform = from.Transform
	}
	if c.UnsafeDisableDeepCopy == nil {
		c.UnsafeDisableDeepCopy = from.UnsafeDisableDeepCopy
	}
	if c.EnableWatchBookmarks == nil {
		c.EnableWatchBookmarks = from.EnableWatchBookmarks
	}
	if c.SyncPeriod == nil {
		c.SyncPeriod = from.SyncPeriod
	}
	return c
}

// excludeOtherNamespaces adds to selector (which may be nil) one
// "metadata.namespace!=" term per namespace of namespaces other than "".
func excludeOtherNamespaces(namespaces map[string]cache.Config, selector fields.Selector) fields.Selector {
	var terms []fields.Selector
	for _, ns := range slices.Sorted(maps.Keys(namespaces)) {
		if ns != metav1.NamespaceAll {
			terms = append(terms, fields.OneTermNotEqualSelector("metadata.namespace", ns))
		}
	}
	if selector != nil {
		terms = append(terms, selector)
	}
	return fields.AndSelectors(terms...)
}

// byGVKCache serves the kinds configured by ByObject from their own caches
// and every other kind from the default cache.
type byGVKCache struct {
	*shared
	caches       map[schema.GroupVersionKind]cache.Cache
	defaultCache cache.Cache
}

var _ cache.Cache = (*byGVKCache)(nil)

func (c *byGVKCache) cacheFor(obj runtime.Object) (cache.Cache, error) {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return nil, err
	}
	if _, isList := obj.(client.ObjectList); isList {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	return c.cacheForKind(gvk), nil
}

func (c *byGVKCache) cacheForKind(gvk schema.GroupVersionKind) cache.Cache {
	if cc, ok := c.caches[gvk]; ok {
		return cc
	}
	return c.defaultCache
}

// Get reads from the cache of obj's kind.
func (c *byGVKCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	cc, err := c.cacheFor(obj)
	if err != nil {
		return err
	}
	return cc.Get(ctx, key, obj, opts...)
}

// List reads from the cache of list's kind.
func (c *byGVKCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	cc, err := c.cacheFor(list)
	if err != nil {
		return err
	}
	return cc.List(ctx, list, opts...)
}

// GetInformer returns the informer from the cache of obj's kind.
func (c *byGVKCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	cc, err := c.cacheFor(obj)
	if err != nil {
		return nil, err
	}
	return cc.GetInformer(ctx, obj, opts...)
}

// GetInformerForKind returns the informer from the cache of gvk.
func (c *byGVKCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	return c.cacheForKind(gvk).GetInformerForKind(ctx, gvk, opts...)
}

// RemoveInformer removes the informer from the cache of obj's kind.
func (c *byGVKCache) RemoveInformer(ctx context.Context, obj client.Object) error {
	cc, err := c.cacheFor(obj)
	if err != nil {
		return err
	}
	return cc.RemoveInformer(ctx, obj)
}

// IndexField indexes field in the cache of obj's kind.
func (c *byGVKCache) IndexField(ctx context.Context, obj client.Object, field string, extractValue client.IndexerFunc) error {
	cc, err := c.cacheFor(obj)
	if err != nil {
		return err
	}
	return cc.IndexField(ctx, obj, field, extractValue)
}

// Start starts every cache and waits until all have stopped.
func (c *byGVKCache) Start(ctx context.Context) error {
	errs := make(chan error, len(c.caches)+1)
	all := append(slices.Collect(maps.Values(c.caches)), c.defaultCache)
	for _, cc := range all {
		go func() { errs <- cc.Start(ctx) }()
	}
	var first error
	for range all {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

// WaitForCacheSync waits for every cache.
func (c *byGVKCache) WaitForCacheSync(ctx context.Context) bool {
	synced := c.defaultCache.WaitForCacheSync(ctx)
	for _, cc := range c.caches {
		synced = cc.WaitForCacheSync(ctx) && synced
	}
	return synced
}

// NeedLeaderElection reports that the cache runs without the leader lock.
func (c *byGVKCache) NeedLeaderElection() bool { return false }
