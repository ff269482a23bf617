package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"reflect"
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
// is copied once per snapshot. Repeated strings are also written once,
// which makes the file smaller.
//
// Which fields are strings follows from the Go types exactly as the
// generated decoder reads them: internal/pbdecode writes, beside each
// message's decoder, its refFields (decode_gen.go), and the encoder walks a
// record with them, replacing the content of the string and bytes fields
// and copying the rest (numbers, messages decoded by their own Unmarshal
// such as resource.Quantity). Objects of types without an interning
// decoder are written as they are, marked plain.

// refKind is what a length-delimited field is to the records of
// references.
type refKind uint8

const (
	// refOther: copied as it is.
	refOther refKind = iota
	// refString: a string or bytes the decoder takes from the intern
	// table: replaced by a reference or written in place.
	refString
	// refMessage: a message decoded field by field: walked with its
	// refFields.
	refMessage
)

// refFields says what the field numbered num of a message is, and for a
// message field, its own fields.
type refFields func(num int32) (refKind, refFields)

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
// (a string becomes a table entry when seen again in another record):
// hashes in sets of seenWays, 4 MB, so that it never grows.
const refSeenSlots = 1 << 18

// errBadReference reports a record whose references do not resolve.
var errBadReference = errors.New("a string reference outside the snapshot's table")

// refMode is what the decoder does with the bytes it would take a string
// or byte slice from while it is set on its table (InternTable.refs).
type refMode struct {
	// strs is the string table.
	strs []string
	// quantities are the quantities decoded so far, by their encoding:
	// see quantity.
	quantities map[string]resource.Quantity
	// err is the first reference that did not resolve.
	err error
	// raw is the set of raw sub-objects (share_decode.go) shared among
	// the records of one snapshot: their bytes hold references, which mean
	// something else in another snapshot or on the wire, so they are never
	// looked up in the table's own set (lockWith swaps them).
	raw podShares
}

// str returns the string b stands for: a table entry, or a copy of a
// string in place. The table's entries went through the intern table once
// each, in addStrings, rather than once per occurrence: that per-occurrence
// work (a hash, a lookup, a weak pointer per shared string) is what the
// table of references saves. So a string the snapshot repeats is the very
// copy that objects decoded later from the wire use, and so do the
// snapshots of the other informers sharing the intern table (a fleet's
// clusters). A string in place, seen once in the snapshot, is its own copy.
func (m *refMode) str(b []byte) string {
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

// RefEncoder writes records of references (see refMode) for one
// snapshot: its table grows with the records it writes, which must be
// read back in the same order by one RefDecoder. Not safe for concurrent
// use.
type RefEncoder struct {
	// strs is the string table; index maps the hash of each entry to its
	// index (a string whose hash is another entry's is written in place).
	strs  []string
	index map[uint64]uint32
	// added is the number of entries the record being written adds.
	added int
	seed  maphash.Seed
	// seen is the filter of strings seen once, in sets of seenWays; rec
	// counts the records written, the one being written included.
	seen []refSeen
	rec  uint32
	// body is the record being written; levels are the messages being
	// rewritten within it, one buffer per depth.
	body   []byte
	levels [][]byte
}

// NewRefEncoder returns an encoder with an empty string table.
func NewRefEncoder() *RefEncoder {
	return &RefEncoder{index: map[uint64]uint32{}, seed: maphash.MakeSeed()}
}

// refSeen is a string seen once: its hash, and the record it was in.
type refSeen struct {
	h   uint64
	rec uint32
}

// Append appends to dst the record of references for data, the protobuf
// encoding of an object of msg's type (msg's value is not looked at). The
// record is plain (data as it is) if the type has no interning decoder or
// data is not a message.
func (e *RefEncoder) Append(dst, data []byte, msg ProtobufMessage) []byte {
	fields := refFieldsOf(msg)
	if fields == nil {
		return append(append(dst, refPlain), data...)
	}
	e.rec++
	e.added = 0
	body, ok := e.rewrite(e.body[:0], data, fields, 0)
	e.body = body
	added := e.strs[len(e.strs)-e.added:]
	if !ok {
		for _, s := range added {
			delete(e.index, maphash.String(e.seed, s))
		}
		e.strs = e.strs[:len(e.strs)-e.added]
		return append(append(dst, refPlain), data...)
	}
	dst = append(dst, refCoded)
	dst = binary.AppendUvarint(dst, uint64(len(added)))
	for _, s := range added {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	return append(dst, body...)
}

// rewrite appends to out the fields of data, a message whose fields are
// fields, with the content of its strings replaced (ref) and its messages
// rewritten likewise; ok is false if data is not a message.
func (e *RefEncoder) rewrite(out, data []byte, fields refFields, depth int) (_ []byte, ok bool) {
	for i := 0; i < len(data); {
		start := i
		tag, n := binary.Uvarint(data[i:])
		if n <= 0 {
			return out, false
		}
		i += n
		switch tag & 7 {
		case 0:
			_, n := binary.Uvarint(data[i:])
			if n <= 0 {
				return out, false
			}
			i += n
		case 1:
			i += 8
		case 5:
			i += 4
		case 2:
			l, n := binary.Uvarint(data[i:])
			if n <= 0 || l > uint64(len(data)-i-n) {
				return out, false
			}
			cs, ce := i+n, i+n+int(l)
			kind, sub := refOther, refFields(nil)
			if tag>>3 <= 1<<29 {
				kind, sub = fields(int32(tag >> 3))
			}
			switch {
			case kind == refString && ce > cs:
				out = append(out, data[start:i]...)
				out = e.ref(out, data[cs:ce])
			case kind == refMessage:
				for len(e.levels) <= depth+1 {
					e.levels = append(e.levels, nil)
				}
				var content []byte
				if content, ok = e.rewrite(e.levels[depth+1][:0], data[cs:ce], sub, depth+1); !ok {
					return out, false
				}
				e.levels[depth+1] = content
				out = append(out, data[start:i]...)
				out = binary.AppendUvarint(out, uint64(len(content)))
				out = append(out, content...)
			default:
				out = append(out, data[start:ce]...)
			}
			i = ce
			continue
		default:
			return out, false
		}
		if i > len(data) {
			return out, false
		}
		out = append(out, data[start:i]...)
	}
	return out, true
}

// ref appends the length-prefixed content standing for str: a reference
// to its table entry if it has one or was seen in an earlier record (then
// made one), else str in place. A string repeated within one record only
// (a pod's name in its labels and host name, say) stays in place: as
// table entries such strings made the table about 20 entries a pod
// larger, and its lookups, cache misses, 4x slower
// (BenchmarkSnapshot/encode, 100,000 production-like pods).
func (e *RefEncoder) ref(out, str []byte) []byte {
	h := maphash.Bytes(e.seed, str)
	idx, ok := e.index[h]
	if ok && e.strs[idx] != string(str) {
		ok = false // another string with the same hash
	} else if !ok && len(e.strs) < refMaxStrings && e.seenBefore(h) {
		idx, ok = uint32(len(e.strs)), true
		e.index[h] = idx
		e.strs = append(e.strs, string(str))
		e.added++
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

// seenBefore reports whether a string with hash h was seen in an earlier
// record, and records it if it was not seen at all (as
// InternTable.seenBefore, in a larger filter).
func (e *RefEncoder) seenBefore(h uint64) bool {
	if e.seen == nil {
		e.seen = make([]refSeen, refSeenSlots)
	}
	set := e.seen[h%(refSeenSlots/seenWays)*seenWays:][:seenWays]
	for _, s := range set {
		if s.h == h {
			return s.rec != e.rec
		}
	}
	copy(set[1:], set)
	set[0] = refSeen{h: h, rec: e.rec}
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
	body, err := d.addStrings(t, rec[1:])
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

// addStrings adds the table entries at the start of rec to the table,
// each the copy t shares if it holds one (see refMode.str), and returns
// the rest of rec.
func (d *RefDecoder) addStrings(t *InternTable, rec []byte) ([]byte, error) {
	count, n := binary.Uvarint(rec)
	if n <= 0 || count > uint64(len(rec)) {
		return nil, errors.New("a bad count of table entries")
	}
	rec = rec[n:]
	if count == 0 {
		return rec, nil
	}
	t.lock()
	defer t.unlock()
	for range count {
		l, n := binary.Uvarint(rec)
		if n <= 0 || l == 0 || l > uint64(len(rec)-n) {
			return nil, errors.New("a bad table entry")
		}
		d.mode.strs = append(d.mode.strs, t.repeatedFrom(rec[n:n+int(l)]))
		rec = rec[n+int(l):]
	}
	return rec, nil
}
