package wire

import (
	"bytes"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// This file drops the fields of a projection tree (dropfields.go) from
// encoded objects, lists and watch events, in place: the result is never
// longer than the input, so it is written over the input from its start.
// A first pass checks the bytes and computes sizes, so malformed input is
// reported before anything is overwritten and can then be decoded whole.

// errMalformed wraps what the wire filters find wrong with their input.
var errMalformed = errors.New("malformed")

// protoRewriter drops the fields of a projection tree from protobuf
// messages. Between its two passes over a message it keeps the new size of
// every message field it rewrites: without them the writing pass
// recomputed the sizes below each rewritten field at every level above it
// (BenchmarkDropProtobuf, a pod's watch event with four paths dropped:
// 5.8 µs of CPU an event before, 2.4 µs after: CPU profile samples over
// 50,000 runs, load 13 on 2 cores). It is not safe for concurrent
// use; its zero value is ready.
type protoRewriter struct {
	// fields are the message fields the passes descend into, in the order
	// they meet them (depth first, a field before its contents); next is
	// the writing pass's position in them.
	fields []rewrittenField
	next   int
}

// rewrittenField is a message field the first pass descended into.
type rewrittenField struct {
	size  int // its new size
	below int // how many fields below it were recorded after it
}

// drop drops the fields of tree from msg, a protobuf message (with the
// "k8s\0" prefix if tree.magic), and returns the shortened msg, which
// shares msg's bytes. On error msg is unchanged.
func (p *protoRewriter) drop(msg []byte, tree *dropNode) ([]byte, error) {
	p.fields = p.fields[:0]
	size, err := p.contentSize(msg, tree)
	if err != nil {
		return msg, err
	}
	if size == len(msg) {
		return msg, nil
	}
	p.next = 0
	w := p.contentWrite(msg, 0, 0, len(msg), tree)
	return msg[:w], nil
}

// contentSize returns the size of content, the bytes of a message field
// (or a whole body), once n's fields are dropped.
func (p *protoRewriter) contentSize(content []byte, n *dropNode) (int, error) {
	if n.magic {
		if !bytes.HasPrefix(content, []byte(ProtobufMagic)) {
			return 0, fmt.Errorf("%w protobuf: no %q prefix", errMalformed, ProtobufMagic)
		}
		size, err := p.messageSize(content[len(ProtobufMagic):], n)
		return len(ProtobufMagic) + size, err
	}
	return p.messageSize(content, n)
}

// messageSize returns the size of msg once n's fields are dropped, and
// records each message field it descends into.
func (p *protoRewriter) messageSize(msg []byte, n *dropNode) (int, error) {
	size := 0
	for len(msg) > 0 {
		num, typ, tagLen := protowire.ConsumeTag(msg)
		if tagLen < 0 {
			return 0, fmt.Errorf("%w protobuf: %v", errMalformed, protowire.ParseError(tagLen))
		}
		valLen := protowire.ConsumeFieldValue(num, typ, msg[tagLen:])
		if valLen < 0 {
			return 0, fmt.Errorf("%w protobuf: field %d: %v", errMalformed, num, protowire.ParseError(valLen))
		}
		fieldLen := tagLen + valLen
		field := msg[:fieldLen]
		msg = msg[fieldLen:]
		c := n.byNumber(num)
		if c == nil {
			size += fieldLen
			continue
		}
		action, content, err := protoFieldAction(c, num, typ, field[tagLen:])
		switch {
		case err != nil:
			return 0, err
		case action == protoDrop:
			continue
		case action == protoKeep:
			size += fieldLen
			continue
		}
		slot := len(p.fields)
		p.fields = append(p.fields, rewrittenField{})
		s, err := p.contentSize(content, c)
		if err != nil {
			return 0, err
		}
		p.fields[slot] = rewrittenField{size: s, below: len(p.fields) - slot - 1}
		size += tagLen + protowire.SizeBytes(s)
	}
	return size, nil
}

// protoAction is what the passes of a protoRewriter do with one field.
type protoAction int

const (
	protoKeep    protoAction = iota // copied whole
	protoDrop                       // left out
	protoRewrite                    // a message whose own fields are dropped
)

// protoFieldAction tells what to do with a field that the projection tree
// names, c, from its tag's num and typ and value, the bytes after the tag.
// For protoRewrite it returns the field's content. (The passes look fields
// up themselves and call it only for named ones: most fields are not, and
// the call is not inlined.)
func protoFieldAction(c *dropNode, num protowire.Number, typ protowire.Type, value []byte) (protoAction, []byte, error) {
	switch {
	case c.drop:
		return protoDrop, nil, nil
	case typ != protowire.BytesType:
		return 0, nil, fmt.Errorf("%w protobuf: field %d (%s) is not a message", errMalformed, num, c.name)
	}
	content, _ := protowire.ConsumeBytes(value)
	dropped, err := protoEntryDropped(content, c)
	switch {
	case err != nil:
		return 0, nil, err
	case dropped:
		return protoDrop, nil, nil
	case len(c.sub) == 0 && !c.magic:
		return protoKeep, nil, nil
	}
	return protoRewrite, content, nil
}

// protoEntryDropped tells whether entry, an entry of the map field n, has
// one of the keys n drops.
func protoEntryDropped(entry []byte, n *dropNode) (bool, error) {
	if len(n.keys) == 0 {
		return false, nil
	}
	key, found, err := protoBytesField(entry, 1)
	if err != nil {
		return false, fmt.Errorf("%w protobuf: map entry of %s: %v", errMalformed, n.name, err)
	}
	return found && slices.Contains(n.keys, string(key)), nil
}

// protoBytesField returns the value of msg's first field num of the bytes
// wire type, and whether there is one.
func protoBytesField(msg []byte, num protowire.Number) ([]byte, bool, error) {
	for len(msg) > 0 {
		n, typ, tagLen := protowire.ConsumeTag(msg)
		if tagLen < 0 {
			return nil, false, protowire.ParseError(tagLen)
		}
		if n == num && typ == protowire.BytesType {
			v, vLen := protowire.ConsumeBytes(msg[tagLen:])
			if vLen < 0 {
				return nil, false, protowire.ParseError(vLen)
			}
			return v, true, nil
		}
		valLen := protowire.ConsumeFieldValue(n, typ, msg[tagLen:])
		if valLen < 0 {
			return nil, false, protowire.ParseError(valLen)
		}
		msg = msg[tagLen+valLen:]
	}
	return nil, false, nil
}

// contentWrite writes buf[r:end], content checked by contentSize, to
// buf[w:] with n's fields dropped, and returns the end of what it wrote.
// w <= r: every step writes at most what it has read, and a length prefix
// never grows, so the writes never overtake the reads.
func (p *protoRewriter) contentWrite(buf []byte, w, r, end int, n *dropNode) int {
	if n.magic {
		w += copy(buf[w:], ProtobufMagic)
		r += len(ProtobufMagic)
	}
	for r < end {
		num, typ, tagLen := protowire.ConsumeTag(buf[r:end])
		valLen := protowire.ConsumeFieldValue(num, typ, buf[r+tagLen:end])
		fieldEnd := r + tagLen + valLen
		c := n.byNumber(num)
		action := protoKeep
		var content []byte
		if c != nil {
			// contentSize checked the field: no error.
			action, content, _ = protoFieldAction(c, num, typ, buf[r+tagLen:fieldEnd])
		}
		switch action {
		case protoDrop:
			r = fieldEnd
			continue
		case protoKeep:
			w += copy(buf[w:], buf[r:fieldEnd])
			r = fieldEnd
			continue
		}
		field := p.fields[p.next]
		p.next++
		if field.size == len(content) {
			p.next += field.below // unchanged: copied whole
			w += copy(buf[w:], buf[r:fieldEnd])
			r = fieldEnd
			continue
		}
		w += copy(buf[w:], buf[r:r+tagLen])
		w = len(protowire.AppendVarint(buf[:w], uint64(field.size)))
		w = p.contentWrite(buf, w, fieldEnd-len(content), fieldEnd, c)
		r = fieldEnd
	}
	return w
}

// passedWhole tells whether a watch event of type eventType is passed on
// without dropping anything: an ERROR event carries a Status, not one of
// the resource's objects, and a BOOKMARK event only metadata, whose
// annotations mark the end of a streaming list's initial events.
func passedWhole(eventType []byte) bool {
	return string(eventType) == "ERROR" || string(eventType) == "BOOKMARK"
}

// protoWatchEventType returns the type of a protobuf metav1.WatchEvent, or
// nil if it has none.
func protoWatchEventType(event []byte) []byte {
	v, _, _ := protoBytesField(event, 1)
	return v
}

// jsonFilter drops the fields of a projection tree from a JSON document.
// It keeps its cut list between calls to save allocations; it is not safe
// for concurrent use.
type jsonFilter struct {
	jsonScanner
	// cuts are the byte ranges [start, end) to remove, in order.
	cuts [][2]int
	// eventType is the "type" member of the top-level object.
	eventType []byte
}

// drop drops the fields of tree from data, a JSON object, and returns the
// shortened data, which shares data's bytes. If event is set, data is a
// watch event, returned unchanged if its type says so (passedWhole). On
// error data is unchanged.
func (f *jsonFilter) drop(data []byte, tree *dropNode, event bool) ([]byte, error) {
	f.buf, f.pos, f.cuts, f.eventType = data, 0, f.cuts[:0], nil
	defer func() { f.buf, f.eventType = nil, nil }()
	f.ws()
	if err := f.object(tree, true); err != nil {
		return data, err
	}
	f.ws()
	if f.pos != len(data) {
		return data, fmt.Errorf("%w JSON: data after the object at offset %d", errMalformed, f.pos)
	}
	if len(f.cuts) == 0 || event && passedWhole(f.eventType) {
		return data, nil
	}
	return cutRanges(data, f.cuts), nil
}

// object reads an object whose members n says what to do with.
func (f *jsonFilter) object(n *dropNode, top bool) error {
	if err := f.expect('{'); err != nil {
		return err
	}
	kept := false // whether a member before this one was kept
	prevEnd := 0  // the end of the previous member's value
	for first := true; ; first = false {
		if more, err := f.next('}', first); !more {
			return err
		}
		keyStart := f.pos
		key, err := f.member()
		if err != nil {
			return err
		}
		c := n.byName(key)
		valStart := f.pos
		switch {
		case c != nil && !c.drop && (len(c.sub) > 0 || len(c.keys) > 0) && f.peek() == '{':
			err = f.object(c, false)
		case c != nil && !c.drop && len(c.sub) > 0 && f.peek() == '[':
			err = f.array(c)
		default:
			err = f.skip()
		}
		if err != nil {
			return err
		}
		if top && string(key) == "type" && f.buf[valStart] == '"' {
			f.eventType = f.buf[valStart+1 : f.pos-1]
		}
		valEnd := f.pos
		if c != nil && c.drop || len(n.keys) > 0 && slices.Contains(n.keys, string(key)) {
			if kept {
				f.cuts = append(f.cuts, [2]int{prevEnd, valEnd})
			} else {
				// No member before is kept: cut this one with the comma
				// after it, if any.
				f.ws()
				end := valEnd
				if f.peek() == ',' {
					end = f.pos + 1
				}
				f.cuts = append(f.cuts, [2]int{keyStart, end})
			}
		} else {
			kept = true
		}
		prevEnd = valEnd
	}
}

// array reads an array whose object elements n says what to do with.
func (f *jsonFilter) array(n *dropNode) error {
	if err := f.expect('['); err != nil {
		return err
	}
	for first := true; ; first = false {
		if more, err := f.next(']', first); !more {
			return err
		}
		var err error
		if f.peek() == '{' {
			err = f.object(n, false)
		} else {
			err = f.skip()
		}
		if err != nil {
			return err
		}
	}
}
