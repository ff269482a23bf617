package informer

import (
	"cmp"
	"context"
	"reflect"
	"slices"
	"strings"
	"unsafe"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubetyped/informer/internal/wire"
)

// CostReport is what an informer's cache keeps on the heap, by field: the
// answer to "what does my cache cost, and what should I drop?". See
// [Informer.Cost]. A report belongs to its caller: it holds no reference
// to the cache or its objects.
type CostReport struct {
	// Objects is the number of cached objects.
	Objects int
	// Bytes is the heap the cache keeps: the sum of the rows' Bytes.
	Bytes int64
	// SharedBytes is the part of Bytes reached from more than one place:
	// the sum of the rows' SharedBytes.
	SharedBytes int64
	// Rows are the parts of Bytes, the largest first.
	Rows []CostRow
	// Suggestions are the rows of fields that DropFields can drop (see
	// [RESTOptions].DropFields; the fields an informer cannot do without,
	// such as metadata.name, are left out) holding at least 1% of Bytes,
	// five at most: first the bookkeeping that only the API server and
	// kubectl read, metadata.managedFields (server-side apply's) and the
	// annotation kubectl.kubernetes.io/last-applied-configuration
	// (kubectl apply's), then the other fields, which a controller may
	// read, the largest first. Dropping one saves at most its Bytes: less
	// what its values share with fields that stay. metadata.managedFields
	// is dropped by the [StripManagedFields] transform too, an annotation
	// by [DropAnnotations].
	Suggestions []CostRow
}

// CostRow is one part of a [CostReport].
type CostRow struct {
	// Path names a field as DropFields does: JSON names separated by
	// dots, of a field of the object's metadata, spec or status
	// ("metadata.managedFields", "spec.containers",
	// "status.containerStatuses") or of a top-level field of another
	// shape ("data" of a ConfigMap); an annotation's entry, for the keys
	// holding at least 1% of the report's Bytes, by its key in brackets
	// ("metadata.annotations[kubectl.kubernetes.io/last-applied-configuration]",
	// the other entries being metadata.annotations'); for unstructured
	// objects, the keys of their content. A row that is not a field is in
	// parentheses: "(objects)", the objects' own structs (the fields they
	// hold inline, and for unstructured objects their content's map);
	// "(store) entries", "(store) name table" and "(store) postings", the
	// store's own structures per object: its entries, its table of names,
	// and the lists of its indexes (of every object, per namespace, per
	// label and per index value) with the maps that find them; "(intern
	// table)", the tables of the strings and sub-objects the objects share
	// (see [Informer.Cost]).
	Path string
	// Bytes is what the allocations reached from the field cost, as the
	// Go allocator charges them (size classes, malloc headers, slice
	// capacity, map groups), each counted once in the whole report, in the
	// row where it is first found.
	Bytes int64
	// SharedBytes is the part of Bytes in allocations reached from more
	// than one place: other objects (strings interned on decode,
	// sub-objects shared by Deduplicate) or other fields.
	SharedBytes int64
	// Objects is the number of cached objects with a value in the field.
	Objects int
}

// Cost walks the informer's cache and reports what it keeps on the heap,
// by field (see [CostReport]): every allocation reachable from the cached
// objects, each counted once, as the Go allocator charges it, and the
// store's own structures. On the production-like pods of the benchmarks
// the rows add up to the retained heap the informer's cache adds, measured
// by the runtime, to within a few percent (TestCostMatchesRetainedHeap).
//
// The tables of strings and sub-objects the ListerWatcher's decoder and
// Deduplicate share are a row of their own, "(intern table)". Not
// counted: records waiting in the queue or in handlers' buffers, and the
// items of a decoded list's array that are no longer cached beside some
// that are. A string in the program's own memory (a constant set by a
// transform) is counted as if allocated.
//
// The walk uses reflection, once per Go type, to learn where that type's
// values hold references (cost_plan.go), because T may be any Go type (a
// CRD's, *unstructured.Unstructured's content, a type chosen at run time
// behind an interface); it then reads memory at the offsets learned,
// without reflect.Value, and walks labels, annotations and unstructured
// content with Go's own map iteration. None of it is on the event path.
//
// It is meant to be run on demand in production: it is not on the event
// path, it takes the store's read lock only to copy the objects' pointers
// and measure the posting lists (cached objects are never modified, so
// they are walked without it); its CPU time and temporary memory per
// object are in docs/operations.md, "What the cache costs". It may be
// called at any time, concurrently, from any goroutine; it stops early
// with ctx's error if ctx is done.
func (i *Informer[T]) Cost(ctx context.Context) (CostReport, error) {
	store := i.indexer.costSnapshot()
	w := newCostWalker()
	if err := walkCost(ctx, w, store.objects, i.internTables()); err != nil {
		return CostReport{}, err
	}
	return w.report(len(store.objects), store.rows), nil
}

// internTables returns the tables of the strings and sub-objects the
// informer's objects share: its ListerWatcher's, and its queue's for
// Deduplicate.
func (i *Informer[T]) internTables() []*wire.InternTable {
	var tables []*wire.InternTable
	add := func(t *wire.InternTable) {
		if t != nil && !slices.Contains(tables, t) {
			tables = append(tables, t)
		}
	}
	if d, ok := describe(i.source.listerWatcher()); ok {
		add(d.interns)
	}
	add(i.queue.interns)
	return tables
}

// walkCost walks objects and then tables with w.
func walkCost[T any](ctx context.Context, w *costWalker, objects []T, tables []*wire.InternTable) error {
	tableType := costTypeOf(reflect.TypeFor[wire.InternTable]())
	for pass := range 2 {
		w.charging = pass == 1
		w.seen.reset()
		for i, obj := range objects {
			if i%1024 == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			w.obj = i
			w.walkObject(obj)
		}
		w.obj = len(objects)
		for _, t := range tables {
			t.WithLock(func() {
				w.row = w.rowFor(costInternRow)
				w.walkPointer(unsafe.Pointer(t), tableType)
			})
		}
	}
	return nil
}

// Thresholds of the report's rows, as shares of its Bytes.
const (
	costKeyShare        = 0.01 // an annotation key's own row
	costSuggestionShare = 0.01 // a suggestion
	costSuggestions     = 5
)

// report returns the report of what w walked, for objects objects and the
// store's rows.
func (w *costWalker) report(objects int, store []CostRow) CostReport {
	r := CostReport{Objects: objects}
	w.rows[w.rowOf[costObjectsRow]].bytes += w.objectStructBytes()
	w.rows[w.rowOf[costObjectsRow]].objects = objects
	for _, acc := range w.rows {
		r.Bytes += acc.bytes
	}
	for _, row := range store {
		r.Bytes += row.Bytes
	}
	// Annotation keys holding little go back into their map's row.
	for i := range w.rows {
		acc := &w.rows[i]
		if acc.annotationKeyOf >= 0 && float64(acc.bytes) < costKeyShare*float64(r.Bytes) {
			parent := &w.rows[acc.annotationKeyOf]
			parent.bytes += acc.bytes
			parent.shared += acc.shared
			acc.bytes, acc.shared, acc.objects = 0, 0, 0
		}
	}
	for _, acc := range w.rows {
		if acc.bytes > 0 || acc.objects > 0 {
			r.Rows = append(r.Rows, CostRow{Path: acc.path, Bytes: acc.bytes, SharedBytes: acc.shared, Objects: acc.objects})
			r.SharedBytes += acc.shared
		}
	}
	r.Rows = append(r.Rows, store...)
	slices.SortFunc(r.Rows, func(a, b CostRow) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), strings.Compare(a.Path, b.Path))
	})
	for _, row := range r.Rows {
		if float64(row.Bytes) >= costSuggestionShare*float64(r.Bytes) && droppable(row.Path) {
			r.Suggestions = append(r.Suggestions, row)
		}
	}
	slices.SortStableFunc(r.Suggestions, func(a, b CostRow) int {
		return cmpBool(bookkeeping(b.Path), bookkeeping(a.Path))
	})
	r.Suggestions = r.Suggestions[:min(len(r.Suggestions), costSuggestions)]
	return r
}

// cmpBool orders false before true.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// bookkeeping reports whether the field of path holds what only the API
// server and kubectl read.
func bookkeeping(path string) bool {
	return path == ManagedFields || path == "metadata.annotations["+corev1.LastAppliedConfigAnnotation+"]"
}

// droppable reports whether DropFields can drop the field of path.
func droppable(path string) bool {
	return !strings.HasPrefix(path, "(") && wire.ValidateDropFields([]string{path}) == nil
}
