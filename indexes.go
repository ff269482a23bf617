package informer

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// IndexFunc computes the values under which obj is indexed. It may return
// several values (the object is then found under each of them) or none. It
// must be a pure function of obj: the Indexer calls it once per stored
// version of an object and remembers where it filed the object. It is called
// concurrently from several goroutines, so it must be safe for concurrent
// use. It is never called with the Indexer's lock held, so it may call the
// Indexer, the informer and its Lister.
//
// When an index is added, the Indexer also calls its function once with the
// zero T (a nil pointer), to recognize [MetaNamespaceIndexFunc] (see there);
// what any other function returns, or panics with, for that call is ignored.
//
// Indexes are given as a map[string]IndexFunc[T] from each index's name to
// its function ([NewIndexer], [InformerOptions].Indexers,
// [Indexer.AddIndexers]).
type IndexFunc[T Object] func(obj T) ([]string, error)

// NamespaceIndex is the conventional name of the index by namespace, whose
// function is [MetaNamespaceIndexFunc].
const NamespaceIndex = "namespace"

// MetaNamespaceIndexFunc indexes an object by its namespace (the empty string
// for a cluster-scoped object). An Indexer serves an index whose function is
// MetaNamespaceIndexFunc, or returns what it returns, from its own lists per
// namespace, without calling it for each object: it recognizes the function
// by its answer for the zero T (a nil pointer), a value no namespace can be.
func MetaNamespaceIndexFunc[T Object](obj T) ([]string, error) {
	var zero T
	if obj == zero {
		return []string{namespaceIndexMarker}, nil
	}
	return []string{obj.GetNamespace()}, nil
}

// namespaceIndexMarker is MetaNamespaceIndexFunc's value for the zero T: a
// NUL byte cannot appear in a namespace, so no other function returns it
// unless it forwards MetaNamespaceIndexFunc's answer, and then it is a
// namespace index too.
const namespaceIndexMarker = "\x00MetaNamespaceIndexFunc"

// userIndex is one named index and its function.
type userIndex[T Object] struct {
	name string
	fn   IndexFunc[T]
	// byNamespace marks an index whose function is MetaNamespaceIndexFunc:
	// it is served by the namespace kind, whose lists are the Indexer's own
	// per-namespace lists, so its values are neither computed nor filed
	// separately. Otherwise kind is the owner of its function kind.
	byNamespace bool
	kind        int32
}

// newUserIndex returns the index name computed by fn.
func newUserIndex[T Object](name string, fn IndexFunc[T]) userIndex[T] {
	return userIndex[T]{name: name, fn: fn, byNamespace: isNamespaceIndexFunc(fn), kind: ownerNamespace}
}

// isNamespaceIndexFunc reports whether fn answers the zero T as
// MetaNamespaceIndexFunc does. A panic or an error is a no.
//
// The recognition saves the time, allocations and memory of filing the
// namespace twice: BenchmarkNamespaceIndex measures it.
func isNamespaceIndexFunc[T Object](fn IndexFunc[T]) (yes bool) {
	if fn == nil {
		return false
	}
	defer func() {
		if recover() != nil {
			yes = false
		}
	}()
	var zero T
	values, err := fn(zero)
	return err == nil && len(values) == 1 && values[0] == namespaceIndexMarker
}

// indexPlan is the Indexer's indexes as the writes see them: the user
// indexes in order, and the index kinds that serve them (see pipeline.go):
// kinds[ownerNamespace] and kinds[ownerLabel], then one function kind per
// user index not by namespace. A plan is never modified once published;
// adding indexes publishes a new one.
type indexPlan[T Object] struct {
	indexes []userIndex[T]
	kinds   []indexKind[T]
}

// newIndexPlan returns the plan for indexes, setting each one's kind.
func newIndexPlan[T Object](indexes []userIndex[T]) *indexPlan[T] {
	plan := &indexPlan[T]{
		indexes: make([]userIndex[T], len(indexes)),
		kinds:   []indexKind[T]{ownerNamespace: namespaceKind[T]{}, ownerLabel: labelKind[T]{}},
	}
	for i, ix := range indexes {
		if !ix.byNamespace {
			ix.kind = int32(len(plan.kinds))
			plan.kinds = append(plan.kinds, &funcKind[T]{
				name: ix.name, fn: ix.fn, value: int(ix.kind - firstFuncOwner),
			})
		}
		plan.indexes[i] = ix
	}
	return plan
}

// The functions below call the index kinds of a plan in order. The
// namespace and label kinds, at their fixed positions in every plan, are
// called directly; the function kinds after them, if any, through a type
// switch on the concrete kind, in a function of its own. Neither goes
// through indexKind: see pipeline.go for why. Looping over the built-in
// kinds with the switch cost W1 about 110 instructions per event
// (BenchmarkQueueAndStore under callgrind, docs/benchmarks.md "W1 against
// 624ceee"), though they are the same in every plan. A new kind adds a case
// to each switch.

// prepare runs every kind's prepare for obj, stored under name.
func (plan *indexPlan[T]) prepare(obj T, name ObjectName, v *prepValues) error {
	if err := (namespaceKind[T]{}).prepare(obj, name, v); err != nil {
		return err
	}
	if err := (labelKind[T]{}).prepare(obj, name, v); err != nil {
		return err
	}
	if len(plan.kinds) == int(firstFuncOwner) {
		return nil
	}
	return plan.prepareFuncKinds(obj, name, v)
}

// prepareFuncKinds runs the prepare of each kind after the built-in ones.
func (plan *indexPlan[T]) prepareFuncKinds(obj T, name ObjectName, v *prepValues) error {
	for _, k := range plan.kinds[firstFuncOwner:] {
		var err error
		switch k := k.(type) {
		case *funcKind[T]:
			err = k.prepare(obj, name, v)
		default:
			panic(fmt.Sprintf("informer: index kind %T has no case in indexPlan.prepare", k))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// file puts entry id on its lists of every kind for p and values: a new
// entry (stored false) with each kind's file, a stored one with its refile.
func (c *contents[T]) file(id int32, p *writePrep, values [][]string, stored bool) {
	if stored {
		(namespaceKind[T]{}).refile(c, id, p, values)
		(labelKind[T]{}).refile(c, id, p, values)
	} else {
		(namespaceKind[T]{}).file(c, id, p, values)
		(labelKind[T]{}).file(c, id, p, values)
	}
	if len(c.kinds) > int(firstFuncOwner) {
		c.fileFuncKinds(id, p, values, stored)
	}
}

// fileFuncKinds is file for the kinds after the built-in ones.
func (c *contents[T]) fileFuncKinds(id int32, p *writePrep, values [][]string, stored bool) {
	for _, k := range c.kinds[firstFuncOwner:] {
		switch k := k.(type) {
		case *funcKind[T]:
			if stored {
				k.refile(c, id, p, values)
			} else {
				k.file(c, id, p, values)
			}
		default:
			panic(fmt.Sprintf("informer: index kind %T has no case in contents.file", k))
		}
	}
}

// Index returns the stored objects that share at least one value of the
// named index with obj, in no particular order.
func (s *Indexer[T]) Index(indexName string, obj T) ([]T, error) {
	if err := checkObject(obj); err != nil {
		return nil, fmt.Errorf("index %q: %w", indexName, err)
	}
	// The index function runs without the lock: it may read the Indexer.
	// Indexes are only ever appended, so position i stays valid.
	indexes := s.published.Load().indexes
	i, err := indexNumber(indexes, indexName)
	if err != nil {
		return nil, err
	}
	values, err := callIndexFunc(indexes[i].name, indexes[i].fn, obj, NameOf(obj))
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	c := s.c
	col := c.buckets[i]
	if len(values) == 1 {
		p, ok := col.lookup(values[0])
		if !ok {
			return []T{}, nil
		}
		return c.appendObjects(make([]T, 0, len(p.ids)), p.ids), nil
	}
	// An object may be under several of the values: report it once.
	seen := make(map[int32]struct{})
	list := []T{}
	for _, v := range values {
		if p, ok := col.lookup(v); ok {
			for _, id := range p.ids {
				if _, dup := seen[id]; !dup {
					seen[id] = struct{}{}
					list = append(list, c.objs[id])
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
	p, ok := s.c.buckets[i].lookup(indexedValue)
	if !ok {
		return []string{}, nil
	}
	keys := make([]string, 0, len(p.ids))
	for _, id := range p.ids {
		keys = append(keys, NameOf(s.c.objs[id]).String())
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
	values := make([]string, 0, len(s.c.buckets[i].byValue))
	for v := range s.c.buckets[i].byValue {
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
	p, ok := s.c.buckets[i].lookup(indexedValue)
	if !ok {
		return []T{}, nil
	}
	return s.c.appendObjects(make([]T, 0, len(p.ids)), p.ids), nil
}

// GetIndexers returns a copy of the index functions in use.
func (s *Indexer[T]) GetIndexers() map[string]IndexFunc[T] {
	s.mu.RLock()
	defer s.mu.RUnlock()
	indexers := make(map[string]IndexFunc[T], len(s.plan.indexes))
	for _, ix := range s.plan.indexes {
		indexers[ix.name] = ix.fn
	}
	return indexers
}

// AddIndexers adds indexes and indexes every stored object in them at once.
// It fails, changing nothing, if a name is already in use, a function is
// nil or a function returns an error for a stored object. The functions run
// without the Indexer's lock, so they may read the Indexer.
func (s *Indexer[T]) AddIndexers(newIndexers map[string]IndexFunc[T]) error {
	for name, fn := range newIndexers {
		if fn == nil {
			return fmt.Errorf("adding index %q: nil IndexFunc", name)
		}
	}
	names := sortedNames(newIndexers)
	added := make([]userIndex[T], len(names))
	for j, name := range names {
		added[j] = newUserIndex(name, newIndexers[name])
	}
	// Compute everything before changing anything so that an error leaves
	// the store as it was. Objects written meanwhile are computed in the
	// next round; each round only computes the objects it has not seen.
	computed := make(map[T][][]string)
	for {
		if err := s.checkIndexConflicts(newIndexers); err != nil {
			return err
		}
		s.mu.RLock()
		objs := slices.Clone(s.c.objs)
		s.mu.RUnlock()
		for _, obj := range objs {
			if _, ok := computed[obj]; ok {
				continue
			}
			values := make([][]string, len(added))
			for j, ix := range added {
				if ix.byNamespace {
					continue // filed under the namespace lists already
				}
				v, err := ix.fn(obj)
				if err != nil {
					return fmt.Errorf("adding index %q: object %s: %w", ix.name, NameOf(obj), err)
				}
				values[j] = v
			}
			computed[obj] = values
		}
		s.mu.Lock()
		if err := s.joinIndexes(newIndexers, added, computed); err != errRecompute {
			s.mu.Unlock()
			return err
		}
		s.mu.Unlock()
	}
}

// errRecompute tells AddIndexers that objects were stored since it computed
// their values.
var errRecompute = errors.New("objects changed while indexing")

// checkIndexConflicts fails if one of the names is already in use.
func (s *Indexer[T]) checkIndexConflicts(newIndexers map[string]IndexFunc[T]) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var conflicts []string
	for name := range newIndexers {
		if _, err := s.indexNumber(name); err == nil {
			conflicts = append(conflicts, name)
		}
	}
	if len(conflicts) > 0 {
		sort.Strings(conflicts)
		return fmt.Errorf("adding indexes: indexer conflict: %s already exist", strings.Join(conflicts, ", "))
	}
	return nil
}

// joinIndexes adds the indexes and files every stored object under the
// values computed for it. It returns errRecompute, changing nothing, if a
// stored object has no computed values. s.mu must be held.
func (s *Indexer[T]) joinIndexes(newIndexers map[string]IndexFunc[T], added []userIndex[T], computed map[T][][]string) error {
	for name := range newIndexers {
		if _, err := s.indexNumber(name); err == nil {
			return fmt.Errorf("adding indexes: indexer conflict: %s already exist", name)
		}
	}
	objs := s.c.objs
	for _, obj := range objs {
		if _, ok := computed[obj]; !ok {
			return errRecompute
		}
	}
	first := len(s.plan.indexes)
	s.setPlan(newIndexPlan(append(slices.Clip(s.plan.indexes), added...)))
	for _, ix := range s.plan.indexes[first:] {
		s.c.addIndex(s.plan, ix)
	}
	for id, obj := range objs {
		values := computed[obj]
		for j, ix := range s.plan.indexes[first:] {
			if !ix.byNamespace {
				s.plan.kinds[ix.kind].(*funcKind[T]).join(s.c, int32(id), values[j])
			}
		}
	}
	return nil
}

// callIndexFunc computes the values of the index name, whose function is
// fn, for obj, stored under objName.
func callIndexFunc[T Object](name string, fn IndexFunc[T], obj T, objName ObjectName) ([]string, error) {
	if fn == nil {
		return nil, fmt.Errorf("index %q has a nil IndexFunc", name)
	}
	v, err := fn(obj)
	if err != nil {
		return nil, fmt.Errorf("index %q: object %s: %w", name, objName, err)
	}
	return v, nil
}

// indexNumber returns the position of the named index. s.mu must be held.
func (s *Indexer[T]) indexNumber(name string) (int, error) {
	return indexNumber(s.plan.indexes, name)
}

// indexNumber returns the position of the named index in indexes. Indexes
// are few, so a scan beats a map lookup.
func indexNumber[T Object](indexes []userIndex[T], name string) (int, error) {
	for i := range indexes {
		if indexes[i].name == name {
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
