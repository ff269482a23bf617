package informer

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
)

// ListObject is a typed list such as *corev1.PodList.
type ListObject interface {
	comparable
	runtime.Object
	GetResourceVersion() string
	GetContinue() string
}

// TypedClient is the list-and-watch part of a client-go typed client, such
// as clientset.CoreV1().Pods(namespace).
type TypedClient[L ListObject] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// ClientOptions configures the ListerWatcher adapters of client-go clients.
type ClientOptions struct {
	// TweakListOptions, if set, adjusts the options of every list and watch
	// call (label or field selectors, for instance). It gets a copy and may
	// be called concurrently.
	TweakListOptions func(*metav1.ListOptions)
	// DisableWatchList declares that the client cannot serve streaming
	// lists, so that a Reflector lists instead. Set it for client-go's fake
	// clientsets, whose watches never send initial events, e.g. with
	// watchlist.DoesClientNotSupportWatchListSemantics(clientset).
	DisableWatchList bool
}

// clientListerWatcher is a ListerWatcher backed by a client-go typed client
// (see NewClientListerWatcher).
type clientListerWatcher[T Object, L ListObject] struct {
	client      TypedClient[L]
	items       func(list L) ([]T, error)
	tweak       func(*metav1.ListOptions)
	unsupported bool
}

var errNilList = errors.New("client returned neither a list nor an error")

// NewClientListerWatcher returns a ListerWatcher backed by a client-go typed
// client; it is safe for concurrent use if the client is. items takes the
// objects out of a list, e.g.
//
//	func(l *corev1.PodList) ([]*corev1.Pod, error) { return CopyListItems(l.Items), nil }
//
// or ExtractListItems[*corev1.Pod, *corev1.PodList] for any list type.
// Streaming lists count as unsupported if opts says so or if client itself
// declares it (IsWatchListSemanticsUnSupported).
func NewClientListerWatcher[T Object, L ListObject](client TypedClient[L], items func(list L) ([]T, error), opts ClientOptions) ListerWatcher[T] {
	return &clientListerWatcher[T, L]{
		client:      client,
		items:       items,
		tweak:       opts.TweakListOptions,
		unsupported: opts.DisableWatchList || watchlist.DoesClientNotSupportWatchListSemantics(client),
	}
}

// List implements ListerWatcher.
func (c *clientListerWatcher[T, L]) List(ctx context.Context, options metav1.ListOptions) (*ListResult[T], error) {
	if c.tweak != nil {
		c.tweak(&options)
	}
	list, err := c.client.List(ctx, options)
	if err != nil {
		return nil, err
	}
	var zero L
	if list == zero {
		return nil, errNilList
	}
	items, err := c.items(list)
	if err != nil {
		return nil, fmt.Errorf("extracting the items of a %T: %w", list, err)
	}
	return &ListResult[T]{Items: items, ResourceVersion: list.GetResourceVersion(), Continue: list.GetContinue(), ShardSelector: appliedShardSelector(list)}, nil
}

// Watch implements ListerWatcher. The reflector drops (and reports) events
// whose object is not a T.
func (c *clientListerWatcher[T, L]) Watch(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	if c.tweak != nil {
		c.tweak(&options)
	}
	return c.client.Watch(ctx, options)
}

// IsWatchListSemanticsUnSupported reports whether streaming lists are
// unsupported (see ClientOptions.DisableWatchList).
func (c *clientListerWatcher[T, L]) IsWatchListSemanticsUnSupported() bool {
	return c.unsupported
}

// CopyListItems returns a pointer to a shallow copy of each item of a typed
// list's Items, so that each object can be garbage collected on its own
// instead of keeping the whole list alive (like client-go's
// meta.ExtractListWithAlloc).
func CopyListItems[E any, T interface {
	*E
	Object
}](items []E) []T {
	objects := make([]T, len(items))
	for i := range items {
		item := new(E)
		*item = items[i]
		objects[i] = item
	}
	return objects
}

// ExtractListItems takes the items out of any list object with
// meta.ExtractListWithAlloc (reflection, on the list path only). An item
// that is not a T is an error.
func ExtractListItems[T Object, L runtime.Object](list L) ([]T, error) {
	objects, err := meta.ExtractListWithAlloc(list)
	if err != nil {
		return nil, err
	}
	items := make([]T, len(objects))
	for i, obj := range objects {
		item, ok := obj.(T)
		if !ok {
			var want T
			return nil, fmt.Errorf("list item %d is a %T, not a %T", i, obj, want)
		}
		items[i] = item
	}
	return items, nil
}

// cacheListerWatcher is a ListerWatcher backed by a client-go
// cache.ListerWatcher (see NewCacheListerWatcher).
type cacheListerWatcher[T Object] struct {
	lw          cache.ListerWatcherWithContext
	unsupported bool
}

// NewCacheListerWatcher returns a ListerWatcher backed by a client-go
// cache.ListerWatcher (such as a cache.ListWatch); it is safe for concurrent
// use if lw is. List fails if the list holds anything but
// T objects; watch events are passed on as they are (a Reflector drops and
// reports those that are not T). Streaming lists count as unsupported if lw
// declares it, as client-go's cache.ToListWatcherWithWatchListSemantics
// does.
func NewCacheListerWatcher[T Object](lw cache.ListerWatcher) ListerWatcher[T] {
	return &cacheListerWatcher[T]{
		lw:          cache.ToListerWatcherWithContext(lw),
		unsupported: watchlist.DoesClientNotSupportWatchListSemantics(lw),
	}
}

// List implements ListerWatcher.
func (c *cacheListerWatcher[T]) List(ctx context.Context, options metav1.ListOptions) (*ListResult[T], error) {
	list, err := c.lw.ListWithContext(ctx, options)
	if err != nil {
		return nil, err
	}
	if list == nil {
		return nil, errNilList
	}
	listMeta, err := meta.ListAccessor(list)
	if err != nil {
		return nil, fmt.Errorf("list result %T: %w", list, err)
	}
	// Each item is a shallow copy, as client-go's reflector makes, not a
	// pointer into the list's Items: a pointer would keep the whole list's
	// array alive for as long as any one of its objects stays cached
	// (kubernetes#113305: up to the cache's size again after churn).
	// Pointing in allocates less but syncs no faster and retains about the
	// same once synced (BenchmarkCacheListerWatcherSync; docs/benchmarks.md,
	// "Figures behind design choices").
	items, err := ExtractListItems[T](list)
	if err != nil {
		return nil, fmt.Errorf("list result %T: %w", list, err)
	}
	return &ListResult[T]{Items: items, ResourceVersion: listMeta.GetResourceVersion(), Continue: listMeta.GetContinue(), ShardSelector: appliedShardSelector(list)}, nil
}

// Watch implements ListerWatcher.
func (c *cacheListerWatcher[T]) Watch(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	return c.lw.WatchWithContext(ctx, options)
}

// IsWatchListSemanticsUnSupported reports whether the wrapped lister-watcher
// declared streaming lists unsupported.
func (c *cacheListerWatcher[T]) IsWatchListSemanticsUnSupported() bool {
	return c.unsupported
}
