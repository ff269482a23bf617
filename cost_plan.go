package informer

import (
	"reflect"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The cost report (cost.go) walks cached objects by plans built once per Go
// type with reflection: for each type, where its values hold references
// (strings, slices, pointers, maps, interfaces) and what those point to,
// so that a walk reads memory at known offsets instead of going through
// reflect.Value field by field.

// costType is the plan of one Go type.
type costType struct {
	size uintptr
	scan bool // whether values hold pointers (the allocator's "scan" class)
	refs []costRef
}

// costRefKind is what a reference is.
type costRefKind uint8

const (
	costString costRefKind = iota
	costSlice
	costPointer
	costMap
	costInterface
	costArray // an array held inline whose elements hold references
	costWeak  // a weak pointer: its handle, not what it points to
)

// costRef is one reference a value holds at off from its start.
type costRef struct {
	off  uintptr
	kind costRefKind
	// elem is what a slice, pointer or array holds.
	elem *costType
	// m is the plan of a map.
	m *costMapType
	// iface is the type of an interface.
	iface reflect.Type
	// n is an array's length.
	n int
	// path is, in an object's plan, the index of the field path the
	// reference belongs to (costObjectType.paths); -1 elsewhere.
	path int32
}

// costMapType is the plan of one map type.
type costMapType struct {
	typ       reflect.Type
	layout    mapLayout
	key, elem *costType
	// native says the map is one of the types walked with Go's own
	// iteration instead of reflect's: labels and annotations, and the
	// content of unstructured objects.
	native costNativeMap
}

// costNativeMap is a map type walked without reflection.
type costNativeMap uint8

const (
	costReflectMap costNativeMap = iota
	costStringMap                // map[string]string
	costAnyMap                   // map[string]any
)

// costObjectType is the plan of the struct a cached object points to: its
// references, each labelled with the field path it belongs to, a field of
// a top-level struct (metadata, spec, status) or a top-level field.
type costObjectType struct {
	typ   *costType
	refs  []costRef
	paths []string
	// annotations is the index in paths of metadata.annotations, whose
	// entries the report splits by key, or -1.
	annotations int32
	// unstructured says the object is an unstructured.Unstructured, whose
	// paths are its content's keys.
	unstructured bool
}

var (
	costTypes       sync.Map // reflect.Type → *costType
	costObjectTypes sync.Map // reflect.Type → *costObjectType
	costCompileMu   sync.Mutex
)

var (
	stringMapType    = reflect.TypeFor[map[string]string]()
	anyMapType       = reflect.TypeFor[map[string]any]()
	locationType     = reflect.TypeFor[time.Location]()
	unstructuredType = reflect.TypeFor[unstructured.Unstructured]()
)

// costTypeOf returns the plan of t.
func costTypeOf(t reflect.Type) *costType {
	if p, ok := costTypes.Load(t); ok {
		return p.(*costType)
	}
	costCompileMu.Lock()
	defer costCompileMu.Unlock()
	c := costCompiler{building: map[reflect.Type]*costType{}}
	p := c.compile(t)
	c.publish()
	return p
}

// costObjectTypeOf returns the plan of the struct type t that cached
// objects point to.
func costObjectTypeOf(t reflect.Type) *costObjectType {
	if p, ok := costObjectTypes.Load(t); ok {
		return p.(*costObjectType)
	}
	costCompileMu.Lock()
	defer costCompileMu.Unlock()
	c := costCompiler{building: map[reflect.Type]*costType{}}
	o := &costObjectType{typ: c.compile(t), annotations: -1, unstructured: t == unstructuredType}
	if t.Kind() == reflect.Struct && !o.unstructured {
		c.appendPathRefs(o, t, 0, "", 0)
	}
	c.publish()
	costObjectTypes.Store(t, o)
	return o
}

// costCompiler builds plans; costCompileMu is held while it runs.
type costCompiler struct {
	building map[reflect.Type]*costType
}

// publish makes the plans built available to every walk.
func (c *costCompiler) publish() {
	for t, p := range c.building {
		costTypes.Store(t, p)
	}
}

// compile returns the plan of t, built if needed. A type refers to itself
// through the plan under construction.
func (c *costCompiler) compile(t reflect.Type) *costType {
	if p, ok := costTypes.Load(t); ok {
		return p.(*costType)
	}
	if p := c.building[t]; p != nil {
		return p
	}
	p := &costType{size: t.Size(), scan: typeHasPointers(t)}
	c.building[t] = p
	p.refs = c.appendRefs(nil, t, 0)
	return p
}

// appendRefs appends the references a value of t holds at off.
func (c *costCompiler) appendRefs(dst []costRef, t reflect.Type, off uintptr) []costRef {
	switch t.Kind() {
	case reflect.String:
		return append(dst, costRef{off: off, kind: costString, path: -1})
	case reflect.Slice:
		return append(dst, costRef{off: off, kind: costSlice, elem: c.compile(t.Elem()), path: -1})
	case reflect.Pointer:
		if t.Elem() == locationType {
			// A time's location is one of the process's (time.Local, UTC),
			// not the object's.
			return dst
		}
		return append(dst, costRef{off: off, kind: costPointer, elem: c.compile(t.Elem()), path: -1})
	case reflect.Map:
		m := &costMapType{typ: t, layout: newMapLayout(t), key: c.compile(t.Key()), elem: c.compile(t.Elem())}
		switch t {
		case stringMapType:
			m.native = costStringMap
		case anyMapType:
			m.native = costAnyMap
		}
		return append(dst, costRef{off: off, kind: costMap, m: m, path: -1})
	case reflect.Interface:
		return append(dst, costRef{off: off, kind: costInterface, iface: t, path: -1})
	case reflect.Struct:
		if weak, ok := weakHandleOffset(t); ok {
			return append(dst, costRef{off: off + weak, kind: costWeak, path: -1})
		}
		for i := range t.NumField() {
			f := t.Field(i)
			dst = c.appendRefs(dst, f.Type, off+f.Offset)
		}
		return dst
	case reflect.Array:
		if t.Len() == 0 {
			return dst
		}
		if elem := c.compile(t.Elem()); len(elem.refs) > 0 {
			return append(dst, costRef{off: off, kind: costArray, elem: elem, n: t.Len(), path: -1})
		}
	}
	// Numbers and booleans hold no reference; channels, functions and
	// unsafe pointers are not followed.
	return dst
}

// appendPathRefs appends to o the references of the fields of struct t
// held at off, labelled with their paths: prefix, then the field's JSON
// name. A struct field at depth 0 (metadata, spec, status) is not a path
// of its own: its fields are.
func (c *costCompiler) appendPathRefs(o *costObjectType, t reflect.Type, off uintptr, prefix string, depth int) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, inline := jsonFieldName(f)
		if inline {
			c.appendPathRefs(o, f.Type, off+f.Offset, prefix, depth)
			continue
		}
		path := prefix + name
		if depth == 0 && f.Type.Kind() == reflect.Struct {
			c.appendPathRefs(o, f.Type, off+f.Offset, path+".", 1)
			continue
		}
		refs := c.appendRefs(nil, f.Type, off+f.Offset)
		if len(refs) == 0 {
			continue
		}
		id := int32(len(o.paths))
		o.paths = append(o.paths, path)
		if path == "metadata.annotations" && f.Type == stringMapType {
			o.annotations = id
		}
		for _, r := range refs {
			r.path = id
			o.refs = append(o.refs, r)
		}
	}
}

// jsonFieldName returns the name of f in JSON, and whether f is a struct
// embedded inline (its fields are its parent's). A field JSON leaves out
// ("-") still holds memory: it goes by its Go name.
func jsonFieldName(f reflect.StructField) (name string, inline bool) {
	tag := f.Tag.Get("json")
	name, opts, _ := strings.Cut(tag, ",")
	if f.Anonymous && f.Type.Kind() == reflect.Struct && (name == "" || strings.Contains(opts, "inline")) {
		return "", true
	}
	if name == "" || name == "-" {
		name = f.Name
	}
	return name, false
}

// weakHandleOffset returns, if t is a weak.Pointer, the offset of the
// pointer to its handle: a weak pointer keeps nothing alive but its
// handle, a word of its own shared by every weak pointer to one object.
func weakHandleOffset(t reflect.Type) (uintptr, bool) {
	if t.PkgPath() != "weak" || !strings.HasPrefix(t.Name(), "Pointer[") {
		return 0, false
	}
	for i := range t.NumField() {
		if f := t.Field(i); f.Type.Kind() == reflect.UnsafePointer {
			return f.Offset, true
		}
	}
	return 0, false
}
