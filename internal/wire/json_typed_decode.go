package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/bits"
	"reflect"
	"strconv"
	"time"
	"unicode/utf8"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
)

// tjMaxDepth is encoding/json's limit on nesting.
const tjMaxDepth = 10000

// tjState is one decoding: the input, the position, and where strings go.
type tjState struct {
	data  []byte
	i     int
	depth int
	strs  *InternTable
	// share is set when strs shares sub-objects (json_typed_share.go).
	share bool
	// topKeyRisk is set when the top-level object has a key, not a field,
	// that apimachinery's kind detection (encoding/json, case-insensitive)
	// could take for "apiVersion" or "kind": see TopLevelKeyRisk.
	topKeyRisk bool
}

// sliceHeader is the layout of a slice.
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// DecodeResult says what Decode saw besides the value.
type DecodeResult struct {
	// TopLevelKeyRisk is true when the top-level object has a key that is
	// not one of the type's fields but equals "apiVersion" or "kind" up to
	// case or holds non-ASCII bytes: apimachinery finds an object's kind
	// with encoding/json, which matches keys case-insensitively, so the kind
	// it finds may not be what the type's TypeMeta holds.
	TopLevelKeyRisk bool
}

// Decode decodes data, one JSON value, into *into, which must point to a
// value of d's type, as sigs.k8s.io/json's UnmarshalCaseSensitivePreserveInts
// would (see the top of json_typed.go), taking strings from strs (nil:
// allocated), whose lock the caller holds. On error, *into holds part of
// data.
func (d *TypedJSON) Decode(data []byte, into any, strs *InternTable) (DecodeResult, error) {
	v := reflect.ValueOf(into)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Type().Elem() != d.typ {
		return DecodeResult{}, fmt.Errorf("%w: decoding into %T, want *%v", errTypedJSON, into, d.typ)
	}
	return d.DecodeAt(data, v.UnsafePointer(), strs)
}

// DecodeAt is Decode into the value of d's type at p.
func (d *TypedJSON) DecodeAt(data []byte, p unsafe.Pointer, strs *InternTable) (DecodeResult, error) {
	s := tjState{data: data, strs: strs, share: strs != nil && strs.shareSubObjects}
	err := s.value(d.root, p)
	if err == nil {
		s.ws()
		if s.i < len(s.data) {
			err = s.fail("after the top-level value")
		}
	}
	return DecodeResult{TopLevelKeyRisk: s.topKeyRisk}, err
}

// fail returns the error of unexpected input at the current position.
func (s *tjState) fail(where string) error {
	if s.i >= len(s.data) {
		return fmt.Errorf("%w: unexpected end of input %s", errTypedJSON, where)
	}
	return fmt.Errorf("%w: unexpected %q at offset %d %s", errTypedJSON, s.data[s.i], s.i, where)
}

func (s *tjState) ws() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, or 0 at the end.
func (s *tjState) peek() byte {
	// Compact JSON (what servers send) has no white space between tokens:
	// this test alone answers most calls.
	if s.i < len(s.data) && s.data[s.i] > ' ' {
		return s.data[s.i]
	}
	s.ws()
	if s.i < len(s.data) {
		return s.data[s.i]
	}
	return 0
}

// literal consumes word ("true", "false", "null").
func (s *tjState) literal(word string) error {
	if !bytes.HasPrefix(s.data[s.i:], []byte(word)) {
		return s.fail("in a literal")
	}
	s.i += len(word)
	return nil
}

// value decodes the value at the current position into p, of n's type,
// sharing it (json_typed_share.go) if it can.
func (s *tjState) value(n *tjNode, p unsafe.Pointer) error {
	c := s.peek()
	if n.shareable && s.share && (c == '{' || c == '[') && isNilAt(n, p) {
		return s.sharedValue(n, p)
	}
	return s.decodeValue(n, p)
}

// decodeValue is value without sharing the value itself.
func (s *tjState) decodeValue(n *tjNode, p unsafe.Pointer) error {
	c := s.peek()
	switch n.kind {
	case tjString:
		switch c {
		case '"':
			str, err := s.str()
			if err != nil {
				return err
			}
			*(*string)(p) = str
			return nil
		case 'n':
			return s.literal("null")
		}
	case tjStruct:
		switch c {
		case '{':
			return s.object(n, p)
		case 'n':
			return s.literal("null")
		}
	case tjPointer:
		if c == 'n' {
			*(*unsafe.Pointer)(p) = nil
			return s.literal("null")
		}
		if c == 0 {
			break
		}
		elem := *(*unsafe.Pointer)(p)
		if elem == nil {
			elem = reflect.New(n.elem.typ).UnsafePointer()
			*(*unsafe.Pointer)(p) = elem
		}
		return s.value(n.elem, elem)
	case tjSlice:
		switch c {
		case '[':
			return s.array(n, p)
		case 'n':
			*(*sliceHeader)(p) = sliceHeader{}
			return s.literal("null")
		}
	case tjStringMap, tjMap:
		switch c {
		case '{':
			if n.kind == tjStringMap {
				return s.stringMap(p)
			}
			if n.decodeMap != nil {
				return n.decodeMap(s, n, p)
			}
			return s.mapObject(n, p)
		case 'n':
			*(*unsafe.Pointer)(p) = nil
			return s.literal("null")
		}
	case tjInt, tjUint, tjFloat:
		switch {
		case c == '-' || c >= '0' && c <= '9':
			return s.numberInto(n, p)
		case c == 'n':
			return s.literal("null")
		}
	case tjBool:
		switch c {
		case 't':
			*(*bool)(p) = true
			return s.literal("true")
		case 'f':
			*(*bool)(p) = false
			return s.literal("false")
		case 'n':
			return s.literal("null")
		}
	case tjTime:
		return s.time(p)
	case tjFieldsV1:
		start := s.i
		if err := s.skip(); err != nil {
			return err
		}
		if raw := s.data[start:s.i]; string(raw) != "null" {
			if s.strs != nil {
				// Shared if the table shares sub-objects, else a copy.
				(*metav1.FieldsV1)(p).Raw = s.strs.bytesFrom(raw)
			} else {
				(*metav1.FieldsV1)(p).Raw = bytes.Clone(raw)
			}
		}
		return nil
	case tjUnmarshaler:
		start := s.i
		if err := s.skip(); err != nil {
			return err
		}
		if n.unmarshal != nil {
			return n.unmarshal(p, s.data[start:s.i])
		}
		return reflect.NewAt(n.typ, p).Interface().(json.Unmarshaler).UnmarshalJSON(s.data[start:s.i])
	case tjDelegate:
		start := s.i
		if err := s.skip(); err != nil {
			return err
		}
		return kjson.UnmarshalCaseSensitivePreserveInts(s.data[start:s.i], reflect.NewAt(n.typ, p).Interface())
	}
	return s.fail(fmt.Sprintf("for a value of type %v", n.typ))
}

// time decodes a metav1.Time as its UnmarshalJSON does, parsing a string
// without escapes in place.
func (s *tjState) time(p unsafe.Pointer) error {
	start := s.i
	if s.peek() == '"' {
		raw, plain, err := s.strBytes()
		if err != nil {
			return err
		}
		if plain {
			t, err := time.Parse(time.RFC3339, unsafe.String(unsafe.SliceData(raw), len(raw)))
			if err != nil {
				return fmt.Errorf("%w: %q is not an RFC 3339 time", errTypedJSON, raw)
			}
			(*metav1.Time)(p).Time = t.Local()
			return nil
		}
		s.i = start
	}
	start = s.i
	if err := s.skip(); err != nil {
		return err
	}
	return (*metav1.Time)(p).UnmarshalJSON(s.data[start:s.i])
}

// object decodes an object into the struct at p.
func (s *tjState) object(n *tjNode, p unsafe.Pointer) error {
	if empty, err := s.open('}'); empty || err != nil {
		return err
	}
	var seen uint64 // the fields seen, by index modulo 64, when sharing
	for {
		key, err := s.key()
		if err != nil {
			return err
		}
		if f := n.field(key); f != nil {
			if s.share {
				bit := uint64(1) << (f.index % 64)
				if seen&bit != 0 {
					return errSharedTwice
				}
				seen |= bit
			}
			err = s.value(f.node, unsafe.Add(p, f.offset))
		} else {
			if s.depth == 1 && kindKeyRisk(key) {
				s.topKeyRisk = true
			}
			err = s.skip()
		}
		if err != nil {
			return err
		}
		if done, err := s.next('}'); done || err != nil {
			return err
		}
	}
}

// kindKeyRisk tells whether encoding/json could match key with the field
// "apiVersion" or "kind" case-insensitively.
func kindKeyRisk(key []byte) bool {
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return true
		}
	}
	return bytes.EqualFold(key, []byte("apiVersion")) || bytes.EqualFold(key, []byte("kind"))
}

// key reads an object's key and the colon after it. The key's bytes are
// valid until the next call.
func (s *tjState) key() ([]byte, error) {
	if s.peek() != '"' {
		return nil, s.fail("for an object's key")
	}
	raw, plain, err := s.strBytes()
	if err != nil {
		return nil, err
	}
	if !plain {
		var ok bool
		if raw, ok = appendUnquoted(nil, raw); !ok {
			return nil, s.fail("in an object's key")
		}
	}
	return raw, s.colon()
}

// maxKeptUnquoted is the largest buffer of unquoted bytes a table keeps
// for the next string with escapes: a rare huge string is not held for the
// table's lifetime.
const maxKeptUnquoted = 64 << 10

// str reads a string value: interned if the decoding has a table, which
// also lends the buffer a string with escapes is unquoted into.
func (s *tjState) str() (string, error) {
	raw, plain, err := s.strBytes()
	if err != nil {
		return "", err
	}
	if !plain {
		var buf []byte
		if s.strs != nil {
			buf = s.strs.unquoted[:0]
		}
		var ok bool
		if raw, ok = appendUnquoted(buf, raw); !ok {
			return "", s.fail("in a string")
		}
		if s.strs == nil {
			return string(raw), nil
		}
		if cap(raw) <= maxKeptUnquoted {
			s.strs.unquoted = raw
		}
	}
	if s.strs != nil {
		return s.strs.strFrom(raw), nil
	}
	return string(raw), nil
}

// strBytes reads a string at the current position ('"'). If plain, raw is
// its content, which is its value (no escapes, valid UTF-8); otherwise raw
// is the whole quoted string, to unquote.
func (s *tjState) strBytes() (raw []byte, plain bool, err error) {
	start := s.i + 1
	data := s.data
	j := start + plainPrefix(data[start:])
	for j < len(data) {
		c := data[j]
		if c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		j++
	}
	if j < len(data) && data[j] == '"' {
		s.i = j + 1
		return data[start:j], true, nil
	}
	escaped, high := false, false
	for j < len(data) {
		c := data[j]
		switch {
		case c == '"':
			s.i = j + 1
			if !escaped && (!high || utf8.Valid(data[start:j])) {
				return data[start:j], true, nil
			}
			return data[start-1 : j+1], false, nil
		case c == '\\':
			escaped = true
			if j+1 >= len(data) {
				s.i = j + 1
				return nil, false, s.fail("in a string")
			}
			switch data[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+6 > len(data) {
					s.i = len(data)
					return nil, false, s.fail("in a string")
				}
				for _, h := range data[j+2 : j+6] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						s.i = j
						return nil, false, s.fail("in a \\u escape")
					}
				}
				j += 6
			default:
				s.i = j + 1
				return nil, false, s.fail("in an escape")
			}
		case c < 0x20:
			s.i = j
			return nil, false, s.fail("in a string")
		default:
			if c >= utf8.RuneSelf {
				high = true
			}
			j++
		}
	}
	s.i = j
	return nil, false, s.fail("in a string")
}

// plainPrefix returns the index in b of the first byte that ends a plain
// string ('"', '\\', a control byte, a byte of 0x80 or more), or, if there
// is none in b's whole 8-byte words, the length of those words. It tests a
// word's 8 bytes at once and finds the byte from the word's mask: strings
// are most of W8's input, and strBytes' byte loop was 13% of the
// decoder's CPU in BenchmarkTypedJSONWorkload/typed.
func plainPrefix(b []byte) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		// A byte is 0 in w^('"'*ones) where w has a '"', and the
		// subtraction sets the high bit of that byte. A borrow can set
		// the high bit of bytes after a match too, never before it (nor
		// can the control-byte test's): the lowest bit set marks the
		// first match.
		quote := w ^ '"'*ones
		backslash := w ^ '\\'*ones
		if m := ((quote-ones)&^quote | (backslash-ones)&^backslash | (w-0x20*ones)&^w | w) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	return i
}

// number reads a number, checking its syntax.
func (s *tjState) number() ([]byte, error) {
	data, start, j := s.data, s.i, s.i
	if j < len(data) && data[j] == '-' {
		j++
	}
	switch {
	case j < len(data) && data[j] == '0':
		j++
	case j < len(data) && data[j] >= '1' && data[j] <= '9':
		for j++; j < len(data) && data[j] >= '0' && data[j] <= '9'; j++ {
		}
	default:
		s.i = j
		return nil, s.fail("in a number")
	}
	if j < len(data) && data[j] == '.' {
		j++
		if j >= len(data) || data[j] < '0' || data[j] > '9' {
			s.i = j
			return nil, s.fail("in a number's fraction")
		}
		for ; j < len(data) && data[j] >= '0' && data[j] <= '9'; j++ {
		}
	}
	if j < len(data) && (data[j] == 'e' || data[j] == 'E') {
		j++
		if j < len(data) && (data[j] == '+' || data[j] == '-') {
			j++
		}
		if j >= len(data) || data[j] < '0' || data[j] > '9' {
			s.i = j
			return nil, s.fail("in a number's exponent")
		}
		for ; j < len(data) && data[j] >= '0' && data[j] <= '9'; j++ {
		}
	}
	s.i = j
	return data[start:j], nil
}

// numberInto decodes a number into the integer or float at p.
func (s *tjState) numberInto(n *tjNode, p unsafe.Pointer) error {
	lit, err := s.number()
	if err != nil {
		return err
	}
	str := unsafe.String(unsafe.SliceData(lit), len(lit))
	switch n.kind {
	case tjInt:
		v, err := strconv.ParseInt(str, 10, 64)
		if err != nil || v<<(64-n.bits)>>(64-n.bits) != v {
			return fmt.Errorf("%w: %s does not fit %v", errTypedJSON, lit, n.typ)
		}
		switch n.bits {
		case 8:
			*(*int8)(p) = int8(v)
		case 16:
			*(*int16)(p) = int16(v)
		case 32:
			*(*int32)(p) = int32(v)
		default:
			*(*int64)(p) = v
		}
	case tjUint:
		v, err := strconv.ParseUint(str, 10, 64)
		if err != nil || n.bits < 64 && v>>n.bits != 0 {
			return fmt.Errorf("%w: %s does not fit %v", errTypedJSON, lit, n.typ)
		}
		switch n.bits {
		case 8:
			*(*uint8)(p) = uint8(v)
		case 16:
			*(*uint16)(p) = uint16(v)
		case 32:
			*(*uint32)(p) = uint32(v)
		default:
			*(*uint64)(p) = v
		}
	default:
		v, err := strconv.ParseFloat(str, n.bits)
		if err != nil {
			return fmt.Errorf("%w: %s does not fit %v", errTypedJSON, lit, n.typ)
		}
		if n.bits == 32 {
			*(*float32)(p) = float32(v)
		} else {
			*(*float64)(p) = v
		}
	}
	return nil
}

// array decodes an array into the slice at p as encoding/json does: over
// the elements the slice has (a key seen twice decodes into the first
// value's elements), growing it as needed, then cut to the array's length;
// an empty array is an empty, non-nil slice.
func (s *tjState) array(n *tjNode, p unsafe.Pointer) error {
	empty, err := s.open(']')
	if err != nil {
		return err
	}
	h := (*sliceHeader)(p)
	size := n.elem.size
	i := 0
	if !empty && h.cap == 0 && size > 0 {
		// Sized once: growing an element at a time leaves the smaller
		// arrays as garbage and the last one up to twice too big.
		if count := countElements(s.data, s.i); count > 0 {
			reflect.NewAt(n.typ, p).Elem().Grow(count)
		}
	}
	if !empty {
		for {
			if i >= h.cap {
				reflect.NewAt(n.typ, p).Elem().Grow(1)
			}
			if i >= h.len {
				h.len = i + 1
			}
			if err := s.value(n.elem, unsafe.Add(h.data, uintptr(i)*size)); err != nil {
				return err
			}
			i++
			if done, err := s.next(']'); err != nil {
				return err
			} else if done {
				break
			}
		}
	}
	if i < h.len {
		h.len = i
	}
	if i == 0 {
		*h = sliceHeader{data: n.emptyData}
	}
	return nil
}

// countWindow is the most bytes countElements reads. Counting reads an
// array's bytes once more, and an outer array's count reads all that its
// elements nest, so an unbounded count took 23% of the decoder's CPU in
// BenchmarkTypedJSONWorkload/typed, more than it saved; an array longer
// than this grows as it is decoded. Arrays of many small elements (ports,
// environment variables, conditions) fit; those of few large ones
// (containers, pod sets) mostly hold one or two elements, which growing
// allocates exactly anyway.
const countWindow = 1024

// countElements returns the number of elements of the array whose first
// element (there is one) starts at data[i], counting the commas outside
// nested values and strings, or 0 if the array does not end within
// countWindow bytes. It checks nothing: on malformed input its count may
// be wrong, which changes only how the decoding allocates, by at most
// countWindow elements.
func countElements(data []byte, i int) int {
	end := min(len(data), i+countWindow)
	n, depth := 1, 0
	for ; i < end; i++ {
		switch data[i] {
		case '"':
			for i += 1 + plainPrefix(data[i+1:end]); i < end && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			depth++
		case ']', '}':
			if depth == 0 {
				return n
			}
			depth--
		case ',':
			if depth == 0 {
				n++
			}
		}
	}
	return 0
}

// stringMap decodes an object into the map[string]string at p.
func (s *tjState) stringMap(p unsafe.Pointer) error {
	m := *(*map[string]string)(p)
	if m == nil {
		m = map[string]string{}
		*(*map[string]string)(p) = m
	}
	if empty, err := s.open('}'); empty || err != nil {
		return err
	}
	for {
		key, err := s.mapKey()
		if err != nil {
			return err
		}
		var v string
		switch s.peek() {
		case '"':
			if v, err = s.str(); err != nil {
				return err
			}
		case 'n':
			if err := s.literal("null"); err != nil {
				return err
			}
		default:
			return s.fail("for a string")
		}
		m[key] = v
		if done, err := s.next('}'); done || err != nil {
			return err
		}
	}
}

// mapKey reads a map's key, as a string of the table, and the colon.
func (s *tjState) mapKey() (string, error) {
	if s.peek() != '"' {
		return "", s.fail("for an object's key")
	}
	key, err := s.str()
	if err != nil {
		return "", err
	}
	return key, s.colon()
}

// mapObject decodes an object into the map at p (keys of kind string):
// each value into a zero value, then stored under its key.
func (s *tjState) mapObject(n *tjNode, p unsafe.Pointer) error {
	m := reflect.NewAt(n.typ, p).Elem()
	if m.IsNil() {
		m.Set(reflect.MakeMap(n.typ))
	}
	if empty, err := s.open('}'); empty || err != nil {
		return err
	}
	elem := reflect.New(n.elem.typ).Elem()
	key := reflect.New(n.typ.Key()).Elem()
	for {
		k, err := s.mapKey()
		if err != nil {
			return err
		}
		elem.SetZero()
		if err := s.value(n.elem, elem.Addr().UnsafePointer()); err != nil {
			return err
		}
		key.SetString(k)
		m.SetMapIndex(key, elem)
		if done, err := s.next('}'); done || err != nil {
			return err
		}
	}
}

// decodeMapOf is mapObject for maps of type map[K]V (tjKnownMaps), with
// the same results.
func decodeMapOf[K ~string, V any](s *tjState, n *tjNode, p unsafe.Pointer) error {
	m := *(*map[K]V)(p)
	if m == nil {
		m = map[K]V{}
		*(*map[K]V)(p) = m
	}
	if empty, err := s.open('}'); empty || err != nil {
		return err
	}
	elem := new(V) // one per map: a value decoded in place escapes
	var zero V
	for {
		k, err := s.mapKey()
		if err != nil {
			return err
		}
		*elem = zero
		if err := s.value(n.elem, unsafe.Pointer(elem)); err != nil {
			return err
		}
		m[K(k)] = *elem
		if done, err := s.next('}'); done || err != nil {
			return err
		}
	}
}

// skip reads past a value, checking its syntax.
func (s *tjState) skip() error {
	switch c := s.peek(); {
	case c == '{':
		if empty, err := s.open('}'); empty || err != nil {
			return err
		}
		for {
			if s.peek() != '"' {
				return s.fail("for an object's key")
			}
			if _, _, err := s.strBytes(); err != nil {
				return err
			}
			if err := s.colon(); err != nil {
				return err
			}
			if err := s.skip(); err != nil {
				return err
			}
			if done, err := s.next('}'); done || err != nil {
				return err
			}
		}
	case c == '[':
		if empty, err := s.open(']'); empty || err != nil {
			return err
		}
		for {
			if err := s.skip(); err != nil {
				return err
			}
			if done, err := s.next(']'); done || err != nil {
				return err
			}
		}
	case c == '"':
		_, _, err := s.strBytes()
		return err
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		_, err := s.number()
		return err
	default:
		return s.fail("for a value")
	}
}

// open consumes the opening byte of an object or array, counting its
// depth, and, if close follows, the closing one: it reports whether the
// value is empty.
func (s *tjState) open(close byte) (empty bool, err error) {
	s.i++
	if s.depth++; s.depth > tjMaxDepth {
		return false, s.fail("past the maximum depth")
	}
	if s.peek() == close {
		s.i++
		s.depth--
		return true, nil
	}
	return false, nil
}

// next consumes the comma after a member or element, or the closing byte
// of its object or array: it reports whether the value ended.
func (s *tjState) next(close byte) (done bool, err error) {
	switch s.peek() {
	case ',':
		s.i++
		return false, nil
	case close:
		s.i++
		s.depth--
		return true, nil
	}
	return false, s.fail("after a member or element")
}

// colon consumes the colon after an object's key.
func (s *tjState) colon() error {
	if s.peek() != ':' {
		return s.fail("after an object's key")
	}
	s.i++
	return nil
}
