// Package informer is a typed, generic reimplementation of the informer
// machinery of k8s.io/client-go/tools/cache.
//
// # Everyday use
//
// A [Factory] ([NewFactory], configured by [FactoryOptions]) makes one
// shared [Informer] per type and resource: [For] takes the informer's
// [InformerOptions] and infers the type from them,
//
//	pods, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{})
//
// An Informer lists and watches one resource type, keeps the objects in its
// cache and delivers typed notifications (*corev1.Pod, a CRD type, …) to
// every [ResourceEventHandler] added with [Informer.AddEventHandler] (for
// example a [ResourceEventHandlerFuncs], or [Enqueue] to feed a client-go
// workqueue). [Informer.Lister] answers gets, label selectors and index
// queries from the cache. [Factory.Start] runs the informers and
// [Factory.WaitForCacheSync] waits for their first lists.
//
// # In production
//
// [Lister.GetAtLeast] reads an object back after a write: it waits until
// the cache has applied the write's resource version
// ([Informer.WaitForResourceVersion]; bookmarks advance the cache too, and
// [HandlerOptions].BookmarkFunc tells a handler of them). [Release] stops one
// informer of a running factory, and [FactoryOptions].MissingResourceRetry
// waits quietly for a resource the server stops serving (a deleted CRD).
// [Informer.CheckConsistency] compares the cache with a list from the
// server, on demand or periodically ([ConsistencyCheckOptions]). See
// docs/operations.md.
//
// # Below the factory
//
// [NewInformer] makes an informer over any [ListerWatcher]:
// [NewRESTListerWatcher], [NewMetadataListerWatcher] and
// [NewDynamicListerWatcher] from a *rest.Config, [NewClientListerWatcher]
// over a client-go typed client, [NewCacheListerWatcher] over a client-go
// cache.ListerWatcher; package informertest has a scripted fake for tests.
// [NewIndexer] makes a standalone, writable cache, and [NewLister] a lister
// over it. A [Reflector] fills a [ReflectorStore], such as client-go's
// classic delta queue, [DeltaFIFO]. [AsSharedIndexInformer] and [AsIndexer]
// hand an informer or an indexer to code written for client-go, and a
// [MetricsProvider] receives the informers' metrics.
//
// Objects handed out by this package (by handlers, listers and indexers) are
// shared with the cache and with every other handler: they must be treated as
// read-only. Copy an object (DeepCopy) before changing it.
package informer
