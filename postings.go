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

// Owners of posting lists other than the user indexes, whose owner is the
// index's position (0, 1, …).
const (
	ownerAll       int32 = -1 // the list of every object
	ownerNamespace int32 = -2 // one list per namespace
	ownerLabel     int32 = -3 // one list per label key and value
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
// needs instead. 5 would save 48 B per entry (176 B instead of 224; W6's
// production-like pods, on 9 lists, keep about 13,200 B each), but
// selectors that read an entry's memberships then follow a second pointer:
// W3 (d) (app in (...),tier!=...) took 148–184 µs per List with 5 against
// 45–47 µs with 8 (interleaved, load 1.7–2).
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
	entries    nameTable[T]
	all        *posting[T]
	namespaces map[string]*posting[T]
	labels     map[string]*labelKey[T]
	buckets    []map[string]*posting[T] // per user index, by value
	// byNamespace marks the user indexes by namespace: their buckets map is
	// namespaces itself, and nothing is filed in them separately.
	byNamespace []bool
}

// newContents returns empty contents for indexes, sized for size objects.
func newContents[T Object](indexes []userIndex[T], size int, seed maphash.Seed) *contents[T] {
	c := &contents[T]{
		entries:    newNameTable[T](size, seed),
		all:        &posting[T]{owner: ownerAll, items: make([]postingItem[T], 0, size)},
		namespaces: map[string]*posting[T]{},
		labels:     map[string]*labelKey[T]{},
	}
	for i := range indexes {
		c.addIndex(indexes[i].byNamespace)
	}
	return c
}

// addIndex adds the (empty) buckets of one more user index.
func (c *contents[T]) addIndex(byNamespace bool) {
	buckets := c.namespaces
	if !byNamespace {
		buckets = map[string]*posting[T]{}
	}
	c.buckets = append(c.buckets, buckets)
	c.byNamespace = append(c.byNamespace, byNamespace)
}

// put stores obj under p.name with the given index values (one slice per
// user index) and returns the object it replaced and that object's resource
// version.
func (c *contents[T]) put(obj T, p *writePrep, values [][]string) (old T, oldRV string, existed bool) {
	e := c.entries.find(p.hash, p.name)
	if e == nil {
		e = &entry[T]{obj: obj, name: p.name, hash: p.hash, rv: p.rv, labels: p.labels}
		if n := c.memberCount(p, values); n > inlineMembers {
			e.members = make([]membership[T], 0, n)
		} else {
			e.members = e.inline[:0]
		}
		c.entries.insert(e)
		c.join(e, c.all)
		ns := c.namespaces[p.name.Namespace]
		if ns == nil {
			ns = &posting[T]{owner: ownerNamespace, value: p.name.Namespace}
			c.namespaces[p.name.Namespace] = ns
		}
		c.join(e, ns)
		for i, v := range values {
			if !c.byNamespace[i] {
				c.joinIndex(e, i, v)
			}
		}
		if p.pairs != nil {
			for _, lp := range p.pairs {
				c.joinLabel(e, lp.key, lp.value)
			}
		} else {
			for k, v := range p.labels {
				c.joinLabel(e, k, v)
			}
		}
		return old, "", false
	}
	old, oldRV = e.obj, e.rv
	for i, v := range values {
		if !c.byNamespace[i] {
			c.reindex(e, i, v)
		}
	}
	c.relabel(e, p)
	e.obj, e.rv = obj, p.rv
	for _, m := range e.members {
		m.p.items[m.pos].obj = obj
	}
	return old, oldRV, true
}

// memberCount is the number of lists an object with prepared write p and
// index values joins: all, its namespace, its labels and the values of the
// user indexes not by namespace (duplicate values counted, so it may
// overestimate).
func (c *contents[T]) memberCount(p *writePrep, values [][]string) int {
	n := 2 + p.labelCount()
	for i, v := range values {
		if !c.byNamespace[i] {
			n += len(v)
		}
	}
	return n
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

// drop removes an empty list from the index it belongs to, as client-go
// removes empty index buckets.
func (c *contents[T]) drop(p *posting[T]) {
	switch p.owner {
	case ownerAll:
	case ownerNamespace:
		delete(c.namespaces, p.value)
	case ownerLabel:
		delete(p.label.values, p.value)
		if len(p.label.values) == 0 {
			delete(c.labels, p.label.key)
		}
	default:
		delete(c.buckets[p.owner], p.value)
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

// joinIndex files e under each distinct value of user index i.
func (c *contents[T]) joinIndex(e *entry[T], i int, values []string) {
	for j, v := range values {
		if slices.Contains(values[:j], v) {
			continue
		}
		p := c.buckets[i][v]
		if p == nil {
			p = &posting[T]{owner: int32(i), value: v}
			c.buckets[i][v] = p
		}
		c.join(e, p)
	}
}

// reindex moves e to the new values of user index i, touching only the
// values that changed.
func (c *contents[T]) reindex(e *entry[T], i int, values []string) {
	owner := int32(i)
	kept := 0
	for slot := 0; slot < len(e.members); {
		m := e.members[slot]
		if m.owner == owner {
			if slices.Contains(values, m.p.value) {
				kept++
			} else {
				c.leave(e, slot)
				continue // slot now holds another membership
			}
		}
		slot++
	}
	if kept == len(values) {
		return // the common case: the values did not change
	}
	for j, v := range values {
		if slices.Contains(values[:j], v) {
			continue
		}
		p := c.buckets[i][v]
		if p != nil && e.slotOf(p) >= 0 {
			continue
		}
		if p == nil {
			p = &posting[T]{owner: owner, value: v}
			c.buckets[i][v] = p
		}
		c.join(e, p)
	}
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
