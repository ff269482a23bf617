package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"reflect"
	"slices"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/resource"
)

// String references: the form in which the informer's snapshot files hold
// protobuf records (snapshot.go in the root). A record of a type with an
// interning decoder is the object's protobuf encoding with the content of
// every non-empty string and bytes field the decoder takes from the
// intern table (strFrom, bytesFrom) replaced by either
//
//   - the 1-based index, as a uvarint, of the string in the snapshot's
//     string table, whose entries the records themselves bring, each in the
//     first record that refers to it; or
//   - a 0 byte followed by the string, for a string not (yet) seen twice.
//
// Why: restoring a snapshot is decoding it, and interning was 40% of
// decoding production-like pods from protobuf (BenchmarkSnapshotRestore's
// CPU profile, docs/restart.md): each string was hashed and looked up
// once per occurrence. A reference costs an index; an entry of the table
// is interned once per snapshot. Repeated strings are also written once,
// which makes the file smaller.
//
// Which fields are strings is not written down here, nor derived from
// the Go types: the encoder decodes each record with the very decoder
// that will read it back, noting where the decoder takes strings and
// bytes from (refMode's recording), and replaces exactly those; the rest
// of the record (numbers, messages decoded by their own Unmarshal such as
// resource.Quantity, types without an interning decoder) is copied as
// it is. A record in which the noted places are not fields of a message
// walked from its start is written as it is, marked plain.

// Record kinds, the first byte of a record of references.
const (
	// refPlain: the rest is the object's protobuf encoding, as received.
	refPlain = 0
	// refCoded: the rest is the number of new table entries, each a
	// uvarint length and the string's bytes, then the object's encoding
	// with its strings replaced.
	refCoded = 1
)

// refInline starts a string written in place in a record of references.
const refInline = 0

// refMaxStrings bounds a snapshot's string table, so that the encoder's
// index stays bounded whatever the objects; strings past it are written
// in place.
const refMaxStrings = 1 << 22

// refSeenSlots is the size of the encoder's filter of strings seen once
// (a string becomes a table entry when seen a second time): hashes in
// sets of seenWays, 2 MB, so that it never grows.
const refSeenSlots = 1 << 18

// errBadReference reports a record whose references do not resolve.
var errBadReference = errors.New("a string reference outside the snapshot's table")

// refMode is what the decoder does with the bytes it would take a string
// or byte slice from while it is set on its table (InternTable.refs).
type refMode struct {
	// recording, set by the encoder: note each place (offset from base,
	// length) and return an empty value.
	recording bool
	base      uintptr
	spans     []refSpan
	// strs is the string table (decoding).
	strs []string
	// quantities are the quantities decoded so far, by their encoding
	// (decoding): see quantity.
	quantities map[string]resource.Quantity
	// err is the first reference that did not resolve.
	err error
	// raw is the set of raw sub-objects (share_decode.go) shared among
	// the records of one snapshot: their bytes hold references, which mean
	// something else in another snapshot or on the wire, so they are never
	// looked up in the table's own set (lockWith swaps them).
	raw podShares
}

// refSpan is the place of a string or byte slice in a record.
type refSpan struct {
	off, n int
}

// str returns the string b stands for: a table entry, or a copy of a
// string in place. Neither is looked up in the intern table, whose work
// (a hash, a lookup, a weak pointer per shared string) the table of
// references exists to save: restored objects share each repeated string
// among themselves, and objects decoded later share theirs with each
// other, so a string both use has at most two copies.
func (m *refMode) str(b []byte) string {
	if m.recording {
		m.note(b)
		return ""
	}
	if b[0] == refInline {
		return string(b[1:])
	}
	r, n := binary.Uvarint(b)
	if n != len(b) || r == 0 || r > uint64(len(m.strs)) {
		if m.err == nil {
			m.err = fmt.Errorf("%w: % x (table of %d)", errBadReference, b, len(m.strs))
		}
		return ""
	}
	return m.strs[r-1]
}

// bytes returns the byte slice b stands for: shared if t shares
// sub-objects, a copy of its own otherwise (see InternTable.bytesFrom).
func (m *refMode) bytes(t *InternTable, b []byte) []byte {
	if m.recording {
		m.note(b)
		return []byte{}
	}
	if b[0] == refInline {
		return append([]byte{}, b[1:]...)
	}
	s := m.str(b)
	if t.shareSubObjects {
		return unsafe.Slice(unsafe.StringData(s), len(s))
	}
	return []byte(s)
}

// quantity decodes b into q as q.Unmarshal does, reusing what an equal
// encoding decoded to before in this snapshot: the record's quantities
// are copied as they are (their string is in place, not a reference), so
// the same few values ("100m", "128Mi") are parsed once per snapshot
// instead of once per occurrence, which was 8% of a restore's CPU
// (BenchmarkSnapshotRestore's profile). Only a quantity held as an int64
// and a scale is reused: one held as an inf.Dec points to it, and a copy
// would share it.
func (m *refMode) quantity(q *resource.Quantity, b []byte) error {
	if c, ok := m.quantities[string(b)]; ok {
		*q = c
		return nil
	}
	if err := q.Unmarshal(b); err != nil {
		return err
	}
	if len(m.quantities) < refMaxQuantities && !holdsDec(q) {
		if m.quantities == nil {
			m.quantities = map[string]resource.Quantity{}
		}
		m.quantities[string(b)] = *q
	}
	return nil
}

// refMaxQuantities bounds refMode.quantities.
const refMaxQuantities = 4096

// holdsDec reports whether q holds its value as an inf.Dec (a pointer),
// which its methods offer no way to tell without changing q.
func holdsDec(q *resource.Quantity) bool {
	return !reflect.ValueOf(q).Elem().FieldByName("d").Field(0).IsNil()
}

// note records b's place.
func (m *refMode) note(b []byte) {
	off := uintptr(unsafe.Pointer(unsafe.SliceData(b))) - m.base
	m.spans = append(m.spans, refSpan{off: int(off), n: len(b)})
}

// RefEncoder writes records of references (see refMode) for one
// snapshot: its table grows with the records it writes, which must be
// read back in the same order by one RefDecoder. Not safe for concurrent
// use.
type RefEncoder struct {
	// t is the table the records are decoded through to find their
	// strings; mode is its recording.
	t    *InternTable
	mode refMode
	// index maps each entry of the string table to its index.
	index map[string]uint32
	// added are the entries the record being written adds.
	added []string
	seed  maphash.Seed
	seen  []uint64
	// body is the record being written; levels are the messages being
	// rewritten within it, one buffer per depth.
	body   []byte
	levels [][]byte
}

// NewRefEncoder returns an encoder with an empty string table.
func NewRefEncoder() *RefEncoder {
	return &RefEncoder{t: newBareInternTable(), index: map[string]uint32{}, seed: maphash.MakeSeed()}
}

// Append appends to dst the record of references for data, the protobuf
// encoding of an object of scratch's type; scratch is overwritten. The
// record is plain (data as it is) if the type has no interning decoder
// or its strings cannot be replaced; an error only if data does not
// decode.
func (e *RefEncoder) Append(dst, data []byte, scratch ProtobufMessage) ([]byte, error) {
	if len(data) == 0 {
		return append(dst, refPlain), nil
	}
	e.mode = refMode{recording: true, base: uintptr(unsafe.Pointer(unsafe.SliceData(data))), spans: e.mode.spans[:0]}
	handled, err := unmarshalInterned(e.t, &e.mode, data, scratch)
	if err != nil {
		return nil, err
	}
	if !handled || len(e.mode.spans) == 0 {
		return append(append(dst, refPlain), data...), nil
	}
	spans := e.mode.spans
	if !slices.IsSortedFunc(spans, func(a, b refSpan) int { return a.off - b.off }) {
		slices.SortFunc(spans, func(a, b refSpan) int { return a.off - b.off })
	}
	e.added = e.added[:0]
	body, k, ok := e.rewrite(e.body[:0], data, 0, len(data), spans, 0, 0)
	e.body = body
	if !ok || k != len(spans) {
		for _, s := range e.added {
			delete(e.index, s)
		}
		return append(append(dst, refPlain), data...), nil
	}
	dst = append(dst, refCoded)
	dst = binary.AppendUvarint(dst, uint64(len(e.added)))
	for _, s := range e.added {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	return append(dst, body...), nil
}

// rewrite appends to out the fields of data[s:end], a message, with the
// content of each field that spans[k:] names replaced (ref), and returns
// out and the index of the first span past end; ok is false if a span is
// not exactly a field's content or the message is not one.
func (e *RefEncoder) rewrite(out, data []byte, s, end int, spans []refSpan, k, depth int) (_ []byte, _ int, ok bool) {
	for i := s; i < end; {
		start := i
		tag, n := binary.Uvarint(data[i:end])
		if n <= 0 {
			return out, k, false
		}
		i += n
		switch tag & 7 {
		case 0:
			if _, n := binary.Uvarint(data[i:end]); n <= 0 {
				return out, k, false
			} else {
				i += n
			}
		case 1:
			i += 8
		case 5:
			i += 4
		case 2:
			l, n := binary.Uvarint(data[i:end])
			if n <= 0 || l > uint64(end-i-n) {
				return out, k, false
			}
			cs, ce := i+n, i+n+int(l)
			if k == len(spans) || spans[k].off >= ce {
				i = ce
				break // no string inside: copied below
			}
			if spans[k].off < cs {
				return out, k, false
			}
			out = append(out, data[start:i]...)
			if spans[k].off == cs && spans[k].n == ce-cs {
				out = e.ref(out, data[cs:ce])
				k++
			} else {
				for len(e.levels) <= depth+1 {
					e.levels = append(e.levels, nil)
				}
				var sub []byte
				if sub, k, ok = e.rewrite(e.levels[depth+1][:0], data, cs, ce, spans, k, depth+1); !ok {
					return out, k, false
				}
				e.levels[depth+1] = sub
				out = binary.AppendUvarint(out, uint64(len(sub)))
				out = append(out, sub...)
			}
			i = ce
			continue
		default:
			return out, k, false
		}
		if i > end {
			return out, k, false
		}
		out = append(out, data[start:i]...)
	}
	return out, k, true
}

// ref appends the length-prefixed content standing for str: a reference
// to its table entry if it has one or was seen before (then made one),
// else str in place.
func (e *RefEncoder) ref(out, str []byte) []byte {
	idx, ok := e.index[string(str)]
	if !ok && len(e.index) < refMaxStrings && e.seenBefore(maphash.Bytes(e.seed, str)) {
		s := string(str)
		idx = uint32(len(e.index))
		e.index[s] = idx
		e.added = append(e.added, s)
		ok = true
	}
	if !ok {
		out = binary.AppendUvarint(out, uint64(1+len(str)))
		out = append(out, refInline)
		return append(out, str...)
	}
	var buf [binary.MaxVarintLen32]byte
	r := binary.AppendUvarint(buf[:0], uint64(idx)+1)
	out = append(out, byte(len(r)))
	return append(out, r...)
}

// seenBefore reports whether a string with hash h was seen before, and
// records it if not (as InternTable.seenBefore, in a larger filter).
func (e *RefEncoder) seenBefore(h uint64) bool {
	if e.seen == nil {
		e.seen = make([]uint64, refSeenSlots)
	}
	set := e.seen[h%(refSeenSlots/seenWays)*seenWays:][:seenWays]
	if slices.Contains(set, h) {
		return true
	}
	copy(set[1:], set)
	set[0] = h
	return false
}

// RefDecoder reads the records a RefEncoder wrote, in their order. Not
// safe for concurrent use.
type RefDecoder struct {
	mode refMode
}

// NewRefDecoder returns a decoder with an empty string table.
func NewRefDecoder() *RefDecoder {
	return &RefDecoder{}
}

// Unmarshal decodes the record rec into msg through t, as Unmarshal does
// an object's protobuf encoding, but with each repeated string one copy
// among this decoder's records (see refMode.str) and sub-objects shared if
// t shares them, among this decoder's records only. t may be nil for
// plain records only.
func (d *RefDecoder) Unmarshal(t *InternTable, rec []byte, msg ProtobufMessage) error {
	if len(rec) == 0 {
		return errors.New("an empty record")
	}
	switch rec[0] {
	case refPlain:
		return Unmarshal(t, rec[1:], msg)
	case refCoded:
	default:
		return fmt.Errorf("a record of unknown kind %d", rec[0])
	}
	if t == nil {
		return errors.New("a record of references needs an intern table")
	}
	body, err := d.addStrings(rec[1:])
	if err != nil {
		return err
	}
	d.mode.err = nil
	handled, err := unmarshalInterned(t, &d.mode, body, msg)
	switch {
	case err != nil:
		return err
	case !handled:
		return fmt.Errorf("a record of references of %T, which has no interning decoder", msg)
	}
	return d.mode.err
}

// addStrings adds the table entries at the start of rec to the table and
// returns the rest of rec.
func (d *RefDecoder) addStrings(rec []byte) ([]byte, error) {
	count, n := binary.Uvarint(rec)
	if n <= 0 || count > uint64(len(rec)) {
		return nil, errors.New("a bad count of table entries")
	}
	rec = rec[n:]
	for range count {
		l, n := binary.Uvarint(rec)
		if n <= 0 || l == 0 || l > uint64(len(rec)-n) {
			return nil, errors.New("a bad table entry")
		}
		d.mode.strs = append(d.mode.strs, string(rec[n:n+int(l)]))
		rec = rec[n+int(l):]
	}
	return rec, nil
}
