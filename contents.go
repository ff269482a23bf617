package informer

import (
	"hash/maphash"
	"slices"
)

// The Indexer keeps its objects in a slab: entry number i is objs[i], and
// every structure of the store refers to an entry by its number, an int32,
// so that an object costs a few words wherever it is filed, not a heap
// entry of its own with pointers to it. The slab is dense: removing an
// entry moves the last one into its place and renumbers it, so the slab is
// also the list of every object.
//
// Every index is a listColumn: posting lists, a dense slice of the numbers
// of the entries filed under one value, so that answering a query walks
// contiguous memory; and, by entry number, the list each entry is on and
// its position there, so that removing an entry from a list is an O(1)
// swap with the list's last item.

// posting is the list of the entries filed under one value of one index.
type posting struct {
	ids   []int32
	value string // the index value, namespace or label value
}

// membership is one list an entry is on, and its position there.
type membership struct {
	list, pos int32
}

// listColumn is the posting lists of one index (the namespace lists, one
// label key, one user index) and where each entry is on them. Its columns
// have an element per entry of the slab.
type listColumn struct {
	lists   []posting        // by list number
	byValue map[string]int32 // list numbers by value
	free    []int32          // numbers of dropped lists, reused first
	// list[id] is the number of the (first) list entry id is on, -1 if
	// none; pos[id] is its position there.
	list []int32
	pos  []int32
	// extra holds, by entry number, the lists beyond the first of the
	// entries a user index files under several values. Labels and
	// namespaces never need it.
	extra map[int32][]membership
	count int // memberships: entries on a list, counting extra ones
}

// newListColumn returns a column without lists for entries entries.
func newListColumn(entries, capacity int) listColumn {
	col := listColumn{byValue: map[string]int32{}, list: make([]int32, entries, max(entries, capacity)), pos: make([]int32, entries, max(entries, capacity))}
	for i := range col.list {
		col.list[i] = -1
	}
	return col
}

// grow adds an entry on no list at the end of the columns.
func (col *listColumn) grow() {
	col.list = append(col.list, -1)
	col.pos = append(col.pos, 0)
}

// listFor returns the number of value's list, made empty if there is none.
func (col *listColumn) listFor(value string) int32 {
	if l, ok := col.byValue[value]; ok {
		return l
	}
	var l int32
	if n := len(col.free); n > 0 {
		l, col.free = col.free[n-1], col.free[:n-1]
		col.lists[l].value = value
	} else {
		l = int32(len(col.lists))
		col.lists = append(col.lists, posting{value: value})
	}
	col.byValue[value] = l
	return l
}

// join appends entry id to list l, which it is not on.
func (col *listColumn) join(id, l int32) {
	p := &col.lists[l]
	pos := int32(len(p.ids))
	p.ids = append(p.ids, id)
	if col.list[id] < 0 {
		col.list[id], col.pos[id] = l, pos
	} else {
		if col.extra == nil {
			col.extra = map[int32][]membership{}
		}
		col.extra[id] = append(col.extra[id], membership{l, pos})
	}
	col.count++
}

// on reports whether entry id is on list l.
func (col *listColumn) on(id, l int32) bool {
	if col.list[id] == l {
		return true
	}
	if col.extra != nil {
		for _, m := range col.extra[id] {
			if m.list == l {
				return true
			}
		}
	}
	return false
}

// setPos records that entry id's item on list l is at pos.
func (col *listColumn) setPos(id, l, pos int32) {
	if col.list[id] == l {
		col.pos[id] = pos
		return
	}
	ms := col.extra[id]
	for i := range ms {
		if ms[i].list == l {
			ms[i].pos = pos
			return
		}
	}
}

// leave takes entry id off list l, which it is on, moving the list's last
// item into the hole. A list left empty is dropped.
func (col *listColumn) leave(id, l int32) {
	var pos int32
	if col.list[id] == l {
		pos = col.pos[id]
		col.list[id] = -1
		if ms := col.extra[id]; len(ms) > 0 {
			// Its last extra membership takes the column's place.
			m := ms[len(ms)-1]
			col.list[id], col.pos[id] = m.list, m.pos
			col.dropExtra(id, len(ms)-1)
		}
	} else {
		ms := col.extra[id]
		i := slices.IndexFunc(ms, func(m membership) bool { return m.list == l })
		pos = ms[i].pos
		ms[i] = ms[len(ms)-1]
		col.dropExtra(id, len(ms)-1)
	}
	p := &col.lists[l]
	last := int32(len(p.ids) - 1)
	if pos != last {
		moved := p.ids[last]
		p.ids[pos] = moved
		col.setPos(moved, l, pos)
	}
	p.ids = p.ids[:last]
	col.count--
	switch {
	case last == 0:
		delete(col.byValue, p.value)
		*p = posting{}
		col.free = append(col.free, l)
	case shrank(int(last), cap(p.ids)):
		p.ids = append(make([]int32, 0, 2*last), p.ids...)
	}
}

// shrank reports whether a slice of capacity that now holds n elements
// should give back its memory, reallocated with capacity 2n: once it is
// down to a quarter of a capacity of at least 64. It is the one rule for
// the posting lists and for the slab and its columns, so that a store or
// list that lost most of its entries does not keep its peak size. The
// margins make the copies cheap: a reallocated slice can double before it
// grows again, and must lose half its elements before it shrinks again,
// so each copy follows at least as many removals as it copies elements.
func shrank(n, capacity int) bool {
	return capacity >= 64 && n*4 <= capacity
}

// dropExtra removes the i-th extra membership of entry id, the last one.
func (col *listColumn) dropExtra(id int32, i int) {
	if i == 0 {
		delete(col.extra, id)
		return
	}
	col.extra[id] = col.extra[id][:i]
}

// leaveAll takes entry id off every list it is on.
func (col *listColumn) leaveAll(id int32) {
	for col.list[id] >= 0 {
		col.leave(id, col.list[id])
	}
}

// renumber records that entry from is now numbered to, whose place in the
// columns is free (it was just removed).
func (col *listColumn) renumber(from, to int32) {
	l, pos := col.list[from], col.pos[from]
	col.list[to], col.pos[to] = l, pos
	if l >= 0 {
		col.lists[l].ids[pos] = to
	}
	if ms, ok := col.extra[from]; ok {
		for _, m := range ms {
			col.lists[m.list].ids[m.pos] = to
		}
		col.extra[to] = ms
		delete(col.extra, from)
	}
}

// truncate keeps the columns of the first n entries, reallocated to
// capacity if it is not 0.
func (col *listColumn) truncate(n, capacity int) {
	col.list, col.pos = col.list[:n], col.pos[:n]
	if capacity > 0 {
		col.list = append(make([]int32, 0, capacity), col.list...)
		col.pos = append(make([]int32, 0, capacity), col.pos...)
	}
}

// lookup returns the list of value, if any.
func (col *listColumn) lookup(value string) (*posting, bool) {
	l, ok := col.byValue[value]
	if !ok {
		return nil, false
	}
	return &col.lists[l], true
}

// labelIndex is the lists of one label key, one per value: the label kind
// keeps one for each key a selection has named (index_label.go).
type labelIndex struct {
	key string
	listColumn
}

// The position of each index kind in the Indexer's indexPlan (see
// pipeline.go).
const (
	ownerNamespace int32 = 0 // one list per namespace (index_namespace.go)
	ownerLabel     int32 = 1 // one list per label key and value (index_label.go)
	firstFuncOwner int32 = 2 // the first user index's function kind (index_func.go)
)

// contents is everything an Indexer stores. Replace builds a new one and
// swaps it in, so that a failure leaves the old one untouched.
type contents[T Object] struct {
	names nameTable
	// objs is the slab; entryNames[id] is objs[id]'s name and hashes[id]
	// its slot hash. The names confirm the name table's hits without a
	// call through the type parameter for each of the object's two
	// strings: with them, GetByKey takes what it took before the slab
	// (BenchmarkGetByKey; docs/benchmarks.md, "W5 after the names
	// column"). They
	// are the object's own strings, so they cost a header each, 32 bytes
	// an entry.
	objs       []T
	entryNames []ObjectName
	hashes     []uint32
	// kinds are the index kinds filing every entry, kinds[owner] owning the
	// lists of that owner (the plan's kinds).
	kinds []indexKind[T]
	// ns is the namespace kind's lists; labels the label kind's, by key,
	// and labelKeys the same in the order they were indexed; funcs the
	// function kinds', in kind order.
	ns        listColumn
	labels    map[string]*labelIndex
	labelKeys []*labelIndex
	funcs     []*listColumn
	// buckets holds the lists of each user index: ns for an index by
	// namespace, else its function kind's.
	buckets []*listColumn
}

// newContents returns empty contents for the indexes of plan and the label
// keys labelKeys, sized for size objects.
func newContents[T Object](plan *indexPlan[T], size int, seed maphash.Seed, labelKeys []string) *contents[T] {
	c := &contents[T]{
		names:      newNameTable(size, seed),
		objs:       make([]T, 0, size),
		entryNames: make([]ObjectName, 0, size),
		hashes:     make([]uint32, 0, size),
		ns:         newListColumn(0, size),
		labels:     map[string]*labelIndex{},
	}
	for _, ix := range plan.indexes {
		c.addIndex(plan, ix)
	}
	c.kinds = plan.kinds
	for _, key := range labelKeys {
		c.indexLabelKey(key)
	}
	return c
}

// addIndex adds the (empty) lists of one more user index, and takes the
// kinds of plan, which serves it.
func (c *contents[T]) addIndex(plan *indexPlan[T], ix userIndex[T]) {
	col := &c.ns
	if !ix.byNamespace {
		fresh := newListColumn(len(c.objs), cap(c.objs))
		col = &fresh
		c.funcs = append(c.funcs, col)
	}
	c.buckets = append(c.buckets, col)
	c.kinds = plan.kinds
}

// get returns the number of the entry stored under name, or -1.
func (c *contents[T]) get(name ObjectName) int32 {
	return findName(&c.names, c.entryNames, hashObjectName(c.names.seed, name), name)
}

// put stores obj under p.name, filed by every index kind as p and values
// (the function kinds' values) prepared it, and returns the object it
// replaced and that object's resource version.
func (c *contents[T]) put(obj T, p *writePrep, values [][]string) (old T, oldRV string, existed bool) {
	id := findName(&c.names, c.entryNames, p.hash, p.name)
	if id < 0 {
		id = int32(len(c.objs))
		c.objs = append(c.objs, obj)
		c.entryNames = append(c.entryNames, p.name)
		c.hashes = append(c.hashes, slotHash(p.hash))
		c.ns.grow()
		for _, li := range c.labelKeys {
			li.grow()
		}
		for _, col := range c.funcs {
			col.grow()
		}
		c.names.insert(id, p.hash)
		c.file(id, p, values, false)
		return old, "", false
	}
	old = c.objs[id]
	c.file(id, p, values, true)
	// The new object's strings, so that the name holds none of the old
	// object's alive.
	c.objs[id], c.entryNames[id] = obj, p.name
	return old, old.GetResourceVersion(), true
}

// removeEntry takes entry id off every list and out of the store, and
// returns its object. The last entry takes its number.
func (c *contents[T]) removeEntry(id int32) T {
	obj := c.objs[id]
	c.ns.leaveAll(id)
	for _, li := range c.labelKeys {
		li.leaveAll(id)
	}
	for _, col := range c.funcs {
		col.leaveAll(id)
	}
	c.names.delete(id, c.hashes[id])
	last := int32(len(c.objs) - 1)
	if id != last {
		c.objs[id], c.entryNames[id], c.hashes[id] = c.objs[last], c.entryNames[last], c.hashes[last]
		c.ns.renumber(last, id)
		for _, li := range c.labelKeys {
			li.renumber(last, id)
		}
		for _, col := range c.funcs {
			col.renumber(last, id)
		}
		c.names.renumber(last, id, c.hashes[id])
	}
	var zero T
	c.objs[last], c.entryNames[last] = zero, ObjectName{}
	n := int(last)
	capacity := 0
	if shrank(n, cap(c.objs)) {
		capacity = 2 * n
	}
	c.objs, c.entryNames, c.hashes = c.objs[:n], c.entryNames[:n], c.hashes[:n]
	if capacity > 0 {
		c.objs = append(make([]T, 0, capacity), c.objs...)
		c.entryNames = append(make([]ObjectName, 0, capacity), c.entryNames...)
		c.hashes = append(make([]uint32, 0, capacity), c.hashes...)
	}
	c.ns.truncate(n, capacity)
	for _, li := range c.labelKeys {
		li.truncate(n, capacity)
	}
	for _, col := range c.funcs {
		col.truncate(n, capacity)
	}
	return obj
}

// diff reports what replacing c by fresh (built from items with the same
// name table seed) removes and replaces, as documented on replaceAll.
func (c *contents[T]) diff(fresh *contents[T], items []T) (removed, previous []T) {
	for id, obj := range c.objs {
		if findName(&fresh.names, fresh.entryNames, uint64(c.hashes[id]), NameOf(obj)) < 0 {
			removed = append(removed, obj)
		}
	}
	if len(removed) == len(c.objs) {
		return removed, nil // nothing listed was stored before
	}
	previous = make([]T, len(items))
	for i, obj := range items {
		if id := c.get(NameOf(obj)); id >= 0 {
			previous[i] = c.objs[id]
		}
	}
	return removed, previous
}

// appendObjects appends the objects of the entries ids to dst.
func (c *contents[T]) appendObjects(dst []T, ids []int32) []T {
	n := len(dst)
	dst = slices.Grow(dst, len(ids))[:n+len(ids)]
	out := dst[n:]
	for i, id := range ids {
		out[i] = c.objs[id]
	}
	return dst
}
