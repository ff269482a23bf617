package wire

import (
	"bytes"
	"hash/maphash"
	"unsafe"
	"weak"
)

// Sharing sub-objects at decode time, for the typed JSON decoder: with a
// table that shares sub-objects (NewSubObjectSharingTable), a pointer,
// slice or map whose JSON equals, byte for byte, the JSON a canonical one
// of its type was decoded from is not decoded: it is the canonical one,
// as share_decode.go does for protobuf. A JSON value decoded into a nil
// pointer, slice or map gives a value that depends on its bytes alone
// (strings come from the table, which changes no value), so equal bytes
// give equal values. A value becomes canonical from its second sighting
// on, and the table holds it through a weak pointer, one set per node.
//
// Only a nil target is shared into, and a decoded object must never write
// into a canonical value: encoding/json decodes a key seen twice into what
// the first one decoded (merging), so with sharing a struct that sees a
// key twice fails the decoding (errSharedTwice), and the caller decodes
// the object again without the table (apimachinery's serializer).

// minTypedShareLen is the fewest bytes of JSON worth a lookup: smaller
// values cost less to decode than to hash and compare, and hold little.
const minTypedShareLen = 32

// errSharedTwice is the error of a key seen twice in an object decoded
// with sharing.
var errSharedTwice = errorString("a key seen twice in an object decoded with sub-objects shared")

type errorString string

func (e errorString) Error() string { return string(e) }

// typedSet returns the set of node n's canonical values.
func (t *InternTable) typedSet(n *tjNode) *shareSet[byte] {
	set := t.typed[n]
	if set == nil {
		if t.typed == nil {
			t.typed = map[*tjNode]*shareSet[byte]{}
		}
		set = &shareSet[byte]{}
		t.typed[n] = set
	}
	return set
}

// isNilAt tells whether the pointer, slice or map at p is nil.
func isNilAt(n *tjNode, p unsafe.Pointer) bool {
	if n.kind == tjSlice {
		return (*sliceHeader)(p).data == nil
	}
	return *(*unsafe.Pointer)(p) == nil
}

// sharedValue decodes the value at the current position into the nil
// pointer, slice or map at p: the canonical value decoded from the same
// bytes if the table has one, else a value decoded here, which becomes
// canonical if its bytes were seen before.
func (s *tjState) sharedValue(n *tjNode, p unsafe.Pointer) error {
	start := s.i
	if err := s.skip(); err != nil {
		return err
	}
	raw := s.data[start:s.i]
	if len(raw) < minTypedShareLen {
		s.i = start
		return s.decodeValue(n, p)
	}
	t := s.strs
	set := t.typedSet(n)
	h := maphash.Bytes(t.seed, raw)
	if slot, c := set.live(h); c != nil && bytes.Equal(slot.enc, raw) {
		switch n.kind {
		case tjSlice:
			*(*sliceHeader)(p) = sliceHeader{data: unsafe.Pointer(c), len: slot.n, cap: slot.n}
		default:
			*(*unsafe.Pointer)(p) = unsafe.Pointer(c)
		}
		return nil
	}
	end := s.i
	s.i = start
	if err := s.decodeValue(n, p); err != nil {
		return err
	}
	if s.i != end || !t.seenBefore(h) {
		return nil
	}
	var canonical unsafe.Pointer
	length := 0
	switch n.kind {
	case tjSlice:
		header := (*sliceHeader)(p)
		if header.len == 0 {
			return nil // an empty slice's data is no allocation of its own
		}
		canonical, length = header.data, header.len
	default:
		canonical = *(*unsafe.Pointer)(p)
	}
	if canonical != nil {
		set.put(h, shareSlot[byte]{p: weak.Make((*byte)(canonical)), n: length, enc: bytes.Clone(raw)})
	}
	return nil
}
