package wire

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
	"math/bits"
	"slices"
	"unsafe"
	"weak"
)

// Sharing sub-objects: the replicas of one template (a Deployment's pods, a
// DaemonSet's) decode into equal maps, slices and pointed-to structs (labels,
// resource lists, env lists, probes, security contexts…) that interning
// strings alone leaves as one copy per object. The pass that interns an
// object's strings also replaces each such sub-object that equals one
// already cached by that one, so equal sub-objects are kept once. Unlike
// strings, these can be written to: docs/semantics.md ("Deduplication") says
// so, and the mutation detector reports every object sharing a sub-object
// that was written.
//
// A sub-object's content key is its protobuf encoding (the generated
// Marshal, complete for every field, into a buffer reused between objects)
// or, for maps, its entries; the canonical's encoding is kept to compare
// candidates byte for byte. The encoding does not tell a nil list or map
// from an empty one, so sub-objects holding an empty, non-nil one are not
// shared (the guards below; a decoded object never holds one, a transform
// may). As for strings, a sub-object is shared from its second sighting on,
// and the table holds weak pointers swept as values come in (shareSet.put)
// and after garbage collections (sweepAfterGC).

// shareSet holds the canonical values of one kind: per content hash, a
// weak pointer to the value (the first element of a slice, the runtime
// object of a map) and what compares candidates with it.
type shareSet[T any] struct {
	slots map[uint64]shareSlot[T]
	// inserts counts insertions since the last sweep; due is the number of
	// slots the last sweep left (all live then), the insertions that make
	// the next one due (at least minSweepInserts); peak is the most slots
	// the map held since it was last rebuilt.
	inserts, due, peak int
}

// shareSlot is one canonical value.
type shareSlot[T any] struct {
	p weak.Pointer[T]
	// n is the length of a string or slice.
	n int
	// enc is the encoding of an encoded value (nil for maps and strings,
	// compared with the canonical itself).
	enc []byte
}

// live returns the canonical value with hash h, or nil.
func (s *shareSet[T]) live(h uint64) (shareSlot[T], *T) {
	slot, ok := s.slots[h]
	if !ok {
		return slot, nil
	}
	return slot, slot.p.Value()
}

// put records a canonical value, sweeping once as many insertions happened
// since the last sweep as that sweep left slots (at least minSweepInserts).
// A sweep costs O(slots), at most twice that many, so it is amortized O(1)
// per insertion; and the set holds at most what was live at the last sweep
// and as many insertions since, about twice what objects use (a value dead
// but not yet freed by the garbage collector looks live: what one
// collection cycle sees inserted counts too). (Counting the
// slots now instead, which include the insertions since, would never let
// the next sweep come once a sweep left a live slot.) It reports whether it
// swept.
//
// A set is also swept by its table after garbage collections
// (sweepAfterGC): when churn stops, the slots whose values died since the
// last sweep (their weak pointers and encodings) go at the next garbage
// collections, and the map is rebuilt if that leaves it under a quarter of
// its peak.
func (s *shareSet[T]) put(h uint64, slot shareSlot[T]) bool {
	if s.slots == nil {
		s.slots = map[uint64]shareSlot[T]{}
	}
	s.slots[h] = slot
	s.inserts++
	s.peak = max(s.peak, len(s.slots))
	if s.inserts >= max(s.due, minSweepInserts) {
		s.sweep()
		return true
	}
	return false
}

// sweep drops the slots whose value no object uses any more, and rebuilds
// the map once it holds less than a quarter of its peak, since a Go map
// never gives back the memory of deleted entries.
func (s *shareSet[T]) sweep() {
	s.inserts = 0
	for h, slot := range s.slots {
		if slot.p.Value() == nil {
			delete(s.slots, h)
		}
	}
	s.due = len(s.slots)
	if len(s.slots) < s.peak/4 {
		out := make(map[uint64]shareSlot[T], len(s.slots)) // maps.Clone would keep the size
		for k, v := range s.slots {
			out[k] = v
		}
		s.slots = out
		s.peak = len(s.slots)
	}
}

// message is a pointer to a type with generated protobuf marshalling.
type message[T any] interface {
	*T
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}

// encodeMessage appends v's protobuf encoding to b, preceded by its length
// so that the encodings of a list's elements do not run into each other.
// It reports false if v cannot be encoded.
func encodeMessage[T any, P message[T]](b []byte, v *T) ([]byte, bool) {
	n := P(v).Size()
	b = binary.AppendUvarint(b, uint64(n))
	start := len(b)
	b = slices.Grow(b, n)[:start+n]
	_, err := P(v).MarshalToSizedBuffer(b[start:])
	return b, err == nil
}

// encodeString appends s to b, preceded by its length.
func encodeString(b []byte, s *string) ([]byte, bool) {
	b = binary.AppendUvarint(b, uint64(len(*s)))
	return append(b, *s...), true
}

// sharePtr makes *field point to the canonical value equal to it, if any,
// and reports whether it does (then the value is shared and its strings
// must not be interned: it may be cached already). A value that cannot be
// shared (nil, or not ok) is left alone; the field is written only if that
// changes it. The pass never writes into a canonical value found in the
// table (cached objects hold it and handlers read it), only into the object
// passed, which the informer owns until it caches it.
func sharePtr[T any, P message[T]](t *InternTable, set *shareSet[T], field **T, ok func(*T) bool) bool {
	v := *field
	if v == nil || (ok != nil && !ok(v)) {
		return false
	}
	enc, good := encodeMessage[T, P](t.buf[:0], v)
	t.buf = enc
	if !good {
		return false
	}
	h := maphash.Bytes(t.seed, enc)
	if slot, c := set.live(h); c != nil {
		if !bytes.Equal(slot.enc, enc) {
			return false // another value with the same hash
		}
		if c != v {
			*field = c
		}
		return true
	}
	if t.seenBefore(h) {
		set.put(h, shareSlot[T]{p: weak.Make(v), enc: bytes.Clone(enc)})
	}
	return false
}

// shareSlice is sharePtr for a slice, whose elements enc encodes. The
// shared slice's capacity is its length, so that appending to it copies.
func shareSlice[E any](t *InternTable, set *shareSet[E], field *[]E, enc func([]byte, *E) ([]byte, bool), ok func(*E) bool) bool {
	s := *field
	if len(s) == 0 {
		return false
	}
	b := t.buf[:0]
	for i := range s {
		good := ok == nil || ok(&s[i])
		if good {
			b, good = enc(b, &s[i])
		}
		if !good {
			t.buf = b
			return false
		}
	}
	t.buf = b
	h := maphash.Bytes(t.seed, b)
	if slot, c := set.live(h); c != nil {
		if slot.n != len(s) || !bytes.Equal(slot.enc, b) {
			return false
		}
		if c != unsafe.SliceData(s) || cap(s) != len(s) {
			*field = unsafe.Slice(c, slot.n)
		}
		return true
	}
	if t.seenBefore(h) {
		*field = s[:len(s):len(s)]
		set.put(h, shareSlot[E]{p: weak.Make(&s[0]), n: len(s), enc: bytes.Clone(b)})
	}
	return false
}

// mapObject is the runtime object a map value points to, for a weak
// pointer to it.
type mapObject struct{}

// mapPointer returns the pointer a map value is. A map value is a single
// pointer to its runtime object: a weak pointer to that object tells
// whether any cached object still holds the map.
func mapPointer[M ~map[K]V, K comparable, V any](m M) *mapObject {
	return *(**mapObject)(unsafe.Pointer(&m))
}

// mapAt returns the map value p is (the inverse of mapPointer).
func mapAt[M ~map[K]V, K comparable, V any](p *mapObject) M {
	return *(*M)(unsafe.Pointer(&p))
}

// shareMap is sharePtr for a map, whose entries hash hashes and which
// equal compares with the canonical (which it must only read). Empty maps
// are not shared: there would be nothing to save.
func shareMap[M ~map[K]V, K comparable, V any](t *InternTable, set *shareSet[mapObject], field *M, hash func(*InternTable, M) uint64, equal func(m, canonical M) bool) bool {
	m := *field
	if len(m) == 0 {
		return false
	}
	h := hash(t, m)
	if _, c := set.live(h); c != nil {
		cm := mapAt[M](c)
		if !equal(m, cm) {
			return false
		}
		if c != mapPointer(m) {
			*field = cm
		}
		return true
	}
	if t.seenBefore(h) {
		set.put(h, shareSlot[mapObject]{p: weak.Make(mapPointer(m))})
	}
	return false
}

// combine folds the hash of one entry into the hash of a map, the same
// whatever the order the entries come in.
func combine(sum, key, value uint64) uint64 {
	return sum + (key ^ bits.RotateLeft64(value, 29)*0x9e3779b97f4a7c15)
}

// hashStringMap hashes a map of strings.
func hashStringMap(t *InternTable, m map[string]string) uint64 {
	var sum uint64
	for k, v := range m {
		sum = combine(sum, maphash.String(t.seed, k), maphash.String(t.seed, v))
	}
	return sum
}

// equalStringMaps reports whether two maps of strings are equal.
func equalStringMaps(m, canonical map[string]string) bool {
	if len(m) != len(canonical) {
		return false
	}
	for k, v := range m {
		if cv, ok := canonical[k]; !ok || cv != v {
			return false
		}
	}
	return true
}

// emptyList reports whether s is an empty list that is not nil: a value
// holding one is not shared, since its encoding is that of a nil one.
func emptyList[S ~[]E, E any](s S) bool {
	return s != nil && len(s) == 0
}

// emptyMap is emptyList for a map.
func emptyMap[M ~map[K]V, K comparable, V any](m M) bool {
	return m != nil && len(m) == 0
}
