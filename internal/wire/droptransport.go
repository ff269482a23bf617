package wire

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"k8s.io/apimachinery/pkg/runtime"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"sync/atomic"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/klog/v2"
)

// DropFieldsTransport drops the fields of DropFields from the bodies of a
// ListerWatcher's list responses and from each event of its watch
// responses, before the REST client decodes them: the decoder, and so the
// heap, never see the dropped fields. It sits between the REST client and
// the HTTP client, where every ListerWatcher built from a rest.Config can
// use it whatever decoder its client-go client has.
//
// Bytes it cannot make sense of (malformed, or not shaped as the resource's
// lists and events) are passed on whole, for the client to decode or
// reject as it would without it; it logs each such response or event and
// counts them in malformed, a count it may share with the transport it
// replaces (ContinueCount).
type DropFieldsTransport struct {
	base     http.RoundTripper
	resource string // for logs
	// The trees of a protobuf list body, a protobuf watch event, a JSON list
	// body and a JSON watch event; the protobuf ones are nil for types
	// without protobuf field numbers.
	protoList, protoEvent, jsonList, jsonEvent *dropNode
	malformed                                  *atomic.Int64
}

// Failures returns the number of responses and watch events passed on
// whole (malformed, or not shaped as the resource's); 0 for a nil t.
func (t *DropFieldsTransport) Failures() int64 {
	if t == nil {
		return 0
	}
	return t.malformed.Load()
}

// ContinueCount makes t count into prev's count, so that Failures of either
// is what both counted, before and after: for a transport that takes over
// from prev (a fleet cluster's client made from new credentials, while the
// watch opened through prev may still be going). It must be called before
// t is used; nil for either is a no-op.
func (t *DropFieldsTransport) ContinueCount(prev *DropFieldsTransport) {
	if t == nil || prev == nil {
		return
	}
	t.malformed = prev.malformed
}

// maxWatchFrame bounds the watch event the transport buffers to filter; a
// longer one (none is near it: etcd limits objects to 1.5 MiB) turns the
// rest of the watch into a pass-through.
const maxWatchFrame = 64 << 20

// NewDropFieldsTransport compiles paths for the objects of type typ (nil
// for unstructured objects, which only JSON carries) whose list type is
// listType. withProtobuf requires protobuf field numbers for every path. It
// returns nil for no paths.
func NewDropFieldsTransport(paths []string, typ, listType reflect.Type, withProtobuf bool, resource string) (*DropFieldsTransport, error) {
	var structType reflect.Type
	if typ != nil {
		structType = typ.Elem()
	}
	obj, err := compileDropFields(paths, structType, withProtobuf)
	if err != nil || obj == nil {
		return nil, err
	}
	t := &DropFieldsTransport{
		resource:  resource,
		malformed: new(atomic.Int64),
		jsonList:  &dropNode{sub: []*dropNode{{name: "items", sub: obj.sub}}},
		jsonEvent: &dropNode{sub: []*dropNode{{name: "object", sub: obj.sub}}},
	}
	if items := protobufItemsNumber(listType); items != 0 && allNumbered(obj) {
		// runtime.Unknown{Raw (2): List{Items: objects}}, after the magic.
		t.protoList = &dropNode{magic: true, sub: []*dropNode{{name: "raw", num: 2, sub: []*dropNode{{name: "items", num: items, sub: obj.sub}}}}}
		// metav1.WatchEvent{Object (2): RawExtension{Raw (1): the object
		// in its runtime.Unknown envelope, after the magic}}.
		t.protoEvent = &dropNode{sub: []*dropNode{{name: "object", num: 2, sub: []*dropNode{{name: "raw", num: 1, magic: true, sub: []*dropNode{{name: "raw", num: 2, sub: obj.sub}}}}}}}
	}
	return t, nil
}

// protobufItemsNumber returns the field number of listType's Items, or 0
// for no list type.
func protobufItemsNumber(listType reflect.Type) protowire.Number {
	if listType == nil {
		return 0
	}
	return itemsNumber(listType)
}

// allNumbered tells whether every node under n has a protobuf number.
func allNumbered(n *dropNode) bool {
	for _, c := range n.sub {
		if c.num == 0 || !allNumbered(c) {
			return false
		}
	}
	return true
}

// Wrap returns a copy of client whose requests go through t. The copy
// shares client's transport, and so its connections.
func (t *DropFieldsTransport) Wrap(client *http.Client) *http.Client {
	wrapped := *client
	t.base = client.Transport
	if t.base == nil {
		t.base = http.DefaultTransport
	}
	wrapped.Transport = t
	return &wrapped
}

// CloseIdleConnections closes the idle connections of the wrapped
// transport, for http.Client.CloseIdleConnections.
func (t *DropFieldsTransport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// RoundTrip implements http.RoundTripper.
func (t *DropFieldsTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || resp.StatusCode != http.StatusOK || resp.Body == nil || resp.Header.Get("Content-Encoding") != "" {
		return resp, err
	}
	mediaType, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil {
		return resp, nil
	}
	protobuf := mediaType == runtime.ContentTypeProtobuf
	if !protobuf && mediaType != runtime.ContentTypeJSON {
		return resp, nil
	}
	logger := klog.FromContext(req.Context())
	if watching := req.URL.Query().Get("watch"); watching == "true" || watching == "1" {
		tree := t.jsonEvent
		if protobuf {
			tree = t.protoEvent
		}
		if tree == nil {
			return resp, nil
		}
		resp.Body = &dropFieldsWatchBody{src: resp.Body, t: t, tree: tree, protobuf: protobuf, logger: logger}
		resp.ContentLength = -1
		resp.Header.Del("Content-Length")
		return resp, nil
	}
	tree := t.jsonList
	if protobuf {
		tree = t.protoList
	}
	if tree == nil {
		return resp, nil
	}
	body, err := readBody(resp)
	if err != nil {
		return nil, fmt.Errorf("reading the list of %s: %w", t.resource, err)
	}
	var filtered []byte
	if protobuf {
		var p protoRewriter
		filtered, err = p.drop(body, tree)
	} else {
		var f jsonFilter
		filtered, err = f.drop(body, tree, false)
	}
	if err != nil {
		n := t.malformed.Add(1)
		logger.Error(err, "Cannot drop fields from a list: decoding it whole", "resource", t.resource, "malformedSoFar", n)
	}
	resp.Body = io.NopCloser(bytes.NewReader(filtered))
	resp.ContentLength = int64(len(filtered))
	if resp.Header.Get("Content-Length") != "" {
		resp.Header.Set("Content-Length", strconv.Itoa(len(filtered)))
	}
	return resp, nil
}

// readBody reads and closes the body of resp, in one allocation when its
// length is known.
func readBody(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	if resp.ContentLength > 0 {
		body := make([]byte, resp.ContentLength)
		if _, err := io.ReadFull(resp.Body, body); err != nil {
			return nil, err
		}
		return body, nil
	}
	return io.ReadAll(resp.Body)
}

// dropFieldsWatchBody is the body of a watch response with the fields of
// tree dropped from each event: length-prefixed protobuf WatchEvents, or
// JSON objects one after the other. Events of type ERROR and BOOKMARK pass
// unchanged (see passedWhole).
type dropFieldsWatchBody struct {
	src      io.ReadCloser
	t        *DropFieldsTransport
	tree     *dropNode
	protobuf bool
	logger   klog.Logger

	// buf holds what was read from src: buf[:next] is filtered (out is
	// what of it is not yet handed out), buf[next:] is not.
	buf  []byte
	next int
	out  []byte
	// passThrough hands out the rest of the stream as it comes, after an
	// event too long to buffer, a JSON stream that is not objects or a JSON
	// event cut short (see jsonSplitter).
	passThrough bool
	err         error // of src, returned once everything before it is out
	proto       protoRewriter
	json        jsonFilter
	split       jsonSplitter
}

// watchReadSize is the least room Read asks src to fill at a time.
const watchReadSize = 32 << 10

// maxIdleWatchBuffer is the largest buffer a watch body keeps between
// events: one grown for a longer event is replaced by a small one once
// the event is out.
const maxIdleWatchBuffer = 1 << 20

// Read implements io.Reader.
func (b *dropFieldsWatchBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		if b.next < len(b.buf) {
			if end := b.frameEnd(); end >= 0 {
				b.out = b.filter(b.buf[b.next:end])
				b.next = end
				continue
			}
		}
		if b.err != nil {
			if b.next < len(b.buf) {
				// A truncated event: the decoder reports it.
				b.out, b.next = b.buf[b.next:], len(b.buf)
				continue
			}
			return 0, b.err
		}
		// Everything before next is out: keep only the rest, and read.
		n := len(b.buf) - b.next
		switch {
		case cap(b.buf) > maxIdleWatchBuffer && n <= watchReadSize:
			// A long event is out: do not keep its room.
			b.buf = append(make([]byte, 0, n+watchReadSize), b.buf[b.next:]...)
		case b.next > 0:
			copy(b.buf, b.buf[b.next:])
			b.buf = b.buf[:n]
		}
		b.next = 0
		need := watchReadSize
		if b.protobuf && n >= 4 {
			// The rest of the event, whose length is known: room for
			// exactly that (read-ahead fills what room there is beyond).
			need = 4 + int(binary.BigEndian.Uint32(b.buf)) - n
		}
		if cap(b.buf)-n < need {
			// At least doubled, so that a JSON event, whose length is
			// known only at its end, is copied O(1) times per byte, not
			// once per watchReadSize read (BenchmarkDropFieldsWatchBodyLongEvent).
			b.buf = append(make([]byte, 0, max(n+need, 2*cap(b.buf))), b.buf...)
		}
		m, err := b.src.Read(b.buf[n:cap(b.buf)])
		b.buf = b.buf[:n+m]
		if err != nil {
			b.err = err
		}
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}

// frameEnd returns the end in buf of the event starting at next, or -1 if
// it is not all read yet. In pass-through mode every byte read is an
// "event".
func (b *dropFieldsWatchBody) frameEnd() int {
	pending := b.buf[b.next:]
	switch {
	case b.passThrough:
		return len(b.buf)
	case b.protobuf:
		if len(pending) < 4 {
			return -1
		}
		size := binary.BigEndian.Uint32(pending)
		if size > maxWatchFrame {
			b.startPassThrough(fmt.Errorf("a watch event of %d bytes", size))
			return len(b.buf)
		}
		if len(pending) < 4+int(size) {
			return -1
		}
		return b.next + 4 + int(size)
	default:
		end, err := b.split.end(pending)
		if err != nil {
			b.startPassThrough(err)
			return len(b.buf)
		}
		if end < 0 {
			if len(pending) > maxWatchFrame {
				b.startPassThrough(fmt.Errorf("a watch event of more than %d bytes", maxWatchFrame))
				return len(b.buf)
			}
			return -1
		}
		return b.next + end
	}
}

func (b *dropFieldsWatchBody) startPassThrough(err error) {
	b.passThrough = true
	n := b.t.malformed.Add(1)
	b.logger.Error(err, "Cannot drop fields from this watch: passing the rest of it on whole", "resource", b.t.resource, "malformedSoFar", n)
}

// filter returns frame, one event, with the fields dropped, in place.
func (b *dropFieldsWatchBody) filter(frame []byte) []byte {
	if b.passThrough {
		return frame
	}
	var filtered []byte
	var err error
	if b.protobuf {
		event := frame[4:]
		if passedWhole(protoWatchEventType(event)) {
			return frame
		}
		if filtered, err = b.proto.drop(event, b.tree); err == nil {
			binary.BigEndian.PutUint32(frame, uint32(len(filtered)))
			filtered = frame[:4+len(filtered)]
		}
	} else {
		filtered, err = b.json.drop(frame, b.tree, true)
	}
	if err != nil {
		n := b.t.malformed.Add(1)
		b.logger.Error(err, "Cannot drop fields from a watch event: decoding it whole", "resource", b.t.resource, "malformedSoFar", n)
		return frame
	}
	return filtered
}

// Close implements io.Closer.
func (b *dropFieldsWatchBody) Close() error {
	return b.src.Close()
}

// jsonSplitter finds where the JSON objects of a stream end, as bytes
// arrive: it remembers how far it has scanned the current one.
//
// The API server writes each watch event as one line: compact JSON, then
// "\n" (apimachinery's JSON serializer, a json.Encoder). A newline inside an
// event, raw in a string (where JSON forbids it) or between tokens, so means
// that the event was cut short and the server went on with the next one.
// Counting braces alone would take every later event as part of the cut one
// and hold them all back (up to maxWatchFrame), where client-go's decoder,
// without DropFields, fails at once. So the splitter fails, and the body
// passes the stream on whole from there: the decoder rejects it as it would
// without DropFields, and the reflector watches again. client-go also
// accepts events spread over several lines (pretty printed), which no API
// server writes: those are passed on whole too, and decoded with their
// fields.
type jsonSplitter struct {
	scanned          int
	depth            int
	inString, escape bool
}

// end returns the length of the first complete object of pending (leading
// whitespace included), or -1 if it is incomplete. pending starts where the
// previous call's object ended and only grows between calls. It fails on a
// stream that is not objects, and on an object cut short (see
// jsonSplitter).
func (s *jsonSplitter) end(pending []byte) (int, error) {
	for i := s.scanned; i < len(pending); i++ {
		c := pending[i]
		if s.inString {
			switch {
			case s.escape:
				s.escape = false
				if c < 0x20 {
					return 0, fmt.Errorf("%w JSON watch stream: an event cut short: %q after a backslash in a string", errMalformed, c)
				}
			case c == '\\':
				s.escape = true
			case c == '"':
				s.inString = false
			case c < 0x20:
				return 0, fmt.Errorf("%w JSON watch stream: an event cut short: %q in a string", errMalformed, c)
			}
			continue
		}
		switch c {
		case ' ', '\t', '\r':
			continue
		case '\n':
			if s.depth > 0 {
				return 0, fmt.Errorf("%w JSON watch stream: an event cut short: a newline before its end (the API server writes one event a line)", errMalformed)
			}
			continue
		}
		if s.depth == 0 && c != '{' {
			return 0, fmt.Errorf("%w JSON watch stream: %q where an event should start", errMalformed, c)
		}
		switch c {
		case '"':
			s.inString = true
		case '{', '[':
			s.depth++
		case '}', ']':
			s.depth--
			if s.depth == 0 {
				*s = jsonSplitter{}
				return i + 1, nil
			}
		}
	}
	s.scanned = len(pending)
	return -1, nil
}
