package informer

import (
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
)

// Indexer is a thread-safe, typed store of objects keyed by namespace and
// name, with any number of named secondary indexes and a built-in label
// index (queried through a [Lister], see [NewLister]). It has the semantics
// of client-go's cache.Indexer: adding an existing object updates it,
// listing returns unordered snapshots, and Replace swaps the whole content.
//
// All methods may be called concurrently. Objects are stored and returned
// as they are, without copying: callers must not modify an object after
// storing it or after receiving it from the Indexer.
type Indexer[T Object] struct {
	mu sync.RWMutex
	c  *contents[T]
	// plan is the indexes and their kinds; position i of plan.indexes owns
	// c.buckets[i].
	plan *indexPlan[T]
	rv   string

	// seed hashes names in every content the Indexer ever holds, so that a
	// name's hash can be computed without the lock.
	seed maphash.Seed
	// published is plan, for the writes' preparation and Index, which take
	// no lock; replaced whenever indexes are added.
	published atomic.Pointer[indexPlan[T]]
	// labelsIndexed is set, for good, when the Indexer indexes its first
	// label key (indexLabelKeys); read without the lock, it tells the
	// queue whether to copy labels for the writes it prepares
	// (writePreparer.prepare).
	labelsIndexed atomic.Bool
	// warmSum accumulates what warm returns (see warmed), under mu.
	warmSum int
}

// NewIndexer returns an empty Indexer maintaining the given indexes.
func NewIndexer[T Object](indexers map[string]IndexFunc[T]) *Indexer[T] {
	s := &Indexer[T]{seed: maphash.MakeSeed()}
	var indexes []userIndex[T]
	for _, name := range sortedNames(indexers) {
		indexes = append(indexes, newUserIndex(name, indexers[name]))
	}
	s.setPlan(newIndexPlan(indexes))
	s.c = newContents(s.plan, 0, s.seed, nil)
	return s
}

// setPlan makes plan the Indexer's indexes, also for the writes'
// preparation. s.mu must be held, or s not yet shared.
func (s *Indexer[T]) setPlan(plan *indexPlan[T]) {
	s.plan = plan
	s.published.Store(plan)
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
	if id := s.c.get(name); id >= 0 {
		s.c.removeEntry(id)
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
	c := s.c
	if id := findKey(&c.names, c.entryNames, key); id >= 0 {
		item, exists = c.objs[id], true
	}
	s.mu.RUnlock()
	return item, exists, nil
}

// getByName looks up the object stored under name without building a key.
func (s *Indexer[T]) getByName(name ObjectName) (T, bool) {
	s.mu.RLock()
	var obj T
	id := s.c.get(name)
	if id >= 0 {
		obj = s.c.objs[id]
	}
	s.mu.RUnlock()
	return obj, id >= 0
}

// List returns every stored object, in no particular order. The slice is
// the caller's; the objects are shared.
func (s *Indexer[T]) List() []T {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.c.objs)
}

// listAtVersion returns every stored object and the store's resource
// version, taken atomically. The read lock is held for the copy of the
// pointers only (see BenchmarkCheckConsistency/snapshot).
func (s *Indexer[T]) listAtVersion() ([]T, string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.c.objs), s.rv
}

// holdsNamespaced reports whether some stored object has a namespace.
func (s *Indexer[T]) holdsNamespaced() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	n := len(s.c.ns.byValue)
	if n != 1 {
		return n > 1
	}
	_, clusterScoped := s.c.ns.byValue[""]
	return !clusterScoped
}

// size returns the number of stored objects.
func (s *Indexer[T]) size() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.c.objs)
}

// ListKeys returns the key of every stored object, in no particular order.
func (s *Indexer[T]) ListKeys() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	keys := make([]string, 0, len(s.c.objs))
	for _, obj := range s.c.objs {
		keys = append(keys, NameOf(obj).String())
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

// cachedAt returns the stored object with obj's namespace and name if its
// resource version is obj's (and not empty): the object obj describes
// again, as a relist does for every unchanged object.
func (s *Indexer[T]) cachedAt(obj T) (T, bool) {
	return s.cachedUnder(NameOf(obj), obj.GetResourceVersion())
}

// cachedUnder returns the object stored under name if its resource version
// is resourceVersion (and not empty).
func (s *Indexer[T]) cachedUnder(name ObjectName, resourceVersion string) (T, bool) {
	var cached T
	if resourceVersion == "" {
		return cached, false
	}
	s.mu.RLock()
	id := s.c.get(name)
	found := id >= 0 && s.c.objs[id].GetResourceVersion() == resourceVersion
	if found {
		cached = s.c.objs[id]
	}
	s.mu.RUnlock()
	return cached, found
}

// upsert stores obj under NameOf(obj) and sets the store's resource version
// to obj's. It returns the object it replaced (zero T and false if obj is
// new). On error nothing changes.
func (s *Indexer[T]) upsert(obj T) (old T, existed bool, err error) {
	if err := checkObject(obj); err != nil {
		return old, false, fmt.Errorf("storing: %w", err)
	}
	for {
		// The index functions run without the lock (they may read the
		// Indexer); the values are current if no index was added meanwhile.
		plan := s.published.Load()
		var p writePrep
		var v prepValues
		if err := prepareWrite(plan, s.seed, obj, true, &p, &v); err != nil {
			return old, false, err
		}
		s.mu.Lock()
		if s.plan == plan {
			old, _, existed = s.c.put(obj, &p, v.slice())
			s.rv = p.rv
			s.mu.Unlock()
			return old, existed, nil
		}
		s.mu.Unlock()
	}
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

// replaceWithin is replaceAll limited to the objects within accepts: the
// stored objects it rejects are kept as they are, the others are replaced
// by items (which within must accept). removed and previous are as for
// replaceAll, about items only. Only the dispatcher writes while it runs.
func (s *Indexer[T]) replaceWithin(items []T, resourceVersion string, within func(T) bool) (removed, previous []T, err error) {
	var kept []T
	for _, obj := range s.List() {
		if !within(obj) {
			kept = append(kept, obj)
		}
	}
	if resourceVersion == "" {
		resourceVersion = s.LastStoreSyncResourceVersion()
	}
	all := append(kept, items...)
	removed, previous, err = s.replace(all, resourceVersion, true)
	if previous != nil {
		previous = previous[len(kept):]
	}
	return removed, previous, err
}

func (s *Indexer[T]) replace(items []T, resourceVersion string, diff bool) (removed, previous []T, err error) {
	for i, obj := range items {
		if err := checkObject(obj); err != nil {
			return nil, nil, fmt.Errorf("replacing: item %d: %w", i, err)
		}
	}
	if s.unchangedBy(items, resourceVersion) {
		// A relist of an unchanged cache, whose items the queue replaced
		// by the cached objects (eventQueue.prepareListed), changes
		// nothing but the resource version: rebuilding the contents would
		// allocate about 1 KB per object for nothing (E7: a relist of
		// 300,000 production-like pods peaked at 1.21x the steady
		// resident set; docs/scale.md).
		if diff && len(items) > 0 {
			previous = slices.Clone(items)
		}
		return nil, previous, nil
	}
	for {
		// Build the new content without the lock, so that readers wait only
		// for the swap. The build is current if no index was added
		// meanwhile; label keys indexed meanwhile are indexed at the swap.
		plan := s.published.Load()
		s.mu.RLock()
		labelKeys := s.c.labelKeyNames()
		s.mu.RUnlock()
		fresh, err := buildContents(plan, items, s.seed, labelKeys)
		if err != nil {
			return nil, nil, fmt.Errorf("replacing: %w", err)
		}
		s.mu.Lock()
		if s.plan == plan {
			for _, li := range s.c.labelKeys {
				if fresh.labels[li.key] == nil {
					fresh.indexLabelKey(li.key)
				}
			}
			if diff {
				removed, previous = s.c.diff(fresh, items)
			}
			s.c = fresh
			s.rv = resourceVersion
			s.mu.Unlock()
			return removed, previous, nil
		}
		s.mu.Unlock()
	}
}

// unchangedBy reports whether items are exactly the stored objects, in the
// order the contents list them (that of the last list, and of the updates
// in place since), and if so sets the store's resource version to
// resourceVersion: replacing the contents by items would change nothing
// else. The scan under the write lock is one pass over a dense slice,
// taken only after the same scan under the read lock found no difference.
func (s *Indexer[T]) unchangedBy(items []T, resourceVersion string) bool {
	same := func() bool {
		return slices.Equal(items, s.c.objs)
	}
	s.mu.RLock()
	candidate := same()
	s.mu.RUnlock()
	if !candidate {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !same() {
		return false
	}
	s.rv = resourceVersion
	return true
}

// buildContents indexes items in new contents, with the label keys
// labelKeys indexed.
func buildContents[T Object](plan *indexPlan[T], items []T, seed maphash.Seed, labelKeys []string) (*contents[T], error) {
	fresh := newContents(plan, len(items), seed, labelKeys)
	for _, obj := range items {
		var p writePrep
		var v prepValues
		if err := prepareWrite(plan, seed, obj, true, &p, &v); err != nil {
			return nil, err
		}
		fresh.put(obj, &p, v.slice())
	}
	return fresh, nil
}

// checkObject rejects the zero T (a nil pointer), which has no name.
func checkObject[T Object](obj T) error {
	var zero T
	if obj == zero {
		return fmt.Errorf("nil %T object", obj)
	}
	return nil
}
