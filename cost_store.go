package informer

import (
	"reflect"
	"unsafe"
)

// The store's own structures in the cost report: the one place the report
// reads the Indexer's internals (contents.go, nametable.go), so that a
// change of their layout changes this file only.

// The rows of the store's structures.
const (
	costEntriesRow   = "(store) entries"
	costNameTableRow = "(store) name table"
	costPostingsRow  = "(store) postings"
)

// storeCost is what the store's structures cost, and the objects it
// holds.
type storeCost[T Object] struct {
	objects []T
	// rows are the store's rows, each charged its bytes; Objects is the
	// number of objects.
	rows []CostRow
}

// costSnapshot returns the cached objects and the cost of the store's own
// structures: its entries (the slab of objects, their names and name
// hashes, and each index's columns of where every entry is filed), its name table,
// and its posting lists (per namespace, per indexed label key and value,
// per index value) with the maps that find them. The read lock is held
// while the objects' pointers are copied and the structures measured:
// both walk one slice or map per index, not per object (BenchmarkCost/lock).
func (s *Indexer[T]) costSnapshot() storeCost[T] {
	l := s.costLocked()
	n := len(l.objects)
	return storeCost[T]{objects: l.objects, rows: []CostRow{
		{Path: costEntriesRow, Bytes: l.entries, Objects: n},
		{Path: costNameTableRow, Bytes: l.nameTable, Objects: n},
		{Path: costPostingsRow, Bytes: l.postings, Objects: n},
	}}
}

// lockedCost is what costLocked reads under the store's read lock.
type lockedCost[T Object] struct {
	objects                      []T
	entries, nameTable, postings int64
}

// The layouts of the store's maps, for their bytes.
var (
	listNumberMapLayout = newMapLayout(reflect.TypeFor[map[string]int32]())
	extraMapLayout      = newMapLayout(reflect.TypeFor[map[int32][]membership]())
	labelIndexMapLayout = newMapLayout(reflect.TypeFor[map[string]*labelIndex]())
)

// costLocked copies the objects' pointers and measures the store's
// structures, under the store's read lock (BenchmarkCost/lock). Each slice
// is its own allocation and is measured alone: the allocator rounds each
// one up to a size class, so the bytes of a sum of lengths are not the
// sum of the slices' bytes.
func (s *Indexer[T]) costLocked() lockedCost[T] {
	var l lockedCost[T]
	s.mu.RLock()
	defer s.mu.RUnlock()
	c := s.c
	l.objects = append(make([]T, 0, len(c.objs)), c.objs...)
	l.entries = allocBytes(uintptr(cap(c.objs))*unsafe.Sizeof(*new(T)), true) +
		allocBytes(uintptr(cap(c.entryNames))*unsafe.Sizeof(ObjectName{}), true) +
		allocBytes(uintptr(cap(c.hashes))*unsafe.Sizeof(uint32(0)), false)
	l.nameTable = allocBytes(uintptr(len(c.names.slots))*unsafe.Sizeof(nameSlot{}), false)
	l.postings = allocBytes(unsafe.Sizeof(*c), true) +
		labelIndexMapLayout.bytes(len(c.labels)) +
		allocBytes(uintptr(cap(c.labelKeys))*unsafe.Sizeof((*labelIndex)(nil)), true) +
		allocBytes(uintptr(cap(c.funcs))*unsafe.Sizeof((*listColumn)(nil)), true) +
		allocBytes(uintptr(cap(c.buckets))*unsafe.Sizeof((*listColumn)(nil)), true)
	column := func(col *listColumn) {
		l.entries += allocBytes(uintptr(cap(col.list))*unsafe.Sizeof(int32(0)), false) +
			allocBytes(uintptr(cap(col.pos))*unsafe.Sizeof(int32(0)), false)
		if col.extra != nil {
			l.entries += extraMapLayout.bytes(len(col.extra))
			for _, ms := range col.extra {
				l.entries += allocBytes(uintptr(cap(ms))*unsafe.Sizeof(membership{}), false)
			}
		}
		l.postings += allocBytes(uintptr(cap(col.lists))*unsafe.Sizeof(posting{}), true) +
			listNumberMapLayout.bytes(len(col.byValue)) +
			allocBytes(uintptr(cap(col.free))*unsafe.Sizeof(int32(0)), false)
		for i := range col.lists {
			l.postings += allocBytes(uintptr(cap(col.lists[i].ids))*unsafe.Sizeof(int32(0)), false)
		}
	}
	column(&c.ns)
	for _, lk := range c.labelKeys {
		l.postings += allocBytes(unsafe.Sizeof(*lk), true)
		column(&lk.listColumn)
	}
	for _, col := range c.funcs {
		l.postings += allocBytes(unsafe.Sizeof(*col), true)
		column(col)
	}
	return l
}
