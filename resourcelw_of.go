package informer

import (
	"context"
	"fmt"
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer/internal/wire"
)

// NewDynamicListerWatcherOf is [NewDynamicListerWatcher] for code that
// handles many types through one interface (as controller-runtime's
// client.Object): its *unstructured.Unstructured objects are handed out as
// T, an interface type they must implement. Everything else is as
// NewDynamicListerWatcher's: strings interned on decode, and an informer
// over it with [InformerOptions].Deduplicate and no Transform shares
// sub-trees as it decodes; its snapshot scope names the same resource,
// namespace, selectors and server. It fails, besides, if
// *unstructured.Unstructured does not implement T.
func NewDynamicListerWatcherOf[T Object](config *rest.Config, opts RESTOptions) (ListerWatcher[T], error) {
	lw, err := newDynamicListerWatcher(config, opts)
	if err != nil {
		return nil, err
	}
	return newHandedOutAs[T, *unstructured.Unstructured](lw, nil)
}

// NewMetadataListerWatcherOf is [NewMetadataListerWatcher] for code that
// handles many types through one interface: its
// *metav1.PartialObjectMetadata objects are handed out as T, an interface
// type they must implement, each with kind as its apiVersion and kind
// unless kind is empty (controller-runtime hands out metadata so, where
// the server sends kind PartialObjectMetadata). Everything else is as
// NewMetadataListerWatcher's. It fails, besides, if
// *metav1.PartialObjectMetadata does not implement T.
func NewMetadataListerWatcherOf[T Object](config *rest.Config, opts RESTOptions, kind schema.GroupVersionKind) (ListerWatcher[T], error) {
	lw, err := newMetadataListerWatcher(config, opts)
	if err != nil {
		return nil, err
	}
	var setKind *schema.GroupVersionKind
	if !kind.Empty() {
		setKind = &kind
	}
	return newHandedOutAs[T, *metav1.PartialObjectMetadata](lw, setKind)
}

// handedOutAs is a described ListerWatcher of U whose objects it hands out
// as T, an interface type U implements, each with kind as its kind if kind
// is set. It tells the informer what lw does (description, decodingWith).
type handedOutAs[T Object, U Object] struct {
	lw   describedListerWatcher[U]
	kind *schema.GroupVersionKind
}

var _ describedListerWatcher[interface {
	metav1.Object
	runtime.Object
}] = (*handedOutAs[interface {
	metav1.Object
	runtime.Object
}, *metav1.PartialObjectMetadata])(nil)

// newHandedOutAs returns lw handing out its objects as T.
func newHandedOutAs[T Object, U Object](lw describedListerWatcher[U], kind *schema.GroupVersionKind) (*handedOutAs[T, U], error) {
	if t, u := reflect.TypeFor[T](), reflect.TypeFor[U](); !u.AssignableTo(t) {
		return nil, fmt.Errorf("list/watch %s: %s does not implement %s", lw.description().listed.resource.GroupResource(), u, t)
	}
	return &handedOutAs[T, U]{lw: lw, kind: kind}, nil
}

// List lists through lw. The calling informer's lookup of cached objects
// (cachedLookup) is handed to lw as a lookup of U, so that a relist reuses
// the cached objects as it would through lw.
func (a *handedOutAs[T, U]) List(ctx context.Context, opts metav1.ListOptions) (*ListResult[T], error) {
	if lookup := cachedLookupFrom[T](ctx); lookup != nil {
		ctx = withCachedLookup(ctx, cachedLookup[U](func(name ObjectName, resourceVersion string) (U, bool) {
			var obj U
			cached, ok := lookup(name, resourceVersion)
			if ok {
				obj, ok = any(cached).(U)
			}
			return obj, ok
		}))
	}
	r, err := a.lw.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	items := make([]T, len(r.Items))
	for i, obj := range r.Items {
		a.setKind(obj)
		items[i] = any(obj).(T) // U implements T (newHandedOutAs)
	}
	return &ListResult[T]{Items: items, ResourceVersion: r.ResourceVersion, Continue: r.Continue, ShardSelector: r.ShardSelector}, nil
}

// setKind sets a.kind as obj's kind, if set and obj has another: a cached
// object reused by a relist has it already, and is never written to.
func (a *handedOutAs[T, U]) setKind(obj U) {
	if a.kind != nil && obj.GetObjectKind().GroupVersionKind() != *a.kind {
		obj.GetObjectKind().SetGroupVersionKind(*a.kind)
	}
}

// Watch watches through lw.
func (a *handedOutAs[T, U]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	w, err := a.lw.Watch(ctx, opts)
	if err != nil || a.kind == nil {
		return w, err
	}
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		if obj, ok := e.Object.(U); ok {
			a.setKind(obj)
		}
		return e, true
	}), nil
}

func (a *handedOutAs[T, U]) description() lwDescription { return a.lw.description() }

func (a *handedOutAs[T, U]) decodingWith(table *wire.InternTable) (ListerWatcher[T], error) {
	shared, err := a.lw.decodingWith(table)
	if err != nil {
		return nil, err
	}
	d, ok := shared.(describedListerWatcher[U])
	if !ok {
		return nil, fmt.Errorf("list/watch %s: decoding with a table gave a %T", a.lw.description().listed.resource.GroupResource(), shared)
	}
	return &handedOutAs[T, U]{lw: d, kind: a.kind}, nil
}
