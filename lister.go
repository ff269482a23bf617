package informer

import (
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Lister answers typed queries from an [Indexer]: the typed equivalent of
// client-go's generated listers, with the index queries of client-go's
// cache.Indexer. It is read-only: [Informer.Lister] gives one over the
// informer's cache, which only the informer writes.
//
// Label selectors are served from the Indexer's label index. Requirements
// with the operators =, ==, in and exists are answered from that index, and
// the namespace from a per-namespace list: a query walks only the smallest
// of these candidate lists and tests the namespace and the other
// requirements on its objects. Its cost is proportional to that list, not to
// the size of the store; the result always equals testing selector.Matches
// on every object.
//
// A Lister is safe for concurrent use. The objects it returns are shared
// with the cache and must not be modified.
type Lister[T Object] struct {
	indexer  *Indexer[T]
	resource schema.GroupResource
	// applied and name are the informer's, for the waiting calls; nil and
	// empty in a Lister made by NewLister.
	applied *appliedVersion
	name    string
	// hooks are the informer's observers' (nil in a Lister made by
	// NewLister): the mutation detector records what the Lister hands out.
	hooks *observers[T]
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
	objs := l.indexer.selectLabels("", selector)
	l.hooks.handedOut("Lister.List", 1, objs)
	return objs, nil
}

// Get returns the object stored under key, which is "namespace/name" for a
// namespaced object and "name" for a cluster-scoped one (as client-go's
// generated listers of cluster-scoped resources take it). A missing object
// yields an error for which apierrors.IsNotFound is true; when key has no
// namespace and the cache holds namespaced objects, its message says that
// the key needs one.
func (l *Lister[T]) Get(key string) (T, error) {
	obj, exists, _ := l.indexer.GetByKey(key)
	if exists {
		l.hooks.handedOutOne("Lister.Get", 1, obj)
	}
	if !exists {
		err := apierrors.NewNotFound(l.resource, key)
		if !strings.Contains(key, "/") && l.indexer.holdsNamespaced() {
			// The usual mistake: a name alone for a namespaced object.
			err.ErrStatus.Message += fmt.Sprintf(`: the objects of this lister are namespaced, so the key is "namespace/name": use Get("<namespace>/%s") or Namespace("<namespace>").Get(%q)`, key, key)
		}
		return obj, err
	}
	return obj, nil
}

// ByIndex returns the objects indexed under indexedValue in the named index,
// in no particular order. It fails if the index does not exist.
func (l *Lister[T]) ByIndex(indexName, indexedValue string) ([]T, error) {
	objs, err := l.indexer.ByIndex(indexName, indexedValue)
	l.hooks.handedOut("Lister.ByIndex", 1, objs)
	return objs, err
}

// Index returns the objects that share at least one value of the named
// index with obj, in no particular order. It fails if the index does not
// exist or its function fails on obj.
func (l *Lister[T]) Index(indexName string, obj T) ([]T, error) {
	objs, err := l.indexer.Index(indexName, obj)
	l.hooks.handedOut("Lister.Index", 1, objs)
	return objs, err
}

// IndexKeys returns the keys of the objects indexed under indexedValue in
// the named index, sorted. It fails if the index does not exist.
func (l *Lister[T]) IndexKeys(indexName, indexedValue string) ([]string, error) {
	return l.indexer.IndexKeys(indexName, indexedValue)
}

// ListIndexFuncValues returns every value of the named index under which at
// least one object is stored, in no particular order. An unknown index has
// no values.
func (l *Lister[T]) ListIndexFuncValues(indexName string) []string {
	return l.indexer.ListIndexFuncValues(indexName)
}

// Namespace returns a lister restricted to namespace. Namespace("") lists
// every namespace and gets cluster-scoped objects.
func (l *Lister[T]) Namespace(namespace string) NamespaceLister[T] {
	return NamespaceLister[T]{indexer: l.indexer, resource: l.resource, namespace: namespace, hooks: l.hooks}
}

// NamespaceLister answers typed queries about the objects of one namespace.
// It is a small value, safe for concurrent use; the objects it returns are
// shared with the cache and must not be modified.
type NamespaceLister[T Object] struct {
	indexer   *Indexer[T]
	resource  schema.GroupResource
	namespace string
	hooks     *observers[T]
}

// List returns the objects of the namespace whose labels match selector
// (nil means everything), in no particular order; nil if none match. The
// error is always nil; it exists for compatibility with client-go's listers.
func (l NamespaceLister[T]) List(selector labels.Selector) ([]T, error) {
	objs := l.indexer.selectLabels(l.namespace, selector)
	l.hooks.handedOut("NamespaceLister.List", 1, objs)
	return objs, nil
}

// Get returns the object of the namespace called name. A missing object
// yields an error for which apierrors.IsNotFound is true. It builds no key
// string.
func (l NamespaceLister[T]) Get(name string) (T, error) {
	obj, exists := l.indexer.getByName(ObjectName{Namespace: l.namespace, Name: name})
	if exists {
		l.hooks.handedOutOne("NamespaceLister.Get", 1, obj)
	}
	if !exists {
		return obj, apierrors.NewNotFound(l.resource, name)
	}
	return obj, nil
}
