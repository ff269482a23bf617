package wire

import (
	"encoding"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The JSON decoder of typed objects (custom resources): it decodes JSON into
// values of a user's Go type exactly as sigs.k8s.io/json's
// UnmarshalCaseSensitivePreserveInts does (the decoding of apimachinery's
// JSON serializer), but without reflection per field: a tree of nodes built
// once per type from its reflect.Type says, for each struct, its fields' JSON
// names and offsets, so that decoding writes through unsafe pointers. It
// reads strings into an intern table (InternTable) instead of allocating
// them.
//
// What sigs.k8s.io/json does that matters for equal values, and how the
// nodes keep it:
//   - keys match fields case-sensitively; unknown keys are skipped; a key
//     seen twice decodes into the field again (structs, maps and pointed-to
//     values merge, lists decode over their elements: array below);
//   - fields of embedded structs without a JSON name are promoted (",inline"
//     is no option of encoding/json: an embedded struct with an empty name
//     is promoted, a named field tagged ",inline" is not);
//   - null sets pointers, slices, maps and interfaces to nil and leaves
//     other values as they are, except a type with UnmarshalJSON (a value,
//     not a pointer), which gets "null";
//   - an empty array is an empty, non-nil slice; an object a non-nil map;
//   - numbers into integers must be integers in range (strconv.ParseInt),
//     into floats strconv.ParseFloat at the float's size;
//   - strings without escapes and in valid UTF-8 are their bytes; others
//     are unquoted by encoding/json's rules (appendUnquoted: invalid UTF-8
//     and unpaired surrogates become U+FFFD).
//
// A value of a type the nodes do not model (interface{} values, which
// sigs.k8s.io/json decodes with int64 for integers; []byte as base64;
// arrays; maps with non-string keys; types with UnmarshalText; json.Number)
// is handed, as its bytes, to sigs.k8s.io/json itself, which decodes it
// into the field as it would have within the whole document. A type whose
// field set the nodes cannot reproduce (embedded pointers, the
// ",string" option, names promoted from two embedded
// structs) is rejected by NewTypedJSON: the caller decodes it with
// apimachinery's codec instead.
//
// The input is validated as encoding/json validates it (syntax, nesting
// depth at most 10,000, nothing after the value): Decode fails wherever
// sigs.k8s.io/json fails, and may fail (never succeed) where it would fail
// only later. Its errors are not sigs.k8s.io/json's: a caller that needs
// those decodes again with it on error.

// TypedJSON decodes JSON into values of one Go type (see NewTypedJSON). It
// is immutable and safe for concurrent use.
type TypedJSON struct {
	typ  reflect.Type
	root *tjNode
}

// tjKind is what a node decodes.
type tjKind uint8

const (
	tjBool tjKind = iota
	tjString
	tjInt
	tjUint
	tjFloat
	tjPointer
	tjSlice
	tjStruct
	tjStringMap   // exactly map[string]string
	tjMap         // other maps with keys of kind string
	tjUnmarshaler // a type with UnmarshalJSON
	tjTime        // metav1.Time: its UnmarshalJSON without its json.Unmarshal of the string
	tjFieldsV1    // metav1.FieldsV1 holding Raw []byte
	tjDelegate    // decoded by sigs.k8s.io/json
)

// tjNode decodes the values of one Go type.
type tjNode struct {
	kind tjKind
	typ  reflect.Type
	size uintptr
	bits int     // of integers and floats
	elem *tjNode // of pointers, slices and maps
	// fields are a struct's fields (promoted ones included) by JSON name.
	fields map[string]*tjField
	// fieldTab finds a struct's fields without hashing the key as a Go
	// map does (field): the field whose name is key is fieldTab[
	// fieldSlot(key, fieldMul) >> fieldShift], if any, a slot no other
	// field's name takes. Nil when no multiplier tried gives every name a
	// slot of its own: fields is used then.
	fieldTab   []*tjField
	fieldMul   uint64
	fieldShift uint8
	// decodeMap, if set, decodes a map of kind tjMap with typed map
	// operations instead of reflect's (tjKnownMaps).
	decodeMap func(s *tjState, n *tjNode, p unsafe.Pointer) error
	// unmarshal, if set, calls the UnmarshalJSON of a tjUnmarshaler
	// without reflect (tjKnownUnmarshalers).
	unmarshal func(p unsafe.Pointer, data []byte) error
	// emptyData is the data pointer of an empty, non-nil slice.
	emptyData unsafe.Pointer
	// shareable says that values of the node can be shared between
	// decoded objects (json_typed_share.go): pointers, slices and maps of
	// values that take memory.
	shareable bool
}

// tjField is a struct field: where it is in the struct, its node, and its
// index among the struct's fields (for telling a key seen twice).
type tjField struct {
	name   string
	offset uintptr
	node   *tjNode
	index  int
}

// field returns the field of struct node n whose JSON name is key, or nil.
//
// Why not the map alone: looking keys up in fields (a Go map: the key's
// hash, then a group's probe) took 8.5% of the decoder's CPU in
// BenchmarkTypedJSONWorkload/typed; a slot from eight of the key's bytes
// and one comparison is cheaper (see docs/benchmarks.md, W8).
func (n *tjNode) field(key []byte) *tjField {
	if n.fieldTab == nil {
		return n.fields[string(key)]
	}
	f := n.fieldTab[fieldSlot(key, n.fieldMul)>>n.fieldShift]
	if f != nil && f.name == string(key) {
		return f
	}
	return nil
}

// fieldSlot mixes key's length and its first and last four bytes (all of
// a shorter key) with mul; the top bits of the result choose a slot of
// fieldTab.
func fieldSlot(key []byte, mul uint64) uint64 {
	n := len(key)
	var x uint64
	if n >= 4 {
		x = uint64(binary.LittleEndian.Uint32(key))<<32 | uint64(binary.LittleEndian.Uint32(key[n-4:]))
	} else {
		for _, c := range key {
			x = x<<8 | uint64(c)
		}
	}
	return (x ^ uint64(n)<<59) * mul
}

// buildFieldTab sets n.fieldTab, if it finds a multiplier that gives each
// of n's fields a slot of its own in a table of at most 8 times as many
// slots as fields (a few hundred tries at most, once per type).
func (n *tjNode) buildFieldTab() {
	if len(n.fields) == 0 {
		return
	}
	bits := 1
	for 1<<bits < len(n.fields) {
		bits++
	}
	mul := uint64(0x9e3779b97f4a7c15)
	for size := bits; size <= bits+3; size++ {
		tab := make([]*tjField, 1<<size)
		shift := uint8(64 - size)
		for try := 0; try < 64; try++ {
			mul = mul*6364136223846793005 + 1442695040888963407 | 1
			clear(tab)
			ok := true
			for name, f := range n.fields {
				slot := &tab[fieldSlot([]byte(name), mul)>>shift]
				if *slot != nil {
					ok = false
					break
				}
				*slot = f
			}
			if ok {
				n.fieldTab, n.fieldMul, n.fieldShift = tab, mul, shift
				return
			}
		}
	}
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	timeType            = reflect.TypeFor[metav1.Time]()
	fieldsV1Type        = reflect.TypeFor[metav1.FieldsV1]()
	numberType          = reflect.TypeFor[json.Number]()
)

// tjKnownMaps are the decoders of the maps custom resources hold most
// (from the core API's types they embed), with typed map operations:
// reflect's MapIndex and SetMapIndex made mapObject 15% of the decoder's
// CPU in BenchmarkTypedJSONWorkload/typed. Other maps go through reflect.
var tjKnownMaps = map[reflect.Type]func(s *tjState, n *tjNode, p unsafe.Pointer) error{
	reflect.TypeFor[corev1.ResourceList]():                       decodeMapOf[corev1.ResourceName, resource.Quantity],
	reflect.TypeFor[map[corev1.ResourceName]string]():            decodeMapOf[corev1.ResourceName, string],
	reflect.TypeFor[map[string]resource.Quantity]():              decodeMapOf[string, resource.Quantity],
	reflect.TypeFor[map[string]intstr.IntOrString]():             decodeMapOf[string, intstr.IntOrString],
	reflect.TypeFor[map[string]int64]():                          decodeMapOf[string, int64],
	reflect.TypeFor[map[string]int32]():                          decodeMapOf[string, int32],
	reflect.TypeFor[map[string]bool]():                           decodeMapOf[string, bool],
	reflect.TypeFor[map[string][]string]():                       decodeMapOf[string, []string],
	reflect.TypeFor[map[corev1.ResourceName]resource.Quantity](): decodeMapOf[corev1.ResourceName, resource.Quantity],
}

// tjKnownUnmarshalers call the UnmarshalJSON of the types with one that
// custom resources hold most, without reflect.
var tjKnownUnmarshalers = map[reflect.Type]func(p unsafe.Pointer, data []byte) error{
	reflect.TypeFor[resource.Quantity](): func(p unsafe.Pointer, data []byte) error {
		return (*resource.Quantity)(p).UnmarshalJSON(data)
	},
	reflect.TypeFor[intstr.IntOrString](): func(p unsafe.Pointer, data []byte) error {
		return (*intstr.IntOrString)(p).UnmarshalJSON(data)
	},
}

// typedJSONs caches NewTypedJSON's results (*TypedJSON or error) by type.
var typedJSONs sync.Map

// tjNodes holds every node built, by type, so that a type has one node
// whichever decoder holds it (an item type's and its list type's): the
// table shares sub-objects per node. It is written under tjBuild, only
// by a build that succeeded.
var (
	tjBuild sync.Mutex
	tjNodes = map[reflect.Type]*tjNode{}
)

// NewTypedJSON returns the decoder of values of typ (a struct type or a
// pointer to one), built once per type and cached. It fails, saying why,
// for a type whose decoding it cannot reproduce exactly (see above).
func NewTypedJSON(typ reflect.Type) (*TypedJSON, error) {
	for typ != nil && typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if typ == nil || typ.Kind() != reflect.Struct {
		return nil, fmt.Errorf("typed JSON decoder: %v is not a struct type", typ)
	}
	if cached, ok := typedJSONs.Load(typ); ok {
		if err, isErr := cached.(error); isErr {
			return nil, err
		}
		return cached.(*TypedJSON), nil
	}
	tjBuild.Lock()
	defer tjBuild.Unlock()
	b := tjBuilder{nodes: map[reflect.Type]*tjNode{}}
	root, err := b.node(typ)
	if err != nil {
		err = fmt.Errorf("typed JSON decoder for %v: %w", typ, err)
		typedJSONs.Store(typ, err)
		return nil, err
	}
	for t, n := range b.nodes {
		tjNodes[t] = n
	}
	d := &TypedJSON{typ: typ, root: root}
	cached, _ := typedJSONs.LoadOrStore(typ, d)
	if err, isErr := cached.(error); isErr {
		return nil, err
	}
	return cached.(*TypedJSON), nil
}

// Type returns the struct type d decodes.
func (d *TypedJSON) Type() reflect.Type { return d.typ }

// tjBuilder builds the nodes of a type and of the types it holds, each
// once (a recursive type points back to its node), reusing those of
// earlier builds (tjNodes, read under tjBuild).
type tjBuilder struct {
	nodes map[reflect.Type]*tjNode
}

func (b *tjBuilder) node(t reflect.Type) (*tjNode, error) {
	if n, ok := b.nodes[t]; ok {
		return n, nil
	}
	if n, ok := tjNodes[t]; ok {
		return n, nil
	}
	n := &tjNode{typ: t, size: t.Size()}
	b.nodes[t] = n
	ptr := reflect.PointerTo(t)
	switch {
	case t == timeType:
		n.kind = tjTime
		return n, nil
	case t == fieldsV1Type && fieldsV1HoldsBytes():
		n.kind = tjFieldsV1
		return n, nil
	case t.Kind() != reflect.Pointer && ptr.Implements(unmarshalerType):
		n.kind = tjUnmarshaler
		n.unmarshal = tjKnownUnmarshalers[t]
		return n, nil
	case ptr.Implements(textUnmarshalerType), t == numberType:
		n.kind = tjDelegate
		return n, nil
	}
	switch t.Kind() {
	case reflect.Bool:
		n.kind = tjBool
	case reflect.String:
		n.kind = tjString
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n.kind, n.bits = tjInt, t.Bits()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n.kind, n.bits = tjUint, t.Bits()
	case reflect.Float32, reflect.Float64:
		n.kind, n.bits = tjFloat, t.Bits()
	case reflect.Pointer:
		if t.Elem().Kind() == reflect.Pointer {
			n.kind = tjDelegate // pointers to pointers: decoded by sigs.k8s.io/json
			return n, nil
		}
		elem, err := b.node(t.Elem())
		if err != nil {
			return nil, err
		}
		n.kind, n.elem = tjPointer, elem
		n.shareable = t.Elem().Size() > 0
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && !reflect.PointerTo(t.Elem()).Implements(unmarshalerType) && !reflect.PointerTo(t.Elem()).Implements(textUnmarshalerType) {
			n.kind = tjDelegate // base64
			return n, nil
		}
		elem, err := b.node(t.Elem())
		if err != nil {
			return nil, err
		}
		n.kind, n.elem = tjSlice, elem
		n.emptyData = reflect.MakeSlice(t, 0, 0).UnsafePointer()
		n.shareable = t.Elem().Size() > 0
	case reflect.Map:
		key := t.Key()
		if key.Kind() != reflect.String || reflect.PointerTo(key).Implements(textUnmarshalerType) {
			n.kind = tjDelegate
			return n, nil
		}
		n.shareable = true
		if t == reflect.TypeFor[map[string]string]() {
			n.kind = tjStringMap
			return n, nil
		}
		elem, err := b.node(t.Elem())
		if err != nil {
			return nil, err
		}
		n.kind, n.elem = tjMap, elem
		n.decodeMap = tjKnownMaps[t]
	case reflect.Struct:
		n.kind = tjStruct
		n.fields = map[string]*tjField{}
		if err := b.structFields(n, t, 0, map[reflect.Type]bool{}); err != nil {
			return nil, err
		}
		n.buildFieldTab()
	default: // interfaces, arrays, complex numbers, channels, functions, uintptr
		n.kind = tjDelegate
	}
	return n, nil
}

// fieldsV1HoldsBytes tells whether metav1.FieldsV1 holds its JSON as Raw
// []byte (apimachinery has a build tag that makes it a string).
func fieldsV1HoldsBytes() bool {
	f, ok := fieldsV1Type.FieldByName("Raw")
	return ok && f.Type == reflect.TypeFor[[]byte]() && fieldsV1Type.NumField() == 1
}

// structFields adds the fields of struct type t, at offset base in the
// decoded struct, to n, descending into embedded structs without a JSON
// name (exported or not, as encoding/json does). It fails where
// encoding/json's rules for promoted fields would be needed (a name seen
// twice) and for embedded pointers.
func (b *tjBuilder) structFields(n *tjNode, t reflect.Type, base uintptr, embedding map[reflect.Type]bool) error {
	if embedding[t] {
		return fmt.Errorf("%v embeds itself", t)
	}
	embedding[t] = true
	defer delete(embedding, t)
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				if ft.Elem().Kind() == reflect.Struct || !f.IsExported() {
					return fmt.Errorf("field %s of %v: embedded pointers are not supported", f.Name, t)
				}
			}
			if !f.IsExported() {
				if ft.Kind() != reflect.Struct {
					continue // ignored by encoding/json too
				}
				if name != "" {
					return fmt.Errorf("field %s of %v: named embedded unexported types are not supported", f.Name, t)
				}
			}
			if name == "" && ft.Kind() == reflect.Struct {
				if err := b.structFields(n, ft, base+f.Offset, embedding); err != nil {
					return err
				}
				continue
			}
		} else if !f.IsExported() {
			continue
		}
		if !validTagName(name) {
			return fmt.Errorf("field %s of %v: JSON name %q is not supported", f.Name, t, name)
		}
		if name == "" {
			name = f.Name
		}
		for _, opt := range strings.Split(opts, ",") {
			if opt == "string" {
				return fmt.Errorf("field %s of %v: the \",string\" option is not supported", f.Name, t)
			}
		}
		if _, dup := n.fields[name]; dup {
			return fmt.Errorf("field %s of %v: JSON name %q is also another field's", f.Name, t, name)
		}
		node, err := b.node(f.Type)
		if err != nil {
			return err
		}
		n.fields[name] = &tjField{name: name, offset: base + f.Offset, node: node, index: len(n.fields)}
	}
	return nil
}

// validTagName reports whether name is a JSON name encoding/json takes from
// a tag as it is: letters, digits and the punctuation it allows (more than
// these, it would ignore the name).
func validTagName(name string) bool {
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-', c == '.', c == '/':
		default:
			return false
		}
	}
	return true
}

// errTypedJSON is the error of input Decode cannot decode; Decode wraps it
// with the offset and what it found.
var errTypedJSON = errors.New("typed JSON decoder")
