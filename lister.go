package informer

import (
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Lister answers typed queries from an [Indexer]: the typed equivalent of
// client-go's generated listers. Label selectors are served from the
// Indexer's label index (see [Indexer.Select]).
//
// A Lister is safe for concurrent use. The objects it returns are shared
// with the cache and must not be modified.
type Lister[T Object] struct {
	indexer  *Indexer[T]
	resource schema.GroupResource
}

// NewLister returns a Lister over indexer. resource's group and resource
// name the resource in the NotFound errors of Get.
func NewLister[T Object](indexer *Indexer[T], resource schema.GroupVersionResource) *Lister[T] {
	return &Lister[T]{indexer: indexer, resource: resource.GroupResource()}
}

// List returns the objects of every namespace whose labels match selector
// (nil means everything), in no particular order; nil if none match. The
// error is always nil; it exists for compatibility with client-go's listers.
func (l *Lister[T]) List(selector labels.Selector) ([]T, error) {
	return l.indexer.Select("", selector), nil
}

// Get returns the object stored under key, which is "namespace/name" for a
// namespaced object and "name" for a cluster-scoped one (as client-go's
// generated listers of cluster-scoped resources take it). A missing object
// yields an error for which apierrors.IsNotFound is true.
func (l *Lister[T]) Get(key string) (T, error) {
	obj, exists, _ := l.indexer.GetByKey(key)
	if !exists {
		return obj, apierrors.NewNotFound(l.resource, key)
	}
	return obj, nil
}

// Namespace returns a lister restricted to namespace. Namespace("") lists
// every namespace and gets cluster-scoped objects.
func (l *Lister[T]) Namespace(namespace string) NamespaceLister[T] {
	return NamespaceLister[T]{indexer: l.indexer, resource: l.resource, namespace: namespace}
}

// NamespaceLister answers typed queries about the objects of one namespace.
// It is a small value, safe for concurrent use; the objects it returns are
// shared with the cache and must not be modified.
type NamespaceLister[T Object] struct {
	indexer   *Indexer[T]
	resource  schema.GroupResource
	namespace string
}

// List returns the objects of the namespace whose labels match selector
// (nil means everything), in no particular order; nil if none match. The
// error is always nil; it exists for compatibility with client-go's listers.
func (l NamespaceLister[T]) List(selector labels.Selector) ([]T, error) {
	return l.indexer.Select(l.namespace, selector), nil
}

// Get returns the object of the namespace called name. A missing object
// yields an error for which apierrors.IsNotFound is true. It builds no key
// string.
func (l NamespaceLister[T]) Get(name string) (T, error) {
	obj, exists := l.indexer.getByName(ObjectName{Namespace: l.namespace, Name: name})
	if !exists {
		return obj, apierrors.NewNotFound(l.resource, name)
	}
	return obj, nil
}
