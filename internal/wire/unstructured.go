package wire

import (
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// The JSON decoder of unstructured objects: it reads a JSON document into
// the map[string]any, []any, string, int64, float64, bool and nil values
// client-go's unstructured.UnstructuredJSONScheme produces for the same
// bytes (sigs.k8s.io/json, case-sensitive, integers kept as int64), but
// takes every member name and most string values from an intern table, so
// that the keys and values repeated across a cache's objects are kept once,
// and boxes each interned string into an interface once. With sharing on,
// a sub-tree (an object or array below an object's top level) whose bytes
// equal those a cached sub-tree was decoded from is not decoded at all: the
// decoder returns the cached one (unstructured_share.go).
//
// It only ever succeeds where client-go's decoding succeeds with the same
// value: whatever it does not read as client-go would for certain (a syntax
// error, a number out of range, a top-level member named like "kind" or
// "apiVersion" but for case, or twice, nesting deeper than encoding/json
// allows) makes it give up, and the caller decodes the bytes with
// client-go's codec instead, which returns client-go's value or error
// (UnstructuredSerializer). The rare strings whose decoding has rules of
// their own (surrogate escapes, invalid UTF-8) it decodes with
// encoding/json, whose rules sigs.k8s.io/json shares.

// unstrMaxDepth is the deepest nesting of objects and arrays encoding/json
// (and so client-go) accepts.
const unstrMaxDepth = 10000

// unstrBoxSlots is the size of the cache of interned strings boxed into
// interfaces: a string value stored in an any costs a 16-byte box per use
// unless the box is reused. Entries are strong references, so they pin at
// most unstrBoxSlots strings (of at most unstrBoxMaxLen bytes, 128 KB)
// beyond the objects that use them.
const (
	unstrBoxSlots  = 1 << 11
	unstrBoxMaxLen = 64
)

// UnstructuredDecoder decodes JSON documents into unstructured content (see
// the comment at the top of this file). It is safe for concurrent use: a
// document is decoded with the table locked.
type UnstructuredDecoder struct {
	table *InternTable
	// share makes the decoder share sub-trees between the documents it
	// decodes (see unstructured_share.go), in table.trees: the table's
	// SharesSubObjects.
	share bool
	// The fields below are guarded by the table's lock.
	boxes [unstrBoxSlots]unstrBox
	st    unstrState
}

// unstrBox is an interned string boxed into an interface.
type unstrBox struct {
	p   *byte
	n   int
	box any
}

// NewUnstructuredDecoder returns a decoder reading strings into table. If
// the table shares sub-objects (NewSubObjectSharingTable), the decoder also
// shares sub-trees between the objects it decodes: they must then never be
// written to (see docs/semantics.md, "Deduplication").
func NewUnstructuredDecoder(table *InternTable) *UnstructuredDecoder {
	return &UnstructuredDecoder{table: table, share: table.SharesSubObjects()}
}

// unstrState is the position in the document being decoded and the
// scratch space reused between documents.
type unstrState struct {
	jsonScanner // the document and the position in it
	d           *UnstructuredDecoder
	// ends holds, for each object or array of the current root in the
	// order they open, where it closes (see unstrBracketEnds); k is the next
	// one's index. sharing is whether ends is valid (sub-trees may be
	// shared).
	ends    []unstrBracketEnd
	k       int
	sharing bool
	// members and elems are stacks of the members and elements read so far
	// of the objects and arrays being decoded.
	members []unstrMember
	elems   []any
	// esc holds the last string unescaped.
	esc []byte
}

type unstrMember struct {
	key   string
	value any
}

// reset points s at buf and drops what the scratch stacks point to.
func (s *unstrState) reset(d *UnstructuredDecoder, buf []byte) {
	s.d, s.buf, s.pos = d, buf, 0
	s.sharing = false
	s.k = 0
}

// release drops s's references into the decoded document and its values.
func (s *unstrState) release() {
	s.buf = nil
	clear(s.members[:cap(s.members)])
	clear(s.elems[:cap(s.elems)])
	s.members, s.elems = s.members[:0], s.elems[:0]
}

// DecodeObject decodes data, a JSON object, into a map as client-go's
// unstructured decoding does. It reports false, returning nothing, where
// it cannot tell that client-go would produce the same: the caller then
// decodes data with client-go's codec.
func (d *UnstructuredDecoder) DecodeObject(data []byte) (map[string]any, bool) {
	d.table.lock()
	defer d.table.mu.Unlock()
	s := &d.st
	s.reset(d, data)
	defer s.release()
	s.ws()
	if s.peek() != '{' {
		return nil, false
	}
	m, ok := s.root(1)
	if !ok {
		return nil, false
	}
	s.ws()
	return m, s.pos == len(s.buf)
}

// DecodeList decodes data, a JSON object with an "items" array of objects,
// into the list's own members (without "items") and its items, as
// client-go's unstructured list decoding does before it fills in the items'
// kind and version. An element that is null is a nil map. It reports false
// where DecodeObject would, and for an "items" member that is neither an
// array nor null or that appears twice, or an element that is neither an
// object nor null.
func (d *UnstructuredDecoder) DecodeList(data []byte) (map[string]any, []map[string]any, bool) {
	d.table.lock()
	defer d.table.mu.Unlock()
	s := &d.st
	s.reset(d, data)
	defer s.release()
	s.ws()
	if s.peek() != '{' {
		return nil, nil, false
	}
	m, items, ok := s.list()
	if !ok {
		return nil, nil, false
	}
	s.ws()
	return m, items, s.pos == len(s.buf)
}

// list reads the object of a list body.
func (s *unstrState) list() (map[string]any, []map[string]any, bool) {
	s.pos++ // {
	base := len(s.members)
	var items []map[string]any
	seenItems := false
	for first := true; ; first = false {
		more, err := s.next('}', first)
		if err != nil {
			return nil, nil, false
		}
		if !more {
			break
		}
		key, ok := s.key()
		if !ok {
			return nil, nil, false
		}
		if key == "items" {
			if seenItems {
				return nil, nil, false
			}
			seenItems = true
			if items, ok = s.items(); !ok {
				return nil, nil, false
			}
			continue
		}
		v, ok := s.value(1, 0, key == "metadata")
		if !ok {
			return nil, nil, false
		}
		s.members = append(s.members, unstrMember{key, v})
	}
	if !s.typeMembersOK(base) {
		s.members = s.members[:base]
		return nil, nil, false
	}
	return s.endObject(base), items, true
}

// typeMembersOK reports whether the members from base on, those of a
// document's top level, name its kind and apiVersion as client-go's
// unstructured decoding and its serializer's look-up of them (encoding/json
// into a struct, member names matched regardless of case, every occurrence
// checked for its type) agree: at most once each, and no other member whose
// name matches either regardless of case.
func (s *unstrState) typeMembersOK(base int) bool {
	kinds, versions := 0, 0
	for _, mb := range s.members[base:] {
		switch {
		case mb.key == "kind":
			kinds++
		case mb.key == "apiVersion":
			versions++
		case strings.EqualFold(mb.key, "kind") || strings.EqualFold(mb.key, "apiVersion"):
			return false
		}
	}
	return kinds <= 1 && versions <= 1
}

// items reads the items of a list: an array of objects (each a root, see
// root) or nulls, or null.
func (s *unstrState) items() ([]map[string]any, bool) {
	if s.literal("null") {
		return nil, true
	}
	if s.peek() != '[' {
		return nil, false
	}
	s.pos++
	var items []map[string]any
	for first := true; ; first = false {
		more, err := s.next(']', first)
		if err != nil {
			return nil, false
		}
		if !more {
			break
		}
		if s.literal("null") {
			items = append(items, nil)
			continue
		}
		if s.peek() != '{' {
			return nil, false
		}
		m, ok := s.root(3)
		if !ok {
			return nil, false
		}
		items = append(items, m)
	}
	if items == nil {
		items = []map[string]any{}
	}
	return items, true
}

// root reads an object that is a whole unstructured object (a document,
// or an element of a list's items) at depth: its own map is never shared,
// sub-trees below it may be.
func (s *unstrState) root(depth int) (map[string]any, bool) {
	s.sharing = false
	if s.d.share {
		s.ends, s.sharing = unstrBracketEnds(s.buf, s.pos, s.ends[:0])
		s.k = 0
	}
	m, ok := s.object(depth, 0, false)
	s.sharing = false
	return m, ok
}

// value reads any value inside an object or array at depth, level below
// its root. meta is whether it is the value of the root's "metadata"
// member: the strings unique to one object (its name, uid…) are copied
// rather than interned.
func (s *unstrState) value(depth, level int, meta bool) (any, bool) {
	switch c := s.peek(); {
	case c == '{':
		m, ok := s.object(depth+1, level+1, meta)
		if !ok {
			return nil, false
		}
		return m, true
	case c == '[':
		return s.array(depth+1, level+1)
	case c == '"':
		return s.stringValue(true)
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	case s.literal("true"):
		return true, true
	case s.literal("false"):
		return false, true
	case s.literal("null"):
		return nil, true
	}
	return nil, false
}

// object reads an object at depth, level below its root (0 for the root).
// If meta, the values of name, uid, resourceVersion and creationTimestamp
// are copied rather than interned.
func (s *unstrState) object(depth, level int, meta bool) (map[string]any, bool) {
	if depth > unstrMaxDepth {
		return nil, false
	}
	start, k := s.pos, s.k
	var h uint64
	hashed := false
	if s.sharing && level > 0 {
		var v any
		if v, h, hashed = s.sharedTree(); v != nil {
			m, ok := v.(map[string]any)
			return m, ok
		}
	}
	s.k++
	s.pos++ // {
	base := len(s.members)
	for first := true; ; first = false {
		more, err := s.next('}', first)
		if err != nil {
			s.members = s.members[:base]
			return nil, false
		}
		if !more {
			break
		}
		key, ok := s.key()
		if !ok {
			s.members = s.members[:base]
			return nil, false
		}
		var v any
		if meta && unstrUniqueMeta(key) && s.peek() == '"' {
			v, ok = s.stringValue(false)
		} else {
			v, ok = s.value(depth, level, level == 0 && key == "metadata")
		}
		if !ok {
			s.members = s.members[:base]
			return nil, false
		}
		s.members = append(s.members, unstrMember{key, v})
	}
	if depth == 1 && !s.typeMembersOK(base) {
		s.members = s.members[:base]
		return nil, false
	}
	m := s.endObject(base)
	if hashed && len(m) > 0 {
		s.keepTree(start, k, h, m)
	}
	return m, true
}

// unstrUniqueMeta tells whether key names a member of an object's metadata
// whose value is unique to the object, not worth interning.
func unstrUniqueMeta(key string) bool {
	switch key {
	case "name", "uid", "resourceVersion", "creationTimestamp":
		return true
	}
	return false
}

// endObject makes the map of the members from base on, sized for them,
// later members winning over earlier ones of the same name, as
// encoding/json's, and pops them.
func (s *unstrState) endObject(base int) map[string]any {
	members := s.members[base:]
	m := make(map[string]any, len(members))
	for _, mb := range members {
		m[mb.key] = mb.value
	}
	clear(members)
	s.members = s.members[:base]
	return m
}

// array reads an array at depth, level below its root.
func (s *unstrState) array(depth, level int) (any, bool) {
	if depth > unstrMaxDepth {
		return nil, false
	}
	start, k := s.pos, s.k
	var h uint64
	hashed := false
	if s.sharing {
		var v any
		if v, h, hashed = s.sharedTree(); v != nil {
			return v, true
		}
	}
	s.k++
	s.pos++ // [
	base := len(s.elems)
	for first := true; ; first = false {
		more, err := s.next(']', first)
		if err != nil {
			s.elems = s.elems[:base]
			return nil, false
		}
		if !more {
			break
		}
		v, ok := s.value(depth, level, false)
		if !ok {
			s.elems = s.elems[:base]
			return nil, false
		}
		s.elems = append(s.elems, v)
	}
	elems := s.elems[base:]
	out := make([]any, len(elems))
	copy(out, elems)
	clear(elems)
	s.elems = s.elems[:base]
	if hashed && len(out) > 0 {
		s.keepTree(start, k, h, out)
	}
	return out, true
}

// key reads a member name and the colon after it, and returns the name
// interned.
func (s *unstrState) key() (string, bool) {
	if s.peek() != '"' {
		return "", false
	}
	raw, plain, ok := s.str()
	if !ok {
		return "", false
	}
	if !plain {
		if raw, ok = s.unescape(raw); !ok {
			return "", false
		}
	}
	key := s.d.table.strFrom(raw)
	s.ws()
	if s.peek() != ':' {
		return "", false
	}
	s.pos++
	s.ws()
	return key, true
}

// stringValue reads a string, interned and boxed once if intern.
func (s *unstrState) stringValue(intern bool) (any, bool) {
	raw, plain, ok := s.str()
	if !ok {
		return nil, false
	}
	if !plain {
		if raw, ok = s.unescape(raw); !ok {
			return nil, false
		}
	}
	if len(raw) == 0 {
		return "", true
	}
	if !intern {
		return string(raw), true
	}
	return s.d.boxed(s.d.table.strFrom(raw)), true
}

// boxed returns v in an interface, the same interface for the same
// interned string while it stays in the box cache.
func (d *UnstructuredDecoder) boxed(v string) any {
	if len(v) > unstrBoxMaxLen {
		return v
	}
	p := unsafe.StringData(v)
	h := uintptr(unsafe.Pointer(p))
	e := &d.boxes[(h>>4^h>>15)&(unstrBoxSlots-1)]
	if e.p == p && e.n == len(v) {
		return e.box
	}
	box := any(v)
	*e = unstrBox{p: p, n: len(v), box: box}
	return box
}

// str reads a string and returns the bytes between its quotes; plain is
// whether they are valid UTF-8 without escapes, to be taken as they are.
// It reports !ok for a string with a control character or without its
// closing quote.
func (s *unstrState) str() (raw []byte, plain, ok bool) {
	start := s.pos + 1
	plain = true
	for i := start; i < len(s.buf); i++ {
		switch c := s.buf[i]; {
		case c == '"':
			s.pos = i + 1
			raw = s.buf[start:i]
			if !plain || !utf8.Valid(raw) {
				return s.buf[start-1 : i+1], false, true
			}
			return raw, true, true
		case c == '\\':
			plain = false
			i++
		case c < 0x20:
			return nil, false, false
		}
	}
	return nil, false, false
}

// unescape returns the content of quoted, a JSON string with escapes or
// bytes that are not valid UTF-8, quotes included, as encoding/json decodes
// it (appendUnquoted), in a buffer of s's that the next call reuses.
func (s *unstrState) unescape(quoted []byte) ([]byte, bool) {
	out, ok := appendUnquoted(s.esc[:0], quoted)
	s.esc = out
	return out, ok
}

// number reads a number as sigs.k8s.io/json's PreserveInts does: an int64
// if it has no '.' and fits, else a float64; !ok for one that is not valid
// JSON or out of float64's range (an error for client-go).
func (s *unstrState) number() (any, bool) {
	start := s.pos
	b := s.buf
	i := start
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return nil, false
	}
	dot := false
	if i < len(b) && b[i] == '.' {
		dot = true
		i++
		if !unstrDigits(b, &i) {
			return nil, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !unstrDigits(b, &i) {
			return nil, false
		}
	}
	s.pos = i
	text := unsafe.String(&b[start], i-start)
	if !dot {
		if n, err := strconv.ParseInt(text, 10, 64); err == nil {
			return n, true
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return nil, false
	}
	return f, true
}

// unstrDigits moves *i past one or more digits, and reports false if there are
// none.
func unstrDigits(b []byte, i *int) bool {
	start := *i
	for *i < len(b) && b[*i] >= '0' && b[*i] <= '9' {
		*i++
	}
	return *i > start
}

// literal moves past word (true, false or null) if it comes next.
func (s *unstrState) literal(word string) bool {
	if len(s.buf)-s.pos < len(word) || string(s.buf[s.pos:s.pos+len(word)]) != word {
		return false
	}
	s.pos += len(word)
	return true
}
