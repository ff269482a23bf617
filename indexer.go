package informer

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
)

// IndexFunc computes the values under which obj is indexed. It may return
// several values (the object is then found under each of them) or none. It
// must be a pure function of obj: the Indexer calls it once per stored
// version of an object and remembers the result. It is called while the
// Indexer's write lock is held, so it must not call back into the Indexer.
type IndexFunc[T Object] func(obj T) ([]string, error)

// Indexers maps the name of each index to the function computing it.
type Indexers[T Object] map[string]IndexFunc[T]

// NamespaceIndex is the conventional name of the index by namespace, whose
// function is [MetaNamespaceIndexFunc].
const NamespaceIndex = "namespace"

// MetaNamespaceIndexFunc indexes an object by its namespace (the empty string
// for a cluster-scoped object).
func MetaNamespaceIndexFunc[T Object](obj T) ([]string, error) {
	return []string{obj.GetNamespace()}, nil
}

// Indexer is a thread-safe, typed store of objects keyed by namespace and
// name, with any number of named secondary indexes and a built-in label
// index (see [Indexer.Select]). It has the semantics of client-go's
// cache.Indexer: adding an existing object updates it, listing returns
// unordered snapshots, and Replace swaps the whole content.
//
// All methods may be called concurrently. Objects are stored and returned
// as they are, without copying: callers must not modify an object after
// storing it or after receiving it from the Indexer.
type Indexer[T Object] struct {
	mu      sync.RWMutex
	c       *contents[T]
	indexes []userIndex[T] // position i owns the postings with owner i
	rv      string
}

// userIndex is one named index and its function.
type userIndex[T Object] struct {
	name string
	fn   IndexFunc[T]
}

// NewIndexer returns an empty Indexer maintaining the given indexes.
func NewIndexer[T Object](indexers Indexers[T]) *Indexer[T] {
	s := &Indexer[T]{}
	for _, name := range sortedNames(indexers) {
		s.indexes = append(s.indexes, userIndex[T]{name: name, fn: indexers[name]})
	}
	s.c = newContents[T](len(s.indexes), 0)
	return s
}

// Add stores obj, replacing any object stored under the same namespace and
// name. The store's resource version becomes obj's. An error from an index
// function is returned and leaves the store unchanged.
func (s *Indexer[T]) Add(obj T) error {
	_, _, err := s.upsert(obj)
	return err
}

// Update stores obj exactly like [Indexer.Add]: updating an object that is
// not stored adds it.
func (s *Indexer[T]) Update(obj T) error {
	_, _, err := s.upsert(obj)
	return err
}

// Delete removes the object stored under obj's namespace and name, if any,
// and sets the store's resource version to obj's even when nothing was
// stored, as client-go does.
func (s *Indexer[T]) Delete(obj T) error {
	if err := checkObject(obj); err != nil {
		return fmt.Errorf("deleting: %w", err)
	}
	name := NameOf(obj)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.c.entries.get(name); e != nil {
		s.c.removeEntry(e)
	}
	s.rv = obj.GetResourceVersion()
	return nil
}

// Get returns the stored object with obj's namespace and name.
func (s *Indexer[T]) Get(obj T) (item T, exists bool, err error) {
	if err := checkObject(obj); err != nil {
		return item, false, fmt.Errorf("getting: %w", err)
	}
	item, exists = s.getByName(NameOf(obj))
	return item, exists, nil
}

// GetByKey returns the object stored under key ("namespace/name", or "name"
// for a cluster-scoped object, as [KeyOf] builds it). It never returns an
// error; the error result exists for compatibility with client-go's Store.
func (s *Indexer[T]) GetByKey(key string) (item T, exists bool, err error) {
	s.mu.RLock()
	e := s.c.entries.getKey(key)
	s.mu.RUnlock()
	if e == nil {
		return item, false, nil
	}
	return e.obj, true, nil
}

// getByName looks up the object stored under name without building a key.
func (s *Indexer[T]) getByName(name ObjectName) (T, bool) {
	s.mu.RLock()
	e := s.c.entries.get(name)
	s.mu.RUnlock()
	if e == nil {
		var zero T
		return zero, false
	}
	return e.obj, true
}

// List returns every stored object, in no particular order. The slice is
// the caller's; the objects are shared.
func (s *Indexer[T]) List() []T {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.c.all.appendObjects(make([]T, 0, len(s.c.all.items)))
}

// ListKeys returns the key of every stored object, in no particular order.
func (s *Indexer[T]) ListKeys() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	keys := make([]string, 0, len(s.c.all.items))
	for _, it := range s.c.all.items {
		keys = append(keys, it.e.name.String())
	}
	return keys
}

// Replace atomically replaces the whole content with items and sets the
// store's resource version to resourceVersion. If several items share a
// name, the last one is kept. An error (a zero item, an index function
// failing) leaves the store unchanged. The Indexer takes ownership of items'
// objects but not of the slice.
func (s *Indexer[T]) Replace(items []T, resourceVersion string) error {
	_, _, err := s.replace(items, resourceVersion, false)
	return err
}

// Resync does nothing: an Indexer has nothing to re-deliver. It exists for
// compatibility with client-go's Store.
func (s *Indexer[T]) Resync() error {
	return nil
}

// LastStoreSyncResourceVersion returns the resource version of the last
// write (Add, Update, Delete, Replace) or Bookmark.
func (s *Indexer[T]) LastStoreSyncResourceVersion() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.rv
}

// Bookmark records that the store is up to date as of resourceVersion.
func (s *Indexer[T]) Bookmark(resourceVersion string) {
	s.mu.Lock()
	s.rv = resourceVersion
	s.mu.Unlock()
}

// upsert stores obj under NameOf(obj) and sets the store's resource version
// to obj's. It returns the object it replaced (zero T and false if obj is
// new). On error nothing changes.
func (s *Indexer[T]) upsert(obj T) (old T, existed bool, err error) {
	if err := checkObject(obj); err != nil {
		return old, false, fmt.Errorf("storing: %w", err)
	}
	name := NameOf(obj)
	s.mu.Lock()
	defer s.mu.Unlock()
	var buf [4][]string
	values, err := s.indexValues(obj, name, buf[:0])
	if err != nil {
		return old, false, err
	}
	old, existed = s.c.put(name, obj, values)
	s.rv = obj.GetResourceVersion()
	return old, existed, nil
}

// remove deletes the object stored under name and returns it (zero T and
// false if nothing was stored). Unlike Delete it has no object to take a
// resource version from, so the store's resource version is unchanged.
func (s *Indexer[T]) remove(name ObjectName) (old T, existed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.c.entries.get(name)
	if e == nil {
		return old, false, nil
	}
	s.c.removeEntry(e)
	return e.obj, true, nil
}

// replaceAll atomically swaps the whole content for items at
// resourceVersion. removed holds every previously stored object whose name
// is not in items (in no particular order). previous is nil if no item was
// stored before; otherwise previous[i] is the object stored under items[i]'s
// name before the call, or zero T if there was none. On error nothing
// changes.
func (s *Indexer[T]) replaceAll(items []T, resourceVersion string) (removed, previous []T, err error) {
	return s.replace(items, resourceVersion, true)
}

func (s *Indexer[T]) replace(items []T, resourceVersion string, diff bool) (removed, previous []T, err error) {
	for i, obj := range items {
		if err := checkObject(obj); err != nil {
			return nil, nil, fmt.Errorf("replacing: item %d: %w", i, err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	fresh := newContents[T](len(s.indexes), len(items))
	var buf [4][]string
	for _, obj := range items {
		name := NameOf(obj)
		values, err := s.indexValues(obj, name, buf[:0])
		if err != nil {
			return nil, nil, fmt.Errorf("replacing: %w", err)
		}
		fresh.put(name, obj, values)
	}
	if diff {
		removed, previous = s.c.diff(fresh, items)
	}
	s.c = fresh
	s.rv = resourceVersion
	return removed, previous, nil
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
	values, err := s.callIndexFunc(i, obj, NameOf(obj))
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
func (s *Indexer[T]) GetIndexers() Indexers[T] {
	s.mu.RLock()
	defer s.mu.RUnlock()
	indexers := make(Indexers[T], len(s.indexes))
	for _, ix := range s.indexes {
		indexers[ix.name] = ix.fn
	}
	return indexers
}

// AddIndexers adds indexes and indexes every stored object in them at once.
// It fails, changing nothing, if a name is already in use, a function is
// nil or a function returns an error for a stored object.
func (s *Indexer[T]) AddIndexers(newIndexers Indexers[T]) error {
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
		added[j] = userIndex[T]{name: name, fn: newIndexers[name]}
	}
	// Compute everything before changing anything so that an error leaves
	// the store as it was.
	items := s.c.all.items
	values := make([][]string, len(items)*len(added))
	for n, it := range items {
		for j, ix := range added {
			v, err := ix.fn(it.obj)
			if err != nil {
				return fmt.Errorf("adding index %q: object %s: %w", ix.name, it.e.name, err)
			}
			values[n*len(added)+j] = v
		}
	}
	s.indexes = append(s.indexes, added...)
	for range added {
		s.c.buckets = append(s.c.buckets, map[string]*posting[T]{})
	}
	for n, it := range items {
		for j := range added {
			s.c.joinIndex(it.e, first+j, values[n*len(added)+j])
		}
	}
	return nil
}

// indexValues appends to dst the values of every index for obj, in index
// order. Called with the lock held.
func (s *Indexer[T]) indexValues(obj T, name ObjectName, dst [][]string) ([][]string, error) {
	for i := range s.indexes {
		v, err := s.callIndexFunc(i, obj, name)
		if err != nil {
			return nil, err
		}
		dst = append(dst, v)
	}
	return dst, nil
}

func (s *Indexer[T]) callIndexFunc(i int, obj T, name ObjectName) ([]string, error) {
	ix := s.indexes[i]
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

func sortedNames[T Object](indexers Indexers[T]) []string {
	names := make([]string, 0, len(indexers))
	for name := range indexers {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// checkObject rejects the zero T (a nil pointer), which has no name.
func checkObject[T Object](obj T) error {
	var zero T
	if obj == zero {
		return fmt.Errorf("nil %T object", obj)
	}
	return nil
}
