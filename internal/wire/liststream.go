package wire

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"
)

// This file lets the REST ListerWatcher decode a protobuf list response
// as it arrives, one item at a time, instead of reading the whole body
// into a buffer first: each item's bytes are read into a buffer reused for
// the next, its namespace, name and resource version looked up in the
// informer's cache (as CutCachedItems does), and it is decoded only if the
// cache does not hold it at that version. So a page of a list costs no
// buffer of its size: a relist after a restore, whose items are mostly the
// restored objects, allocated each page's body (4.7 MB for 500
// production-like pods) and the growing buffers before it, garbage that
// raised a warm start's peak heap 1.3x above a cold start's (E4 (b),
// docs/restart.md).

// listMetaNumber is the protobuf field number of a list's ListMeta
// (Metadata), the same in every list type of the API.
const listMetaNumber protowire.Number = 1

// envelopePeek is how much of a response ReadProtobufList reads ahead to
// find the envelope's kind and the start of its list, before consuming
// anything.
const envelopePeek = 4096

// ErrListStream reports a protobuf list response that ended early or is
// malformed.
var ErrListStream = errors.New("malformed protobuf list response")

// ReadProtobufList reads from br a protobuf response holding a list of
// kind listKind (or of no kind), laid out as layout says, one item at a
// time: each item that lookup (if not nil) finds cached is that object,
// any other is decode's result for the item's bytes, which are only valid
// during the call (decode must copy what it keeps). It returns the items
// in list order and the list's ListMeta message. It returns ok false,
// having consumed nothing of br, when br does not start with such a
// response (JSON, a Status, an envelope laid out otherwise); the caller
// then decodes it whole. br's buffer must hold at least envelopePeek
// bytes.
func ReadProtobufList[T comparable](br *bufio.Reader, listKind string, layout CachedItemsLayout, lookup CachedLookup[T], decode func(item []byte) (T, error)) (items []T, listMeta []byte, ok bool, err error) {
	listMeta, ok, err = readProtobufListItems(br, listKind, layout, func(item []byte) error {
		if lookup != nil {
			if obj, found := cachedItem(item, layout.metadata, lookup); found {
				items = append(items, obj)
				return nil
			}
		}
		obj, err := decode(item)
		if err != nil {
			return err
		}
		items = append(items, obj)
		return nil
	})
	if !ok || err != nil {
		return nil, listMeta, ok, err
	}
	return items, listMeta, true, nil
}

// ErrNoVersion reports a list item without a name or resource version
// (ReadProtobufListVersions).
var ErrNoVersion = fmt.Errorf("%w: a list item without a name or resource version", ErrListStream)

// ReadProtobufListVersions reads from br, as ReadProtobufList does, a
// protobuf response holding a list of kind listKind laid out as layout
// says, and calls each with every item's namespace, name and resource
// version, read without decoding the item; the bytes are only valid
// during the call. It returns the list's ListMeta message, ok false having
// consumed nothing of br when br holds no such response, and ErrNoVersion
// for an item whose name or resource version it cannot read.
func ReadProtobufListVersions(br *bufio.Reader, listKind string, layout CachedItemsLayout, each func(namespace, name, resourceVersion []byte)) (listMeta []byte, ok bool, err error) {
	return readProtobufListItems(br, listKind, layout, func(item []byte) error {
		namespace, name, rv, ok := itemVersion(item, layout.metadata)
		if !ok {
			return ErrNoVersion
		}
		each(namespace, name, rv)
		return nil
	})
}

// readProtobufListItems reads the list response in br as ReadProtobufList
// does, calling each with every item's bytes (valid only during the call)
// in list order; an error of each ends the read.
func readProtobufListItems(br *bufio.Reader, listKind string, layout CachedItemsLayout, each func(item []byte) error) (listMeta []byte, ok bool, err error) {
	if layout.items == 0 || layout.metadata == 0 {
		return nil, false, nil
	}
	head, _ := br.Peek(envelopePeek) // a short response gives less, with its error
	listLen, prefix, ok := listStart(head, listKind)
	if !ok {
		return nil, false, nil
	}
	if _, err := br.Discard(prefix); err != nil {
		return nil, true, err
	}
	r := &countingByteReader{br: br}
	var item []byte
	for r.n < listLen {
		tag, err := r.varint()
		if err != nil {
			return nil, true, err
		}
		num, typ := protowire.DecodeTag(tag)
		if typ != protowire.BytesType {
			if err := r.skip(num, typ); err != nil {
				return nil, true, err
			}
			continue
		}
		size, err := r.varint()
		if err != nil {
			return nil, true, err
		}
		if size > listLen-r.n {
			return nil, true, fmt.Errorf("%w: a field of %d bytes with %d left in the list", ErrListStream, size, listLen-r.n)
		}
		switch num {
		case layout.items:
			if uint64(cap(item)) < size {
				item = make([]byte, size)
			}
			item = item[:size]
			if err := r.read(item); err != nil {
				return nil, true, err
			}
			if err := each(item); err != nil {
				return nil, true, err
			}
		case listMetaNumber:
			listMeta = make([]byte, size)
			if err := r.read(listMeta); err != nil {
				return nil, true, err
			}
		default:
			if err := r.discard(size); err != nil {
				return nil, true, err
			}
		}
	}
	if r.n != listLen {
		return nil, true, fmt.Errorf("%w: the list's last field ends past its end", ErrListStream)
	}
	// What follows the list in the envelope: its content encoding and
	// type, empty for a list; read to the end, so that a response cut
	// short is an error here as when it is decoded whole.
	trailer, err := io.ReadAll(io.LimitReader(br, envelopePeek+1))
	if err != nil {
		return nil, true, err
	}
	for rest := trailer; len(rest) > 0; {
		num, typ, _, n := consumeField(rest)
		if n < 0 || typ != protowire.BytesType || (num != 3 && num != 4) {
			return nil, true, fmt.Errorf("%w: %d bytes after the list that are not its content encoding and type", ErrListStream, len(trailer))
		}
		rest = rest[n:]
	}
	return listMeta, true, nil
}

// listStart parses the beginning of a protobuf response, head: the magic,
// an envelope whose first field is its type (of kind listKind or of no
// kind) and whose second is the raw list message. It returns the list
// message's length and the length of what precedes it.
func listStart(head []byte, listKind string) (listLen uint64, prefix int, ok bool) {
	if len(head) < len(ProtobufMagic) || string(head[:len(ProtobufMagic)]) != ProtobufMagic {
		return 0, 0, false
	}
	msg := head[len(ProtobufMagic):]
	num, typ, n := protowire.ConsumeTag(msg)
	if n < 0 || num != 1 || typ != protowire.BytesType {
		return 0, 0, false
	}
	typeMeta, m := protowire.ConsumeBytes(msg[n:])
	if m < 0 {
		return 0, 0, false
	}
	if kind := typeMetaKind(typeMeta); kind != listKind && kind != "" {
		return 0, 0, false
	}
	rest := msg[n+m:]
	num, typ, k := protowire.ConsumeTag(rest)
	if k < 0 || num != 2 || typ != protowire.BytesType {
		return 0, 0, false
	}
	size, l := protowire.ConsumeVarint(rest[k:])
	if l < 0 {
		return 0, 0, false
	}
	return size, len(ProtobufMagic) + n + m + k + l, true
}

// typeMetaKind returns the kind (field 2) of a runtime.TypeMeta message.
func typeMetaKind(msg []byte) string {
	kind := ""
	for len(msg) > 0 {
		num, typ, content, n := consumeField(msg)
		if n < 0 {
			return "\x00malformed"
		}
		msg = msg[n:]
		if num == 2 && typ == protowire.BytesType {
			kind = string(content)
		}
	}
	return kind
}

// countingByteReader reads from a bufio.Reader and counts the bytes read,
// turning an early end into ErrListStream.
type countingByteReader struct {
	br *bufio.Reader
	n  uint64
}

func (r *countingByteReader) varint() (uint64, error) {
	var v uint64
	for shift := uint(0); shift < 64; shift += 7 {
		b, err := r.br.ReadByte()
		if err != nil {
			return 0, r.early(err)
		}
		r.n++
		v |= uint64(b&0x7f) << shift
		if b < 0x80 {
			return v, nil
		}
	}
	return 0, fmt.Errorf("%w: a varint of more than 10 bytes", ErrListStream)
}

func (r *countingByteReader) read(p []byte) error {
	n, err := io.ReadFull(r.br, p)
	r.n += uint64(n)
	if err != nil {
		return r.early(err)
	}
	return nil
}

func (r *countingByteReader) discard(size uint64) error {
	n, err := r.br.Discard(int(size))
	r.n += uint64(n)
	if err != nil {
		return r.early(err)
	}
	return nil
}

// skip reads past a field that is not length-delimited.
func (r *countingByteReader) skip(num protowire.Number, typ protowire.Type) error {
	switch typ {
	case protowire.VarintType:
		_, err := r.varint()
		return err
	case protowire.Fixed32Type:
		return r.discard(4)
	case protowire.Fixed64Type:
		return r.discard(8)
	}
	return fmt.Errorf("%w: field %d of wire type %d", ErrListStream, num, typ)
}

// early is err, an end of the stream before the list's end, as
// ErrListStream.
func (r *countingByteReader) early(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: it ended %d bytes into the list: %w", ErrListStream, r.n, io.ErrUnexpectedEOF)
	}
	return err
}
