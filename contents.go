package informer

import (
	"hash/maphash"
	"slices"
)

// The Indexer keeps every index as posting lists: a dense slice of the
// objects filed under one value, so that answering a query is a copy of
// contiguous memory. Each stored object (an entry) remembers, for every list
// it is on, its position there, and the list remembers which of the entry's
// memberships each item is, so that removing an object from a list is an
// O(1) swap with the list's last item.

// A posting list's owner is the position of its index kind in the
// Indexer's indexPlan (see pipeline.go), or ownerAll for the list of every
// object.
const (
	ownerAll       int32 = -1 // the list of every object
	ownerNamespace int32 = 0  // one list per namespace (index_namespace.go)
	ownerLabel     int32 = 1  // one list per label key and value (index_label.go)
	firstFuncOwner int32 = 2  // the first user index's function kind (index_func.go)
)

// posting is the list of objects filed under one value of one index.
type posting[T Object] struct {
	items []postingItem[T]
	owner int32
	value string       // the index value, namespace or label value
	label *labelKey[T] // the label key's lists, for ownerLabel
}

// postingItem is one object on a posting list. obj duplicates entry.obj so
// that copying a list out never dereferences the entries.
type postingItem[T Object] struct {
	obj  T
	e    *entry[T]
	slot int32 // index of this membership in e.members
}

// membership is one posting list an entry is on.
type membership[T Object] struct {
	p     *posting[T]
	pos   int32 // index of the entry's item in p.items
	owner int32 // p.owner, kept here to scan memberships without dereferencing p
}

// inlineMembers is how many memberships an entry holds without a second
// allocation: enough for the lists of an object with a few labels and
// indexes (all, namespace, labels, index values), such as W1–W5's pods. An
// object on more lists gets a memberships slice of exactly the size it
// needs instead. 5 would save 48 B per entry, but selectors that read an
// entry's memberships then follow a second pointer, and W3 (d) lists about
// three times slower (docs/benchmarks.md, "Figures behind design choices").
const inlineMembers = 8

// entry is one stored object with its memberships.
type entry[T Object] struct {
	obj  T
	name ObjectName
	hash uint64 // the name's hash in the name table
	// rv is obj's resource version, kept so that comparing versions on an
	// update does not read the old object, which is rarely still in the CPU
	// caches.
	rv      string
	labels  map[string]string // obj's labels, as indexed
	members []membership[T]
	inline  [inlineMembers]membership[T]
}

// contents is everything an Indexer stores. Replace builds a new one and
// swaps it in, so that a failure leaves the old one untouched.
type contents[T Object] struct {
	entries nameTable[T]
	all     *posting[T]
	// kinds are the index kinds filing every entry, kinds[owner] owning the
	// lists of that owner (the plan's kinds).
	kinds      []indexKind[T]
	namespaces map[string]*posting[T]
	labels     map[string]*labelKey[T]
	// buckets holds the lists of each user index, by value; the map of an
	// index by namespace is namespaces itself.
	buckets []map[string]*posting[T]
}

// newContents returns empty contents for the indexes of plan, sized for
// size objects.
func newContents[T Object](plan *indexPlan[T], size int, seed maphash.Seed) *contents[T] {
	c := &contents[T]{
		entries:    newNameTable[T](size, seed),
		all:        &posting[T]{owner: ownerAll, items: make([]postingItem[T], 0, size)},
		namespaces: map[string]*posting[T]{},
		labels:     map[string]*labelKey[T]{},
	}
	for _, ix := range plan.indexes {
		c.addIndex(plan, ix)
	}
	c.kinds = plan.kinds
	return c
}

// addIndex adds the (empty) buckets of one more user index, and takes the
// kinds of plan, which serves it.
func (c *contents[T]) addIndex(plan *indexPlan[T], ix userIndex[T]) {
	buckets := c.namespaces
	if !ix.byNamespace {
		buckets = map[string]*posting[T]{}
	}
	c.buckets = append(c.buckets, buckets)
	c.kinds = plan.kinds
}

// put stores obj under p.name, filed by every index kind as p and values
// (the function kinds' values) prepared it, and returns the object it
// replaced and that object's resource version.
func (c *contents[T]) put(obj T, p *writePrep, values [][]string) (old T, oldRV string, existed bool) {
	e := c.entries.find(p.hash, p.name)
	if e == nil {
		e = &entry[T]{obj: obj, name: p.name, hash: p.hash, rv: p.rv, labels: p.labels}
		if n := c.lists(p, values); n > inlineMembers {
			e.members = make([]membership[T], 0, n)
		} else {
			e.members = e.inline[:0]
		}
		c.entries.insert(e)
		c.join(e, c.all)
		c.file(e, p, values, false)
		return old, "", false
	}
	old, oldRV = e.obj, e.rv
	c.file(e, p, values, true)
	e.obj, e.rv = obj, p.rv
	for _, m := range e.members {
		m.p.items[m.pos].obj = obj
	}
	return old, oldRV, true
}

// removeEntry takes e off every list and out of the store.
func (c *contents[T]) removeEntry(e *entry[T]) {
	for len(e.members) > 0 {
		c.leave(e, len(e.members)-1)
	}
	c.entries.delete(e)
}

// diff reports what replacing c by fresh (built from items with the same
// name table seed) removes and replaces, as documented on replaceAll.
func (c *contents[T]) diff(fresh *contents[T], items []T) (removed, previous []T) {
	for _, it := range c.all.items {
		if fresh.entries.find(it.e.hash, it.e.name) == nil {
			removed = append(removed, it.obj)
		}
	}
	if len(removed) == len(c.all.items) {
		return removed, nil // nothing listed was stored before
	}
	previous = make([]T, len(items))
	for i, obj := range items {
		if e := c.entries.get(NameOf(obj)); e != nil {
			previous[i] = e.obj
		}
	}
	return removed, previous
}

// join appends e to p.
func (c *contents[T]) join(e *entry[T], p *posting[T]) {
	e.members = append(e.members, membership[T]{p: p, pos: int32(len(p.items)), owner: p.owner})
	p.items = append(p.items, postingItem[T]{obj: e.obj, e: e, slot: int32(len(e.members) - 1)})
	if p.label != nil {
		p.label.count++
	}
}

// leave takes e off the list of its membership at slot, moving the list's
// last item into the hole and e's last membership into slot. A list left
// empty is dropped from its index.
func (c *contents[T]) leave(e *entry[T], slot int) {
	m := e.members[slot]
	p := m.p
	last := len(p.items) - 1
	if int(m.pos) != last {
		moved := p.items[last]
		p.items[m.pos] = moved
		moved.e.members[moved.slot].pos = m.pos
	}
	p.items[last] = postingItem[T]{}
	p.items = p.items[:last]
	lastSlot := len(e.members) - 1
	if slot != lastSlot {
		mm := e.members[lastSlot]
		e.members[slot] = mm
		mm.p.items[mm.pos].slot = int32(slot)
	}
	e.members[lastSlot] = membership[T]{}
	e.members = e.members[:lastSlot]
	if p.label != nil {
		p.label.count--
	}
	switch {
	case last == 0:
		c.drop(p)
	case cap(p.items) >= 64 && last*4 <= cap(p.items):
		// Give back the memory of a list that shrank a lot.
		p.items = append(make([]postingItem[T], 0, 2*last), p.items...)
	}
}

// drop removes an empty list from the index kind it belongs to.
func (c *contents[T]) drop(p *posting[T]) {
	if p.owner != ownerAll {
		c.kinds[p.owner].forget(c, p)
	}
}

// slotOf returns the slot of e's membership in p, or -1.
func (e *entry[T]) slotOf(p *posting[T]) int {
	for i := range e.members {
		if e.members[i].p == p {
			return i
		}
	}
	return -1
}

// appendObjects appends the objects of p to dst.
func (p *posting[T]) appendObjects(dst []T) []T {
	n := len(dst)
	dst = slices.Grow(dst, len(p.items))[:n+len(p.items)]
	out := dst[n:]
	for i := range p.items {
		out[i] = p.items[i].obj
	}
	return dst
}
