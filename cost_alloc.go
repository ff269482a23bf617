package informer

import (
	"math/bits"
	"reflect"
)

// What the Go allocator charges for the allocations of cached objects
// (Go 1.26; cost_alloc_test.go checks every figure below against the
// runtime's own counters, so a runtime that allocates differently fails
// the tests rather than skewing reports):
//   - a small allocation (at most 32 KiB) is rounded up to its size class,
//     after an 8-byte malloc header is added to one holding pointers that
//     is larger than 512 bytes;
//   - a larger one is rounded up to whole 8 KiB pages;
//   - one without pointers smaller than 16 bytes (a short string, a *bool,
//     an *int32) is packed with others into a 16-byte block: it is charged
//     its size;
//   - a map is its header and, beyond 8 entries, a directory, tables and
//     their arrays of groups of 8 slots (Swiss tables).

// sizeClasses are the Go allocator's size classes (runtime's
// internal/runtime/gc/sizeclasses.go, class_to_size).
var sizeClasses = [...]uint16{8, 16, 24, 32, 48, 64, 80, 96, 112, 128, 144, 160, 176, 192, 208, 224, 240, 256,
	288, 320, 352, 384, 416, 448, 480, 512, 576, 640, 704, 768, 896, 1024, 1152, 1280, 1408, 1536, 1792,
	2048, 2304, 2688, 3072, 3200, 3456, 4096, 4864, 5376, 6144, 6528, 6784, 6912, 8192, 9472, 9728,
	10240, 10880, 12288, 13568, 14336, 16384, 18432, 19072, 20480, 21760, 24576, 27264, 28672, 32768}

const (
	maxSmallAlloc   = 32768 // the largest size class
	mallocHeader    = 8     // added to small allocations with pointers above noHeaderMax
	noHeaderMax     = 512   // the largest allocation with pointers and no header
	pageSize        = 8192  // large allocations are whole pages
	tinyAllocMax    = 16    // pointer-free allocations below this share 16-byte blocks
	mapHeaderBytes  = 48    // a map's header (internal/runtime/maps.Map)
	mapGroupSlots   = 8     // slots of a map group
	mapTableMax     = 1024  // the most slots of one map table; larger maps have several
	mapTableBytes   = 32    // a map table's header (internal/runtime/maps.table)
	mapIndirectSize = 128   // keys and elements larger than this are stored behind a pointer
)

// sizeClassIndex maps (size+7)/8 to the index in sizeClasses of the class
// of size, for sizes up to 1024; larger sizes are searched.
var sizeClassIndex = func() (index [1024/8 + 1]uint8) {
	c := 0
	for i := range index {
		for int(sizeClasses[c]) < i*8 {
			c++
		}
		index[i] = uint8(c)
	}
	return index
}()

// allocBytes returns what the allocator charges for one allocation of size
// bytes; scan says whether it holds pointers.
func allocBytes(size uintptr, scan bool) int64 {
	switch {
	case size == 0:
		return 0
	case size > maxSmallAlloc-mallocHeader:
		return int64((size + pageSize - 1) / pageSize * pageSize)
	case !scan && size < tinyAllocMax:
		return int64(size)
	case scan && size > noHeaderMax:
		size += mallocHeader
	}
	if size <= 1024 {
		return int64(sizeClasses[sizeClassIndex[(size+7)/8]])
	}
	lo, hi := int(sizeClassIndex[1024/8]), len(sizeClasses)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if uintptr(sizeClasses[mid]) < size {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return int64(sizeClasses[lo])
}

// mapLayout is what the allocator holds for maps of one type, apart from
// what the keys and elements point to.
type mapLayout struct {
	slot     uintptr // bytes of one slot: the key and the element (or pointers to them)
	scan     bool    // whether slots hold pointers
	indirect [2]uintptr
	// indirect[0] and [1] are the sizes of the key and of the element when
	// stored behind a pointer (larger than mapIndirectSize), else 0.
	indirectScan [2]bool
}

// newMapLayout returns the layout of maps of type t.
func newMapLayout(t reflect.Type) mapLayout {
	var l mapLayout
	var fields []reflect.StructField
	for i, side := range []reflect.Type{t.Key(), t.Elem()} {
		if side.Size() > mapIndirectSize {
			l.indirect[i], l.indirectScan[i] = side.Size(), typeHasPointers(side)
			side = reflect.PointerTo(side)
		}
		fields = append(fields, reflect.StructField{Name: []string{"K", "E"}[i], Type: side})
	}
	slot := reflect.StructOf(fields)
	l.slot, l.scan = slot.Size(), typeHasPointers(slot)
	return l
}

// bytes returns what a map of n entries of this layout costs: its header
// and its groups, as a map built by n insertions (or made with a hint of n)
// holds them, and the keys and elements stored behind pointers.
func (l *mapLayout) bytes(n int) int64 {
	total := allocBytes(mapHeaderBytes, true)
	if n == 0 {
		return total
	}
	group := 8 + mapGroupSlots*l.slot
	if n <= mapGroupSlots {
		total += allocBytes(group, l.scan)
	} else {
		// Tables are at most 7/8 full, their capacity a power of two.
		capacity := max(2*mapGroupSlots, 1<<bits.Len(uint((n*8+6)/7-1)))
		tables := max(1, capacity/mapTableMax)
		perTable := capacity / tables
		total += allocBytes(uintptr(tables)*8, true) // the directory
		total += int64(tables) * (allocBytes(mapTableBytes, true) + allocBytes(uintptr(perTable/mapGroupSlots)*group, l.scan))
	}
	for i, size := range l.indirect {
		if size > 0 {
			total += int64(n) * allocBytes(size, l.indirectScan[i])
		}
	}
	return total
}

// typeHasPointers reports whether values of t hold pointers, so that the
// allocator scans them.
func typeHasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return false
	case reflect.Array:
		return t.Len() > 0 && typeHasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if typeHasPointers(t.Field(i).Type) {
				return true
			}
		}
		return false
	}
	return true
}
