package informer

import (
	"reflect"
	"unsafe"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The store's own structures in the cost report: the one place the report
// reads the Indexer's internals (indexer.go, nametable.go, postings.go,
// index_label.go), so that a change of their layout changes this file
// only.

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
// structures: its entries, its name table and its posting lists (of every
// object, per namespace, per label and per index value) with the maps that
// find them. The read lock is held while the objects' pointers are copied
// and the posting lists (one per namespace, label value and index value,
// not per object) are measured (costLocked); the entries' memberships
// beyond those held inline are then counted from the objects' labels,
// which the store files them by, without the lock.
func (s *Indexer[T]) costSnapshot() storeCost[T] {
	l := s.costLocked()
	n := len(l.objects)
	entries := int64(n) * allocBytes(unsafe.Sizeof(entry[T]{}), true)
	memberSize := unsafe.Sizeof(membership[T]{})
	// The lists an entry is on: every object's, its namespace's, one per
	// label, and the index values (spread evenly: the entries are not read).
	funcPer := 0
	if n > 0 {
		funcPer = (l.funcItems + n - 1) / n
	}
	for _, obj := range l.objects {
		labels, copied := storedLabels(obj)
		if lists := 2 + labels + funcPer; lists > inlineMembers {
			entries += allocBytes(uintptr(lists)*memberSize, true)
		}
		if copied {
			// The entry holds the copy of the labels the store filed.
			entries += stringMapLayout.bytes(labels)
		}
	}
	return storeCost[T]{objects: l.objects, rows: []CostRow{
		{Path: costEntriesRow, Bytes: entries, Objects: n},
		{Path: costNameTableRow, Bytes: l.nameTable, Objects: n},
		{Path: costPostingsRow, Bytes: l.postings, Objects: n},
	}}
}

// lockedCost is what costLocked reads under the store's read lock.
type lockedCost[T Object] struct {
	objects             []T
	nameTable, postings int64
	// funcItems is the number of items on the lists of the user indexes.
	funcItems int
}

// costLocked copies the objects' pointers and measures the name table and
// the posting lists, under the store's read lock (BenchmarkCost/lock).
func (s *Indexer[T]) costLocked() lockedCost[T] {
	var (
		itemSize   = unsafe.Sizeof(postingItem[T]{})
		postingMap = newMapLayout(reflect.TypeFor[map[string]*posting[T]]())
		labelMap   = newMapLayout(reflect.TypeFor[map[string]*labelKey[T]]())
	)
	postingBytes := func(p *posting[T]) int64 {
		return allocBytes(unsafe.Sizeof(*p), true) + allocBytes(uintptr(cap(p.items))*itemSize, true)
	}
	var l lockedCost[T]
	s.mu.RLock()
	defer s.mu.RUnlock()
	c := s.c
	l.objects = c.all.appendObjects(make([]T, 0, len(c.all.items)))
	l.nameTable = allocBytes(uintptr(len(c.entries.slots))*unsafe.Sizeof(nameSlot[T]{}), true)
	l.postings = allocBytes(unsafe.Sizeof(*c), true) + postingBytes(c.all) +
		postingMap.bytes(len(c.namespaces)) + labelMap.bytes(len(c.labels))
	for _, p := range c.namespaces {
		l.postings += postingBytes(p)
	}
	for _, lk := range c.labels {
		l.postings += allocBytes(unsafe.Sizeof(*lk), true) + postingMap.bytes(len(lk.values))
		for _, p := range lk.values {
			l.postings += postingBytes(p)
		}
	}
	for i, buckets := range c.buckets {
		if s.plan.indexes[i].byNamespace {
			continue // the namespace lists, counted above
		}
		l.postings += postingMap.bytes(len(buckets))
		for _, p := range buckets {
			l.postings += postingBytes(p)
			l.funcItems += len(p.items)
		}
	}
	return l
}

// storedLabels returns the number of obj's labels, and whether the label
// map the store keeps is a copy of its own (obj.GetLabels builds one for
// an unstructured object) rather than obj's.
func storedLabels[T Object](obj T) (n int, copied bool) {
	if u, ok := any(obj).(*unstructured.Unstructured); ok {
		labels, _, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "labels")
		m, _ := labels.(map[string]any)
		return len(m), len(m) > 0
	}
	return len(obj.GetLabels()), false
}
