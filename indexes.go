package informer

import (
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IndexFunc computes the values under which obj is indexed. It may return
// several values (the object is then found under each of them) or none. It
// must be a pure function of obj: the Indexer calls it once per stored
// version of an object and remembers where it filed the object. It may be
// called while the Indexer's lock is held, and concurrently when Replace
// builds a new content, so it must be safe for concurrent use and must not
// call back into the Indexer.
//
// Indexes are given as a map[string]IndexFunc[T] from each index's name to
// its function ([NewIndexer], [InformerOptions].Indexers,
// [Indexer.AddIndexers]).
type IndexFunc[T Object] func(obj T) ([]string, error)

// NamespaceIndex is the conventional name of the index by namespace, whose
// function is [MetaNamespaceIndexFunc].
const NamespaceIndex = "namespace"

// MetaNamespaceIndexFunc indexes an object by its namespace (the empty string
// for a cluster-scoped object).
func MetaNamespaceIndexFunc[T Object](obj T) ([]string, error) {
	return []string{obj.GetNamespace()}, nil
}

// userIndex is one named index and its function.
type userIndex[T Object] struct {
	name string
	fn   IndexFunc[T]
	// byNamespace marks an index whose function is MetaNamespaceIndexFunc:
	// its lists are the Indexer's own per-namespace lists, so its values are
	// neither computed nor filed separately.
	byNamespace bool
}

// newUserIndex returns the index name computed by fn.
func newUserIndex[T Object](name string, fn IndexFunc[T]) userIndex[T] {
	return userIndex[T]{name: name, fn: fn, byNamespace: isMetaNamespaceIndexFunc(fn)}
}

// metaNamespaceIndexFuncName is the symbol name of every instantiation of
// MetaNamespaceIndexFunc taken as a value with a concrete type argument.
var metaNamespaceIndexFuncName = funcName(MetaNamespaceIndexFunc[*metav1.PartialObjectMetadata])

// isMetaNamespaceIndexFunc reports whether fn is MetaNamespaceIndexFunc,
// whose values are always exactly the object's namespace. Function values
// cannot be compared, and those of a generic function's instantiations
// differ by the place that instantiated them, so the function is recognized
// by its symbol name, which only MetaNamespaceIndexFunc's instantiations
// have. A function that merely calls it is not recognized and is indexed
// like any other.
func isMetaNamespaceIndexFunc[T Object](fn IndexFunc[T]) bool {
	return fn != nil && funcName(fn) == metaNamespaceIndexFuncName
}

// funcName returns the symbol name of the code of the function value fn.
func funcName(fn any) string {
	f := runtime.FuncForPC(reflect.ValueOf(fn).Pointer())
	if f == nil {
		return ""
	}
	return f.Name()
}

// Index returns the stored objects that share at least one value of the
// named index with obj, in no particular order.
func (s *Indexer[T]) Index(indexName string, obj T) ([]T, error) {
	if err := checkObject(obj); err != nil {
		return nil, fmt.Errorf("index %q: %w", indexName, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	i, err := s.indexNumber(indexName)
	if err != nil {
		return nil, err
	}
	values, err := s.indexes[i].call(obj, NameOf(obj))
	if err != nil {
		return nil, err
	}
	buckets := s.c.buckets[i]
	if len(values) == 1 {
		p := buckets[values[0]]
		if p == nil {
			return []T{}, nil
		}
		return p.appendObjects(make([]T, 0, len(p.items))), nil
	}
	// An object may be under several of the values: report it once.
	seen := make(map[*entry[T]]struct{})
	list := []T{}
	for _, v := range values {
		if p := buckets[v]; p != nil {
			for _, it := range p.items {
				if _, dup := seen[it.e]; !dup {
					seen[it.e] = struct{}{}
					list = append(list, it.obj)
				}
			}
		}
	}
	return list, nil
}

// IndexKeys returns the keys of the objects indexed under indexedValue in
// the named index, sorted.
func (s *Indexer[T]) IndexKeys(indexName, indexedValue string) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	i, err := s.indexNumber(indexName)
	if err != nil {
		return nil, err
	}
	p := s.c.buckets[i][indexedValue]
	if p == nil {
		return []string{}, nil
	}
	keys := make([]string, 0, len(p.items))
	for _, it := range p.items {
		keys = append(keys, it.e.name.String())
	}
	sort.Strings(keys)
	return keys, nil
}

// ListIndexFuncValues returns every value of the named index under which
// at least one object is stored, in no particular order. An unknown index
// has no values.
func (s *Indexer[T]) ListIndexFuncValues(indexName string) []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	i, err := s.indexNumber(indexName)
	if err != nil {
		return []string{}
	}
	values := make([]string, 0, len(s.c.buckets[i]))
	for v := range s.c.buckets[i] {
		values = append(values, v)
	}
	return values
}

// ByIndex returns the objects indexed under indexedValue in the named index,
// in no particular order.
func (s *Indexer[T]) ByIndex(indexName, indexedValue string) ([]T, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	i, err := s.indexNumber(indexName)
	if err != nil {
		return nil, err
	}
	p := s.c.buckets[i][indexedValue]
	if p == nil {
		return []T{}, nil
	}
	return p.appendObjects(make([]T, 0, len(p.items))), nil
}

// GetIndexers returns a copy of the index functions in use.
func (s *Indexer[T]) GetIndexers() map[string]IndexFunc[T] {
	s.mu.RLock()
	defer s.mu.RUnlock()
	indexers := make(map[string]IndexFunc[T], len(s.indexes))
	for _, ix := range s.indexes {
		indexers[ix.name] = ix.fn
	}
	return indexers
}

// AddIndexers adds indexes and indexes every stored object in them at once.
// It fails, changing nothing, if a name is already in use, a function is
// nil or a function returns an error for a stored object.
func (s *Indexer[T]) AddIndexers(newIndexers map[string]IndexFunc[T]) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var conflicts []string
	for name, fn := range newIndexers {
		if _, err := s.indexNumber(name); err == nil {
			conflicts = append(conflicts, name)
		}
		if fn == nil {
			return fmt.Errorf("adding index %q: nil IndexFunc", name)
		}
	}
	if len(conflicts) > 0 {
		sort.Strings(conflicts)
		return fmt.Errorf("adding indexes: indexer conflict: %s already exist", strings.Join(conflicts, ", "))
	}
	names := sortedNames(newIndexers)
	first := len(s.indexes)
	added := make([]userIndex[T], len(names))
	for j, name := range names {
		added[j] = newUserIndex(name, newIndexers[name])
	}
	// Compute everything before changing anything so that an error leaves
	// the store as it was.
	items := s.c.all.items
	values := make([][]string, len(items)*len(added))
	for n, it := range items {
		for j, ix := range added {
			if ix.byNamespace {
				continue // filed under the namespace lists already
			}
			v, err := ix.fn(it.obj)
			if err != nil {
				return fmt.Errorf("adding index %q: object %s: %w", ix.name, it.e.name, err)
			}
			values[n*len(added)+j] = v
		}
	}
	s.indexes = append(s.indexes, added...)
	s.publishIndexes()
	for _, ix := range added {
		s.c.addIndex(ix.byNamespace)
	}
	for n, it := range items {
		for j, ix := range added {
			if !ix.byNamespace {
				s.c.joinIndex(it.e, first+j, values[n*len(added)+j])
			}
		}
	}
	return nil
}

// indexValues appends to dst the values of every index for obj, in index
// order; nil for an index by namespace, which needs none.
func indexValues[T Object](indexes []userIndex[T], obj T, name ObjectName, dst [][]string) ([][]string, error) {
	for i := range indexes {
		if indexes[i].byNamespace {
			dst = append(dst, nil)
			continue
		}
		v, err := indexes[i].call(obj, name)
		if err != nil {
			return nil, err
		}
		dst = append(dst, v)
	}
	return dst, nil
}

// call computes the index's values for obj, stored under name.
func (ix *userIndex[T]) call(obj T, name ObjectName) ([]string, error) {
	if ix.fn == nil {
		return nil, fmt.Errorf("index %q has a nil IndexFunc", ix.name)
	}
	v, err := ix.fn(obj)
	if err != nil {
		return nil, fmt.Errorf("index %q: object %s: %w", ix.name, name, err)
	}
	return v, nil
}

// indexNumber returns the position of the named index. Indexes are few, so
// a scan beats a map lookup.
func (s *Indexer[T]) indexNumber(name string) (int, error) {
	for i := range s.indexes {
		if s.indexes[i].name == name {
			return i, nil
		}
	}
	return 0, fmt.Errorf("index with name %q does not exist", name)
}

func sortedNames[T Object](indexers map[string]IndexFunc[T]) []string {
	names := make([]string, 0, len(indexers))
	for name := range indexers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
