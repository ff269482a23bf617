package wire

import (
	"bytes"
	"hash/maphash"
	"weak"
)

// Sharing sub-objects at decode time: the generated decoder
// (decode_gen.go) shares the sub-objects of share_core.go's list
// (probes, security contexts, volume sources, env lists, labels, resource
// lists…) as the deduplication pass does (share.go), but keyed by their
// bytes as received instead of a re-encoding: a sub-object whose bytes
// equal those a canonical one was decoded from is not decoded at all.
// Decoding is a function of the bytes (a message's fields are read within
// its bytes; a map entry may be read past its end, so a map is kept as
// canonical only if none of its entries is, see pbEntriesWithin), so equal
// bytes give equal values, nil and empty lists included.
//
// A sub-object is looked up only where the decoder would otherwise create
// it (the field is still nil) and only if its bytes hold every occurrence
// of the field in its message (pbCountFields, pbRun): a field seen again
// merges into the value, so the decoder first copies a value it did not
// create in that call (it may be canonical) before writing to it. An object
// decoded this way must not go through the deduplication pass as well
// (InternObject): that pass writes the strings it interns into the
// sub-objects it does not share itself, which may be shared here.

// rawRun is the place in the message being decoded of a sub-object to
// keep as canonical once decoded, and its hash.
type rawRun struct {
	s, e int
	h    uint64
	ok   bool
}

// sharedRaw returns the canonical value decoded from raw, if any, the
// length of a canonical list, and raw's hash.
func sharedRaw[T any](t *InternTable, set *shareSet[T], raw []byte) (*T, int, uint64) {
	h := maphash.Bytes(t.seed, raw)
	if slot, c := set.live(h); c != nil && bytes.Equal(slot.enc, raw) {
		return c, slot.n, h
	}
	return nil, 0, h
}

// keepRaw makes v, decoded from the bytes run in data (n elements if a
// list), the canonical value for them if they were seen before and, if
// within is not nil, within says decoding them depends on them alone.
func keepRaw[T any](t *InternTable, set *shareSet[T], data []byte, run rawRun, v *T, n int, within func([]byte) bool) {
	if t.seenBefore(run.h) && (within == nil || within(data[run.s:run.e])) {
		set.put(run.h, shareSlot[T]{p: weak.Make(v), n: n, enc: bytes.Clone(data[run.s:run.e])})
	}
}

// pbRun returns the end of the run of fields starting at data[i:] that
// are length-delimited with the tag data[i:next] and follow each other,
// and how many there are (at least the one at i, whose value must end
// within data).
func pbRun(data []byte, i, next int) (int, int) {
	tag := data[i:next]
	n, end := 0, i
	for bytes.HasPrefix(data[end:], tag) {
		_, e, err := pbLen(data, end+len(tag))
		if err != nil {
			break
		}
		n, end = n+1, e
	}
	return n, end
}

// pbEntriesWithin reports whether every field of the map entries in raw
// (a run of them, see pbRun) ends within its entry: only then does
// decoding them depend on raw alone.
func pbEntriesWithin(raw []byte) bool {
	for i := 0; i < len(raw); {
		_, next, err := pbVarint(raw, i)
		if err != nil {
			return false
		}
		s, e, err := pbLen(raw, next)
		if err != nil {
			return false
		}
		entry := raw[s:e]
		for j := 0; j < len(entry); {
			wire, next, err := pbVarint(entry, j)
			if err != nil {
				return false
			}
			switch int32(wire >> 3) {
			case 1, 2: // key, value: read as length-delimited whatever the wire type
				_, j, err = pbLen(entry, next)
			default:
				j, err = pbSkip(entry, j, len(entry))
			}
			if err != nil {
				return false
			}
		}
		i = e
	}
	return true
}
