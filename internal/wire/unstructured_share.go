package wire

import (
	"bytes"
	"hash/maphash"
	"unsafe"
	"weak"
)

// Sharing sub-trees of unstructured objects: the replicas of a template
// (custom resources stamped out by a controller, their pod templates,
// conditions, managed fields' fieldsV1 trees) carry objects and arrays
// whose bytes are equal. As the protobuf decoder's sharing (share_decode.go
// in the informer package), a sub-tree is keyed by its bytes as received:
// JSON values are decoded from their own bytes alone, so equal bytes give
// equal values, and a sub-tree whose bytes equal those a canonical one was
// decoded from is not decoded at all. A sub-tree becomes canonical at its
// second sighting (InternTable.seenBefore), and is held weakly: it lives as long as
// an object uses it. Only sub-trees below an object's top level are shared:
// the object's own map is written to (a list fills in its items' kind) and
// is unique to it anyway.
//
// Finding a sub-tree's bytes before decoding it needs where it ends: a
// pass over an object before decoding it (unstrBracketEnds) records where
// each of its objects and arrays closes.

// unstrShareMaxDepth is the deepest nesting within one object the sharing
// pass follows; an object nested deeper is decoded without sharing. It also
// keeps a shared sub-tree from taking a document past encoding/json's
// nesting limit, which a canonical decoded at a shallower place would not
// have been checked against.
const unstrShareMaxDepth = 256

// unstrBracketEnd is where an object or array closes (the offset of its
// closing bracket), and the index of the first one opening after it.
type unstrBracketEnd struct {
	end, next int
}

// unstrBracketEnds appends to ends where each object or array of the value
// opening at buf[start] closes, in the order they open, and reports whether
// it found the value's end within unstrShareMaxDepth levels. It does not
// check the value's syntax (the decoder does): for bytes that are not valid
// JSON what it finds may be wrong, which costs only missed sharing, since a
// sub-tree is shared only if its bytes equal those of one decoded before.
func unstrBracketEnds(buf []byte, start int, ends []unstrBracketEnd) ([]unstrBracketEnd, bool) {
	var stack [unstrShareMaxDepth]int
	depth := 0
	for i := start; i < len(buf); i++ {
		switch buf[i] {
		case '"':
			end, ok := unstrStringEnd(buf, i+1)
			if !ok {
				return ends, false
			}
			i = end
		case '{', '[':
			if depth == len(stack) {
				return ends, false
			}
			stack[depth] = len(ends)
			depth++
			ends = append(ends, unstrBracketEnd{})
		case '}', ']':
			if depth == 0 {
				return ends, false
			}
			depth--
			ends[stack[depth]] = unstrBracketEnd{end: i, next: len(ends)}
			if depth == 0 {
				return ends, true
			}
		}
	}
	return ends, false
}

// unstrStringEnd returns the offset of the quote closing the string whose
// content starts at buf[i].
func unstrStringEnd(buf []byte, i int) (int, bool) {
	for {
		q := bytes.IndexByte(buf[i:], '"')
		if q < 0 {
			return 0, false
		}
		q += i
		backslashes := 0
		for j := q - 1; j >= i && buf[j] == '\\'; j-- {
			backslashes++
		}
		if backslashes%2 == 0 {
			return q, true
		}
		i = q + 1
	}
}

// sharedTree returns the canonical sub-tree whose bytes are those of the
// object or array at s.pos, moving past them, or nil and their hash (and
// whether they were hashed: empty ones are not).
func (s *unstrState) sharedTree() (any, uint64, bool) {
	if s.k >= len(s.ends) {
		return nil, 0, false
	}
	e := s.ends[s.k]
	if e.end <= s.pos+1 || e.end >= len(s.buf) {
		return nil, 0, false
	}
	raw := s.buf[s.pos : e.end+1]
	h := maphash.Bytes(s.d.table.seed, raw)
	if v := s.d.table.trees.live(h, raw); v != nil {
		s.pos, s.k = e.end+1, e.next
		return v, h, true
	}
	return nil, h, true
}

// keepTree makes v, decoded from the object or array that opened at start
// as the k-th of its root, canonical for its bytes if they were seen
// before.
func (s *unstrState) keepTree(start, k int, h uint64, v any) {
	if k >= len(s.ends) || s.ends[k].end+1 != s.pos || !s.d.table.seenBefore(h) {
		return // the pass found another end: invalid bytes
	}
	s.d.table.trees.put(h, s.buf[start:s.pos], v)
}

// unstrTreeSet holds the canonical sub-trees by the hash of their bytes.
type unstrTreeSet struct {
	slots map[uint64]unstrTreeSlot
	// inserts counts insertions since the last sweep, due is the number of
	// slots the last sweep left, peak the most slots since the map was last
	// rebuilt (as the informer package's shareSet).
	inserts, due, peak int
}

// unstrTreeSlot is one canonical sub-tree: a weak pointer to the runtime
// object of a map, or to the first element of a slice and its length, and
// the bytes it was decoded from.
type unstrTreeSlot struct {
	m   weak.Pointer[mapObject]
	l   weak.Pointer[any]
	n   int
	raw []byte
}

// live returns the canonical sub-tree with hash h decoded from raw, or nil.
func (t *unstrTreeSet) live(h uint64, raw []byte) any {
	slot, ok := t.slots[h]
	if !ok || !bytes.Equal(slot.raw, raw) {
		return nil
	}
	if slot.n > 0 {
		if p := slot.l.Value(); p != nil {
			return unsafe.Slice(p, slot.n)
		}
		return nil
	}
	if p := slot.m.Value(); p != nil {
		return mapAt[map[string]any](p)
	}
	return nil
}

// put makes v (a non-empty map[string]any or []any, of capacity its
// length) canonical for raw, sweeping the dead slots once as many
// insertions happened since the last sweep as it left.
func (t *unstrTreeSet) put(h uint64, raw []byte, v any) {
	slot := unstrTreeSlot{raw: bytes.Clone(raw)}
	switch v := v.(type) {
	case map[string]any:
		slot.m = weak.Make(mapPointer(v))
	case []any:
		slot.l, slot.n = weak.Make(&v[0]), len(v)
	default:
		return
	}
	if t.slots == nil {
		t.slots = map[uint64]unstrTreeSlot{}
	}
	t.slots[h] = slot
	t.inserts++
	t.peak = max(t.peak, len(t.slots))
	if t.inserts >= max(t.due, minSweepInserts) {
		t.sweep()
	}
}

// sweep drops the slots whose sub-tree no object uses any more, and
// rebuilds the map once it holds less than a quarter of its peak.
func (t *unstrTreeSet) sweep() {
	t.inserts = 0
	for h, slot := range t.slots {
		if (slot.n > 0 && slot.l.Value() == nil) || (slot.n == 0 && slot.m.Value() == nil) {
			delete(t.slots, h)
		}
	}
	t.due = len(t.slots)
	if len(t.slots) < t.peak/4 {
		out := make(map[uint64]unstrTreeSlot, len(t.slots))
		for k, v := range t.slots {
			out[k] = v
		}
		t.slots = out
		t.peak = len(t.slots)
	}
}
