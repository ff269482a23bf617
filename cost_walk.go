package informer

import (
	"reflect"
	"slices"
	"unsafe"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// costWalker walks cached objects by their plans (cost_plan.go) and
// charges every allocation they reach, once, to the field path where it is
// first found. It walks twice: the first pass only finds which allocations
// are reached more than once (shared), the second charges them, so that a
// row can say how much of what it is charged is shared.
type costWalker struct {
	// seen holds the allocations reached in this pass; repeated those
	// reached more than once in the first; blocks the 16-byte blocks of
	// small allocations charged in the second (see visitAlloc).
	seen, repeated allocSet
	blocks         addressSet // by 16-byte block
	charging       bool       // the second pass
	shared         bool       // in the second pass, walking the contents of a shared allocation
	obj            int        // the index of the object being walked, in the pass
	row            int32
	rows           []costAcc
	// rowOf finds rows by path; objectRows maps an object plan's paths to
	// rows; keyRows the rows of annotation keys and of the keys of
	// unstructured content.
	rowOf      map[string]int32
	objectRows map[*costObjectType][]int32
	keyRows    map[[2]string]int32
	// types caches the plans of the types found in interfaces, objects
	// the plans of the types of cached objects.
	types   map[reflect.Type]*costType
	objects map[reflect.Type]*costObjectType
	iters   map[reflect.Type][]*costMapIter
	// structs holds the address of each cached object's struct, by type.
	structs map[reflect.Type][]uintptr
}

// costAcc accumulates one row.
type costAcc struct {
	path            string
	bytes, shared   int64
	objects         int
	lastObj         int   // 1 + the last object counted in objects
	annotationKeyOf int32 // for an annotation key's row, the row of the annotations; else -1
}

// The rows that are not fields, beside the store's (cost_store.go): the
// objects' own structs, and the tables of shared values.
const (
	costObjectsRow = "(objects)"
	costInternRow  = "(intern table)"
)

func newCostWalker() *costWalker {
	w := &costWalker{
		seen:       newAllocSet(),
		repeated:   newAllocSet(),
		blocks:     addressSet{shift: 4},
		rowOf:      map[string]int32{},
		objectRows: map[*costObjectType][]int32{},
		keyRows:    map[[2]string]int32{},
		types:      map[reflect.Type]*costType{},
		objects:    map[reflect.Type]*costObjectType{},
		iters:      map[reflect.Type][]*costMapIter{},
		structs:    map[reflect.Type][]uintptr{},
	}
	w.rowFor(costObjectsRow)
	return w
}

// rowFor returns the row of path, added if new.
func (w *costWalker) rowFor(path string) int32 {
	if r, ok := w.rowOf[path]; ok {
		return r
	}
	r := int32(len(w.rows))
	w.rows = append(w.rows, costAcc{path: path, annotationKeyOf: -1})
	w.rowOf[path] = r
	return r
}

// keyRow returns the row of key under parent (an annotation's key under
// metadata.annotations, a key of unstructured content under its parent
// key), whose path is path(parent, key).
func (w *costWalker) keyRow(parent, key string, path func(parent, key string) string) int32 {
	k := [2]string{parent, key}
	if r, ok := w.keyRows[k]; ok {
		return r
	}
	r := w.rowFor(path(parent, key))
	w.keyRows[k] = r
	return r
}

func annotationPath(parent, key string) string { return parent + "[" + key + "]" }

func fieldPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// touch counts the object being walked in row r's objects.
func (w *costWalker) touch(r int32) {
	if acc := &w.rows[r]; w.charging && acc.lastObj != w.obj+1 {
		acc.lastObj = w.obj + 1
		acc.objects++
	}
}

// visit records that the allocation at p, which costs bytes, is reached,
// charging it to the current row in the second pass, and reports whether
// it is reached for the first time in this pass: only then are its
// contents walked. In the second pass, an allocation reached more than
// once (in the first) is shared, and so is everything under it: visit
// sets w.shared for its contents, and the caller restores was when done
// with them.
func (w *costWalker) visit(p unsafe.Pointer, bytes int64) (first, was bool) {
	was = w.shared
	a := uintptr(p)
	if !w.seen.add(a, false) {
		if !w.charging {
			w.repeated.add(a, false)
		}
		return false, was
	}
	if w.charging {
		shared := was || w.repeated.has(a, false)
		acc := &w.rows[w.row]
		acc.bytes += bytes
		if shared {
			acc.shared += bytes
		}
		w.shared = shared
	}
	return true, was
}

// visitAlloc is visit for an allocation of size bytes, holding pointers if
// scan is set. One without pointers smaller than 16 bytes is in a block of
// 16 with others the allocator packs there, which lives as long as any of
// them: the block is charged, once, where the first of them is found (as
// shared if that one is).
func (w *costWalker) visitAlloc(p unsafe.Pointer, size uintptr, scan bool) (first, was bool) {
	if scan || size >= tinyAllocMax {
		return w.visit(p, allocBytes(size, scan))
	}
	// Without pointers, it has no contents to walk: w.shared stays.
	was = w.shared
	a, small := uintptr(p), size < 8
	if !w.seen.add(a, small) {
		if !w.charging {
			w.repeated.add(a, small)
		}
		return false, was
	}
	if w.charging && w.blocks.add(a&^(tinyAllocMax-1)) {
		acc := &w.rows[w.row]
		acc.bytes += tinyAllocMax
		if was || w.repeated.has(a, small) {
			acc.shared += tinyAllocMax
		}
	}
	return true, was
}

// walkObject walks one cached object, a pointer to a struct.
func (w *costWalker) walkObject(obj any) {
	t := reflect.TypeOf(obj)
	if t == nil || t.Kind() != reflect.Pointer {
		return
	}
	p := dataWord(obj)
	if p == nil {
		return
	}
	o := w.objects[t]
	if o == nil {
		o = costObjectTypeOf(t.Elem())
		w.objects[t] = o
		rows := make([]int32, len(o.paths))
		for i, path := range o.paths {
			rows[i] = w.rowFor(path)
		}
		w.objectRows[o] = rows
	}
	if w.charging {
		w.structs[t] = append(w.structs[t], uintptr(p))
	}
	if o.unstructured {
		w.walkUnstructured((*unstructured.Unstructured)(p))
		return
	}
	rows := w.objectRows[o]
	for i := range o.refs {
		r := &o.refs[i]
		w.row = rows[r.path]
		if r.path == o.annotations {
			w.walkAnnotations(*(*map[string]string)(unsafe.Add(p, r.off)), w.row)
			continue
		}
		if refHolds(p, r) {
			w.touch(w.row)
		}
		w.walkRef(p, r)
	}
}

// refHolds reports whether the reference r of the value at base holds
// something.
func refHolds(base unsafe.Pointer, r *costRef) bool {
	p := unsafe.Add(base, r.off)
	switch r.kind {
	case costString:
		return len(*(*string)(p)) > 0
	case costSlice, costPointer, costMap, costWeak:
		return *(*unsafe.Pointer)(p) != nil
	case costInterface:
		return *(*[2]unsafe.Pointer)(p) != [2]unsafe.Pointer{}
	}
	return true // an array held inline
}

// walkAnnotations walks an annotations map, charged to row, each entry to
// the row of its key.
func (w *costWalker) walkAnnotations(m map[string]string, row int32) {
	if m == nil {
		return
	}
	w.row = row
	w.touch(row)
	first, was := w.visit(mapPointer(m), stringMapLayout.bytes(len(m)))
	if first {
		parent := w.rows[row].path
		for k, v := range m {
			r := w.keyRow(parent, k, annotationPath)
			w.rows[r].annotationKeyOf = row
			w.row = r
			w.touch(r)
			w.walkString(k)
			w.walkString(v)
		}
	}
	w.shared, w.row = was, row
}

var stringMapLayout, anyMapLayout = newMapLayout(stringMapType), newMapLayout(anyMapType)

// walkUnstructured walks an unstructured object: its content's keys are
// the first part of its paths and, under a key holding an object
// (metadata, spec, status), that object's keys the second;
// metadata.annotations is split by key as for typed objects. The maps of
// the content and of those objects are charged to the objects' row, as
// a typed object's inline structs are.
func (w *costWalker) walkUnstructured(u *unstructured.Unstructured) {
	objects := w.rowOf[costObjectsRow]
	w.row = objects
	if u.Object == nil {
		return
	}
	first, was := w.visit(mapPointer(u.Object), anyMapLayout.bytes(len(u.Object)))
	defer func() { w.shared = was }()
	if !first {
		return
	}
	for k, v := range u.Object {
		sub, ok := v.(map[string]any)
		if !ok {
			row := w.keyRow("", k, fieldPath)
			w.row = row
			w.touch(row)
			w.walkString(k)
			w.walkAny(v)
			continue
		}
		w.row = objects
		w.walkString(k)
		if sub == nil {
			continue
		}
		first, was := w.visit(mapPointer(sub), anyMapLayout.bytes(len(sub)))
		if first {
			for k2, v2 := range sub {
				r := w.keyRow(k, k2, fieldPath)
				w.row = r
				w.touch(r)
				w.walkString(k2)
				if annotations, ok := v2.(map[string]any); ok && k == "metadata" && k2 == "annotations" {
					w.walkUnstructuredAnnotations(annotations, r)
					continue
				}
				w.walkAny(v2)
			}
		}
		w.shared = was
	}
}

// walkUnstructuredAnnotations is walkAnnotations for unstructured content.
func (w *costWalker) walkUnstructuredAnnotations(m map[string]any, row int32) {
	if m == nil {
		return
	}
	first, was := w.visit(mapPointer(m), anyMapLayout.bytes(len(m)))
	if first {
		parent := w.rows[row].path
		for k, v := range m {
			r := w.keyRow(parent, k, annotationPath)
			w.rows[r].annotationKeyOf = row
			w.row = r
			w.touch(r)
			w.walkString(k)
			w.walkAny(v)
		}
	}
	w.shared, w.row = was, row
}

// walkRefs walks the references refs of the value at base.
func (w *costWalker) walkRefs(base unsafe.Pointer, refs []costRef) {
	for i := range refs {
		w.walkRef(base, &refs[i])
	}
}

// walkRef walks the reference r of the value at base.
func (w *costWalker) walkRef(base unsafe.Pointer, r *costRef) {
	p := unsafe.Add(base, r.off)
	switch r.kind {
	case costString:
		w.walkString(*(*string)(p))
	case costSlice:
		s := (*sliceHeader)(p)
		if s.data == nil || s.cap == 0 || r.elem.size == 0 {
			return
		}
		first, was := w.visitAlloc(s.data, uintptr(s.cap)*r.elem.size, r.elem.scan)
		if first && len(r.elem.refs) > 0 {
			for i := range s.len {
				w.walkRefs(unsafe.Add(s.data, uintptr(i)*r.elem.size), r.elem.refs)
			}
		}
		w.shared = was
	case costPointer:
		w.walkPointer(*(*unsafe.Pointer)(p), r.elem)
	case costMap:
		var v reflect.Value
		if r.m.native == costReflectMap {
			v = reflect.NewAt(r.m.typ, p).Elem()
		}
		w.walkMap(*(*unsafe.Pointer)(p), r.m, v)
	case costInterface:
		if r.iface.NumMethod() == 0 {
			w.walkAny(*(*any)(p))
		} else {
			w.walkAny(reflect.NewAt(r.iface, p).Elem().Interface())
		}
	case costArray:
		for i := range r.n {
			w.walkRefs(unsafe.Add(p, uintptr(i)*r.elem.size), r.elem.refs)
		}
	case costWeak:
		if h := *(*unsafe.Pointer)(p); h != nil {
			_, was := w.visitAlloc(h, weakHandleSize, false)
			w.shared = was
		}
	}
}

// weakHandleSize is the size of a weak pointer's handle: an atomic.Uintptr
// the runtime pads to 16 bytes so that it shares no tiny block (Go 1.26,
// runtime.getOrAddWeakHandle).
const weakHandleSize = 16

// sliceHeader is the memory of a slice.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// walkString charges the bytes of s.
func (w *costWalker) walkString(s string) {
	if len(s) > 0 {
		_, was := w.visitAlloc(unsafe.Pointer(unsafe.StringData(s)), uintptr(len(s)), false)
		w.shared = was
	}
}

// walkPointer walks a pointer to a value of plan t.
func (w *costWalker) walkPointer(p unsafe.Pointer, t *costType) {
	if p == nil || t.size == 0 {
		return
	}
	first, was := w.visitAlloc(p, t.size, t.scan)
	if first {
		w.walkRefs(p, t.refs)
	}
	w.shared = was
}

// walkMap walks the map whose header is at p; v is the map, for the types
// walked with reflection.
func (w *costWalker) walkMap(p unsafe.Pointer, m *costMapType, v reflect.Value) {
	if p == nil {
		return
	}
	switch m.native {
	case costStringMap:
		mm := *(*map[string]string)(unsafe.Pointer(&p))
		first, was := w.visit(p, m.layout.bytes(len(mm)))
		if first {
			for k, v := range mm {
				w.walkString(k)
				w.walkString(v)
			}
		}
		w.shared = was
		return
	case costAnyMap:
		mm := *(*map[string]any)(unsafe.Pointer(&p))
		first, was := w.visit(p, m.layout.bytes(len(mm)))
		if first {
			for k, v := range mm {
				w.walkString(k)
				w.walkAny(v)
			}
		}
		w.shared = was
		return
	}
	first, was := w.visit(p, m.layout.bytes(v.Len()))
	defer func() { w.shared = was }()
	if !first {
		return
	}
	if len(m.key.refs) == 0 && len(m.elem.refs) == 0 && m.layout.indirect == [2]uintptr{} {
		return
	}
	it := w.iterFor(m)
	it.iter.Reset(v)
	for it.iter.Next() {
		it.key.SetIterKey(&it.iter)
		it.elem.SetIterValue(&it.iter)
		w.walkRefs(it.key.Addr().UnsafePointer(), m.key.refs)
		w.walkRefs(it.elem.Addr().UnsafePointer(), m.elem.refs)
	}
	it.iter.Reset(reflect.Value{})
	w.iters[m.typ] = append(w.iters[m.typ], it)
}

// costMapIter iterates over maps of one type with reflection, into
// variables of its own, so that iterating allocates nothing.
type costMapIter struct {
	iter      reflect.MapIter
	key, elem reflect.Value
}

// iterFor returns an iterator over maps of m's type, to be given back to
// w.iters when done (maps nest: each level takes its own).
func (w *costWalker) iterFor(m *costMapType) *costMapIter {
	free := w.iters[m.typ]
	if n := len(free); n > 0 {
		it := free[n-1]
		w.iters[m.typ] = free[:n-1]
		return it
	}
	return &costMapIter{key: reflect.New(m.typ.Key()).Elem(), elem: reflect.New(m.typ.Elem()).Elem()}
}

// walkAny walks the value in x: the box holding it, unless the value is
// held in the interface itself (a pointer, a map) or in memory the
// runtime keeps for such values (a zero value, a small integer).
func (w *costWalker) walkAny(x any) {
	t := reflect.TypeOf(x)
	if t == nil {
		return
	}
	data := dataWord(x)
	plan := w.types[t]
	if plan == nil {
		plan = costTypeOf(t)
		w.types[t] = plan
	}
	if isDirectIface(t) {
		// The data word is the value: a pointer or a map.
		for i := range plan.refs {
			switch r := &plan.refs[i]; r.kind {
			case costPointer:
				w.walkPointer(data, r.elem)
			case costMap:
				var v reflect.Value
				switch {
				case r.m.native != costReflectMap:
				case t.Kind() == reflect.Map:
					v = reflect.ValueOf(x)
				default: // a struct or an array holding just the map
					word := data
					v = reflect.NewAt(r.m.typ, unsafe.Pointer(&word)).Elem()
				}
				w.walkMap(data, r.m, v)
			}
		}
		return
	}
	if data == nil || staticBox(data) {
		w.walkRefs(data, plan.refs)
		return
	}
	first, was := w.visitAlloc(data, plan.size, plan.scan)
	if first {
		w.walkRefs(data, plan.refs)
	}
	w.shared = was
}

// dataWord returns the data word of x: its value if it is a pointer or a
// map, else a pointer to its box.
func dataWord(x any) unsafe.Pointer {
	return (*[2]unsafe.Pointer)(unsafe.Pointer(&x))[1]
}

// mapPointer returns the header of a map.
func mapPointer[M ~map[K]V, K comparable, V any](m M) unsafe.Pointer {
	return *(*unsafe.Pointer)(unsafe.Pointer(&m))
}

// isDirectIface reports whether interfaces hold values of t in their data
// word (pointer-shaped types), not in a box.
func isDirectIface(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return true
	case reflect.Array:
		return t.Len() == 1 && isDirectIface(t.Elem())
	case reflect.Struct:
		return t.NumField() == 1 && isDirectIface(t.Field(0).Type)
	}
	return false
}

// staticBoxes are the runtime's memory for the boxes of small values: the
// zero value of any type (zeroVal) and integers below 256 (staticuint64s).
var staticBoxes = func() (b [2][2]uintptr) {
	b[0][0] = uintptr(dataWord(boxUint64(0)))
	b[0][1] = uintptr(dataWord(boxUint64(255))) + 8
	b[1][0] = uintptr(dataWord(boxString("")))
	b[1][1] = b[1][0] + 1024 // the runtime's zeroVal, abi.ZeroValSize bytes
	return b
}()

//go:noinline
func boxUint64(v uint64) any { return v }

//go:noinline
func boxString(s string) any { return s }

// staticBox reports whether p is in the runtime's own memory for boxes.
func staticBox(p unsafe.Pointer) bool {
	a := uintptr(p)
	for _, r := range staticBoxes {
		if a >= r[0] && a < r[1] {
			return true
		}
	}
	return false
}

// objectStructBytes returns what the structs of cached objects cost: each
// object's struct, allocated on its own, or the array of several that a
// decoded list holds its items in (the structs of one type lying end to
// end, as items of one list do). An array holding objects no longer cached
// beside some still cached is charged for the latter only.
func (w *costWalker) objectStructBytes() int64 {
	var total int64
	for t, addrs := range w.structs {
		size, scan := t.Elem().Size(), typeHasPointers(t.Elem())
		slices.Sort(addrs)
		for i := 0; i < len(addrs); {
			j := i + 1
			for j < len(addrs) && addrs[j] == addrs[j-1]+size {
				j++
			}
			if j-i == 1 {
				total += allocBytes(size, scan)
			} else {
				total += allocBytes(uintptr(j-i)*size, scan)
			}
			i = j
		}
	}
	return total
}

// allocSet is a set of allocations by address: those of 8 bytes or more,
// no two of which start within 8 bytes of each other, by a bit per 8
// bytes; the smaller ones, which the allocator packs in 16-byte blocks
// with others, by their block.
type allocSet struct {
	large, small addressSet
}

// newAllocSet returns an empty set.
func newAllocSet() allocSet {
	return allocSet{large: addressSet{shift: 3}, small: addressSet{shift: 4}}
}

// add adds the allocation at a (small: smaller than 8 bytes) and reports
// whether it was not in the set.
func (s *allocSet) add(a uintptr, small bool) bool {
	if small {
		return s.small.add(a)
	}
	return s.large.add(a)
}

// has reports whether the allocation at a is in the set.
func (s *allocSet) has(a uintptr, small bool) bool {
	if small {
		return s.small.has(a)
	}
	return s.large.has(a)
}

// reset empties the set.
func (s *allocSet) reset() {
	s.large.reset()
	s.small.reset()
}

// addressSet is a set of addresses at least 1<<shift bytes apart: a bit
// per 1<<shift bytes of the address space, in chunks of 1 MiB allocated
// as addresses come. A chunk is found by its distance from the first
// one's, the heap's arenas lying close together, or, for an address far
// from them (in the program's own memory), in a map.
type addressSet struct {
	shift  uint
	base   uintptr // the key of chunks[0]
	chunks []*addressChunk
	far    map[uintptr]*addressChunk
}

// addressChunkBits is the number of addresses of one chunk.
const addressChunkBits = 1 << 23

// addressDense is the most chunks found by their distance from the first.
const addressDense = 1 << 12

type addressChunk [addressChunkBits / 64]uint64

// add adds a and reports whether it was not in the set.
func (s *addressSet) add(a uintptr) bool {
	g := a >> s.shift
	c := s.chunk(g/addressChunkBits, true)
	i := g % addressChunkBits
	word, bit := &c[i/64], uint64(1)<<(i%64)
	if *word&bit != 0 {
		return false
	}
	*word |= bit
	return true
}

// has reports whether a is in the set.
func (s *addressSet) has(a uintptr) bool {
	g := a >> s.shift
	c := s.chunk(g/addressChunkBits, false)
	i := g % addressChunkBits
	return c != nil && c[i/64]&(uint64(1)<<(i%64)) != 0
}

// chunk returns the chunk of key, added if create is set (else nil if
// there is none).
func (s *addressSet) chunk(key uintptr, create bool) *addressChunk {
	if len(s.chunks) == 0 {
		if !create {
			return nil
		}
		s.base, s.chunks = key, make([]*addressChunk, 1)
	}
	if key < s.base && s.base-key < addressDense && create {
		// Rebase, so that the chunk is found by its distance too.
		s.chunks = append(make([]*addressChunk, s.base-key), s.chunks...)
		s.base = key
	}
	var slot **addressChunk
	if d := key - s.base; key >= s.base && d < addressDense {
		if d >= uintptr(len(s.chunks)) {
			if !create {
				return nil
			}
			s.chunks = append(s.chunks, make([]*addressChunk, d+1-uintptr(len(s.chunks)))...)
		}
		slot = &s.chunks[d]
	} else {
		c := s.far[key]
		if c != nil || !create {
			return c
		}
		if s.far == nil {
			s.far = map[uintptr]*addressChunk{}
		}
		c = new(addressChunk)
		s.far[key] = c
		return c
	}
	if *slot == nil && create {
		*slot = new(addressChunk)
	}
	return *slot
}

// reset empties the set, keeping its chunks' memory.
func (s *addressSet) reset() {
	for _, c := range s.chunks {
		if c != nil {
			clear(c[:])
		}
	}
	for _, c := range s.far {
		clear(c[:])
	}
}
