package informer

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/tools/cache"
)

// AsIndexer presents idx as client-go's cache.Indexer, for code written
// against client-go (generated listers, cache.NewGenericLister, tests that
// fill an informer's store). idx must not be nil.
//
// Reads go straight to idx and return its T values as `any`: the objects
// stored in the cache, which must not be modified. Get and GetByKey take
// anything client-go's DeletionHandlingMetaNamespaceKeyFunc takes (a T, any
// object with metadata, a cache.ExplicitKey, a cache.DeletedFinalStateUnknown).
//
// Writes (Add, Update, Delete, Replace) and Index need T objects: anything
// else is an error, and nothing changes. Delete also takes a
// cache.DeletedFinalStateUnknown whose Obj is a T, as informers deliver it,
// and Index of NamespaceIndex any object with metadata, as generated
// listers pass it.
//
// Index functions given to AddIndexers are called with T objects; those
// returned by GetIndexers fail on anything but a T. Unlike client-go, where
// a failing index function panics the store, their errors are returned (see
// Indexer).
//
// All methods are safe for concurrent use.
func AsIndexer[T Object](idx *Indexer[T]) cache.Indexer {
	return indexerAdapter[T]{idx}
}

// indexerAdapter implements cache.Indexer over an Indexer[T].
type indexerAdapter[T Object] struct{ idx *Indexer[T] }

// typed returns obj as a T, or an error naming op and obj's type.
func typed[T Object](op string, obj any) (T, error) {
	t, ok := obj.(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("%s: got a %T, want a %T", op, obj, zero)
	}
	return t, nil
}

// untyped returns items as a []any holding the same objects.
func untyped[T Object](items []T) []any {
	if items == nil {
		return nil
	}
	out := make([]any, len(items))
	for i, item := range items {
		out[i] = item
	}
	return out
}

// Add stores obj, which must be a T.
func (a indexerAdapter[T]) Add(obj any) error {
	t, err := typed[T]("add", obj)
	if err != nil {
		return err
	}
	return a.idx.Add(t)
}

// Update stores obj, which must be a T.
func (a indexerAdapter[T]) Update(obj any) error {
	t, err := typed[T]("update", obj)
	if err != nil {
		return err
	}
	return a.idx.Update(t)
}

// Delete removes the object stored under the name of obj, a T or a
// cache.DeletedFinalStateUnknown holding a T.
func (a indexerAdapter[T]) Delete(obj any) error {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	t, err := typed[T]("delete", obj)
	if err != nil {
		return err
	}
	return a.idx.Delete(t)
}

// List returns every stored object.
func (a indexerAdapter[T]) List() []any { return untyped(a.idx.List()) }

// ListKeys returns the key of every stored object.
func (a indexerAdapter[T]) ListKeys() []string { return a.idx.ListKeys() }

// Get returns the object stored under obj's key.
func (a indexerAdapter[T]) Get(obj any) (item any, exists bool, err error) {
	if t, ok := obj.(T); ok {
		stored, exists, err := a.idx.Get(t)
		if !exists || err != nil {
			// A nil interface, not a nil T, as client-go returns.
			return nil, exists, err
		}
		return stored, true, nil
	}
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return nil, false, cache.KeyError{Obj: obj, Err: err}
	}
	return a.GetByKey(key)
}

// GetByKey returns the object stored under key.
func (a indexerAdapter[T]) GetByKey(key string) (item any, exists bool, err error) {
	stored, exists, err := a.idx.GetByKey(key)
	if !exists || err != nil {
		return nil, exists, err
	}
	return stored, true, nil
}

// Replace replaces the whole content with list, whose items must all be T
// objects; otherwise nothing changes.
func (a indexerAdapter[T]) Replace(list []any, resourceVersion string) error {
	items := make([]T, len(list))
	for i, obj := range list {
		t, err := typed[T](fmt.Sprintf("replace: item %d", i), obj)
		if err != nil {
			return err
		}
		items[i] = t
	}
	return a.idx.Replace(items, resourceVersion)
}

// Resync does nothing: an Indexer has nothing to re-deliver. cache.Store
// requires it.
func (a indexerAdapter[T]) Resync() error { return nil }

// LastStoreSyncResourceVersion returns the resource version of the last
// write or bookmark.
func (a indexerAdapter[T]) LastStoreSyncResourceVersion() string {
	return a.idx.LastStoreSyncResourceVersion()
}

// Bookmark records that the store is up to date as of resourceVersion.
func (a indexerAdapter[T]) Bookmark(resourceVersion string) { a.idx.Bookmark(resourceVersion) }

// Index returns the objects that share a value of the named index with obj,
// which must be a T, except for NamespaceIndex: client-go's generated
// listers look a namespace up with a *metav1.ObjectMeta, so for that index
// any object with metadata stands for the objects indexed under its
// namespace, which is what MetaNamespaceIndexFunc would compute for it.
func (a indexerAdapter[T]) Index(indexName string, obj any) ([]any, error) {
	if t, ok := obj.(T); ok {
		items, err := a.idx.Index(indexName, t)
		return untyped(items), err
	}
	if indexName == NamespaceIndex {
		if m, err := meta.Accessor(obj); err == nil {
			return a.ByIndex(indexName, m.GetNamespace())
		}
	}
	var zero T
	return nil, fmt.Errorf("index %s: got a %T, want a %T", indexName, obj, zero)
}

// IndexKeys returns the keys of the objects indexed under indexedValue.
func (a indexerAdapter[T]) IndexKeys(indexName, indexedValue string) ([]string, error) {
	return a.idx.IndexKeys(indexName, indexedValue)
}

// ListIndexFuncValues returns the values of the named index.
func (a indexerAdapter[T]) ListIndexFuncValues(indexName string) []string {
	return a.idx.ListIndexFuncValues(indexName)
}

// ByIndex returns the objects indexed under indexedValue.
func (a indexerAdapter[T]) ByIndex(indexName, indexedValue string) ([]any, error) {
	items, err := a.idx.ByIndex(indexName, indexedValue)
	return untyped(items), err
}

// GetIndexers returns the index functions in use as client-go functions,
// which fail on anything but a T.
func (a indexerAdapter[T]) GetIndexers() cache.Indexers {
	typedFuncs := a.idx.GetIndexers()
	out := make(cache.Indexers, len(typedFuncs))
	for name, f := range typedFuncs {
		out[name] = func(obj any) ([]string, error) {
			t, err := typed[T]("index "+name, obj)
			if err != nil {
				return nil, err
			}
			return f(t)
		}
	}
	return out
}

// AddIndexers adds client-go index functions, which are called with T
// objects.
func (a indexerAdapter[T]) AddIndexers(newIndexers cache.Indexers) error {
	return a.idx.AddIndexers(typedIndexers[T](newIndexers))
}

// typedIndexers turns client-go index functions into typed ones. A nil
// function stays nil, so that the Indexer reports it.
func typedIndexers[T Object](indexers cache.Indexers) map[string]IndexFunc[T] {
	out := make(map[string]IndexFunc[T], len(indexers))
	for name, f := range indexers {
		if f == nil {
			out[name] = nil
			continue
		}
		out[name] = func(obj T) ([]string, error) { return f(obj) }
	}
	return out
}
