package wire

import (
	"bytes"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// This file holds the JSON watch stream of the REST ListerWatchers whose
// objects the lean JSON decoders decode (custom resources, unstructured
// objects): how the events are cut from the response body and how each
// event's type and object are read from its envelope. apimachinery's JSON
// stream reads every event several times with encoding/json's scanner
// before the object decoder sees it: its framer decodes the event into a
// json.RawMessage (a scan to find its end, a scan to decode it, two
// copies), then the JSON serializer reads it as a metav1.WatchEvent (a scan
// for its apiVersion and kind, a scan to validate it, one to decode it, the
// object copied into a RawExtension). Syncing 5,000 Workloads (E5, 9.9 KB
// each as JSON, with Deduplicate) that framing and reading of envelopes was
// 64% of the client's CPU samples, the object decoder 13% (see
// docs/benchmarks.md, "Where E5's CPU goes").
//
// Here the framer finds the end of each event by its structure alone
// (quotes, escapes, brackets; a string's closing quote found by
// bytes.IndexByte) where the stream is as the API server writes it, and
// leaves the rest to apimachinery's framer (jsonFrameReader); the event
// decoder reads the envelope the API server writes,
// {"type":"…","object":{…}}, in place: the object's bytes are a sub-slice
// of the frame, not a copy. Neither validates the JSON:
// the object decoder does (the typed and unstructured decoders reject what
// sigs.k8s.io/json rejects and hand it to apimachinery's serializer, which
// returns its error), and an envelope of any other shape is apimachinery's
// serializer's to decode.

// NewJSONWatchStream returns stream, the JSON stream serializer of a REST
// client, with the framer and the watch event decoder of this file in front
// of it (see above). typer knows metav1.WatchEvent, as stream's serializer
// does; the kind returned with an event is the one that serializer would
// return. The event's Object.Raw shares the frame's bytes, which client-go's
// watch decoder (k8s.io/client-go/rest/watch.Decoder) overwrites with the
// next event after decoding the object: only an object decoder that copies
// what it keeps may follow it. The lean JSON decoders copy or intern every
// string and byte slice; apimachinery's serializer copies too (sigs.k8s.io/json;
// a type's own UnmarshalJSON must copy the bytes it keeps, as
// encoding/json's contract says).
func NewJSONWatchStream(stream *runtime.StreamSerializerInfo, typer runtime.ObjectTyper) *runtime.StreamSerializerInfo {
	if stream == nil {
		return nil
	}
	fast := *stream
	fast.Serializer = &jsonWatchEventDecoder{Serializer: stream.Serializer, typer: typer}
	fast.Framer = jsonFramer{Framer: stream.Framer}
	return &fast
}

// jsonFramer is the framer of a JSON watch stream: frames are read by
// jsonFrameReader and written by the framer it wraps.
type jsonFramer struct {
	runtime.Framer // apimachinery's JSON framer
}

// NewFrameReader returns a jsonFrameReader of r.
func (f jsonFramer) NewFrameReader(r io.ReadCloser) io.ReadCloser {
	return &jsonFrameReader{r: r, framer: f.Framer}
}

// jsonFrameReadSize is the least free space jsonFrameReader reads into.
const jsonFrameReadSize = 32 << 10

// jsonFrameReader cuts a JSON watch stream into one event per Read, as
// apimachinery's JSON framer does (a Read whose buffer is too small for
// the event fills it and returns io.ErrShortBuffer, and the next Reads
// return the rest), relying on what the API server writes: JSON objects,
// compact, one a line (a JSON encoder's output has no newline within a
// value). An object whose strings and brackets close before any newline
// is an event (objectScan); that is all it checks. At the first value that
// is not so (an event cut short by a broken connection and followed by
// the next, whitespace within a value, a value that is not an object, the
// end of the stream within a value), it hands that value and the rest of
// the stream to apimachinery's framer, which returns from there what it
// would have returned from the start: the events before are the same
// values either way.
//
// An invalid object is framed as it is, where apimachinery's framer
// returns a syntax error: the watch event decoder then fails on it (its
// object decoder validates what it decodes), and client-go's watch ends
// with an error event either way.
type jsonFrameReader struct {
	r      io.ReadCloser
	framer runtime.Framer
	// buf[start:end] is what was read from r and not yet returned.
	buf        []byte
	start, end int
	err        error // r's error, returned once the lines read before it are
	// remaining is the part of the last event that the caller's buffer
	// could not hold.
	remaining []byte
	// slow, once set, is apimachinery's frame reader of the rest of the
	// stream, which reads every Read from then on.
	slow io.ReadCloser
}

// Read implements io.Reader (see jsonFrameReader).
func (r *jsonFrameReader) Read(data []byte) (int, error) {
	if len(r.remaining) > 0 {
		n := copy(data, r.remaining)
		r.remaining = r.remaining[n:]
		if len(r.remaining) > 0 {
			return n, io.ErrShortBuffer
		}
		return n, nil
	}
	if r.slow != nil {
		return r.slow.Read(data)
	}
	event, ok := r.next()
	if !ok {
		// What is left, from the start of the line next did not frame.
		rest := io.MultiReader(bytes.NewReader(r.buf[r.start:r.end]), errReader{r.r, r.err})
		r.slow = r.framer.NewFrameReader(io.NopCloser(rest))
		return r.slow.Read(data)
	}
	n := copy(data, event)
	if n < len(event) {
		// event is in r.buf, which the next event may overwrite.
		r.remaining = append(r.remaining[:0], event[n:]...)
		return n, io.ErrShortBuffer
	}
	return n, nil
}

// next returns the next event, in r.buf until the next call, or false if
// the next value is not one apimachinery's framer would surely frame the
// same (see jsonFrameReader) or there is none.
func (r *jsonFrameReader) next() ([]byte, bool) {
	// Whitespace before a value is no part of it.
	for {
		for r.start < r.end && isJSONSpace(r.buf[r.start]) {
			r.start++
		}
		if r.start < r.end || r.err != nil {
			break
		}
		r.fill()
	}
	if r.start == r.end || r.buf[r.start] != '{' {
		return nil, false
	}
	scan := objectScan{pos: r.start}
	for {
		switch scan.run(r.buf[:r.end]) {
		case objectClosed:
			event := r.buf[r.start:scan.pos]
			r.start = scan.pos
			return event, true
		case objectIrregular:
			return nil, false
		}
		if r.err != nil {
			return nil, false
		}
		shift := r.fill()
		scan.pos -= shift
		scan.stringStart -= shift
	}
}

// fill reads more of the stream into r.buf, moving what is unread to its
// start, or growing it, if there is not room for jsonFrameReadSize bytes;
// it returns how far the unread bytes moved back.
func (r *jsonFrameReader) fill() (shift int) {
	if len(r.buf)-r.end < jsonFrameReadSize {
		buf := r.buf
		if r.end-r.start+jsonFrameReadSize > len(r.buf) {
			buf = make([]byte, 2*len(r.buf)+jsonFrameReadSize)
		}
		shift = r.start
		copy(buf, r.buf[r.start:r.end])
		r.buf, r.start, r.end = buf, 0, r.end-shift
	}
	n, err := r.r.Read(r.buf[r.end:])
	r.end += n
	if err != nil {
		r.err = err
	}
	return shift
}

// Close closes the stream.
func (r *jsonFrameReader) Close() error {
	return r.r.Close()
}

// errReader reads r, or returns err if it is not nil: the rest of a stream
// whose reader returned err.
type errReader struct {
	r   io.Reader
	err error
}

func (e errReader) Read(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	return e.r.Read(p)
}

// isJSONSpace tells whether b is whitespace between JSON tokens.
func isJSONSpace(b byte) bool {
	return b == ' ' || b == '\n' || b == '\r' || b == '\t'
}

// objectScan finds where the object or array starting at a buffer's pos
// ends, by its structure only: strings (a closing quote found by
// bytes.IndexByte, not counted if an odd number of backslashes precede
// it) and the nesting of brackets; it validates nothing else. A newline
// (outside a string or, invalid JSON, within one) makes it irregular: the
// API server writes no newline within an event, so that is an event cut
// short with the next one after it, or whitespace in a value. Its state
// lets a scan stop at the end of the bytes read so far and go on once
// there are more.
type objectScan struct {
	pos         int
	depth       int
	inString    bool
	stringStart int // the opening quote of the string it is in
}

// The outcomes of objectScan.run.
const (
	objectOpen      = iota // the bytes end within the object
	objectClosed           // the object ended, at pos
	objectIrregular        // a newline within the object
)

// run scans buf from s.pos.
func (s *objectScan) run(buf []byte) int {
	for {
		if s.inString {
			i := bytes.IndexByte(buf[s.pos:], '"')
			if i < 0 {
				if bytes.IndexByte(buf[s.pos:], '\n') >= 0 {
					return objectIrregular
				}
				s.pos = len(buf)
				return objectOpen
			}
			quote := s.pos + i
			if bytes.IndexByte(buf[s.pos:quote], '\n') >= 0 {
				return objectIrregular
			}
			s.pos = quote + 1
			backslashes := 0
			for j := quote - 1; j > s.stringStart && buf[j] == '\\'; j-- {
				backslashes++
			}
			if backslashes%2 == 1 {
				continue
			}
			s.inString = false
		}
	structure:
		for s.pos < len(buf) {
			b := buf[s.pos]
			s.pos++
			switch b {
			case '"':
				s.inString, s.stringStart = true, s.pos-1
				break structure
			case '{', '[':
				s.depth++
			case '}', ']':
				s.depth--
				if s.depth == 0 {
					return objectClosed
				}
			case '\n':
				return objectIrregular
			}
		}
		if !s.inString {
			return objectOpen
		}
	}
}

// jsonWatchEventDecoder decodes a JSON metav1.WatchEvent as apimachinery's
// JSON serializer does, reading the envelope the API server writes in
// place (see above); anything else is that serializer's.
type jsonWatchEventDecoder struct {
	runtime.Serializer // the stream's JSON serializer
	typer              runtime.ObjectTyper
}

// Decode implements runtime.Decoder.
func (d *jsonWatchEventDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	// client-go's watch decoder gives an empty event and no defaults; the
	// serializer would merge into anything else, and combine defaults with
	// the kind it reads in its own way.
	if event, ok := into.(*metav1.WatchEvent); ok && (defaults != nil || event.Type != "" || event.Object.Raw != nil || event.Object.Object != nil) {
		return d.Serializer.Decode(data, defaults, into)
	}
	return decodeWatchEvent(d.Serializer, d.typer, parseJSONWatchEvent, data, defaults, into)
}

// The envelope parseJSONWatchEvent reads: the API server's encoding of a
// metav1.WatchEvent, compact.
var (
	jsonWatchEventStart  = []byte(`{"type":"`)
	jsonWatchEventObject = []byte(`","object":`)
)

// parseJSONWatchEvent returns the type and the object's bytes of data, a
// JSON metav1.WatchEvent written as {"type":"…","object":{…}} (whitespace
// after it aside), a type of ASCII letters and an object that is a JSON
// object; object shares data's bytes. It reports false for anything else,
// which apimachinery's serializer decodes the same way or rejects.
func parseJSONWatchEvent(data []byte) (eventType string, object []byte, ok bool) {
	rest, ok := bytes.CutPrefix(data, jsonWatchEventStart)
	if !ok {
		return "", nil, false
	}
	n := 0
	for n < len(rest) && (rest[n] >= 'A' && rest[n] <= 'Z' || rest[n] >= 'a' && rest[n] <= 'z') {
		n++
	}
	typ := rest[:n]
	if rest, ok = bytes.CutPrefix(rest[n:], jsonWatchEventObject); !ok || len(rest) == 0 || rest[0] != '{' {
		return "", nil, false
	}
	scan := objectScan{}
	if scan.run(rest) != objectClosed {
		return "", nil, false
	}
	object = rest[:scan.pos]
	rest = bytes.TrimRight(rest[scan.pos:], " \t\r\n")
	if len(rest) != 1 || rest[0] != '}' {
		return "", nil, false
	}
	return watchEventType(typ), object, true
}
