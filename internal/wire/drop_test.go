package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/kubetyped/informer/internal/prodpods"
	"github.com/kubetyped/informer/internal/testkit"
)

// wirePodDropFields are the paths the wire tests drop; wireClear clears
// them from a decoded pod.
var wirePodDropFields = []string{"metadata.managedFields", "metadata.annotations[drop.example.com/a]", "spec.containers.env", "status.conditions"}

func wireClear(pod *corev1.Pod) {
	pod.ManagedFields = nil
	delete(pod.Annotations, "drop.example.com/a")
	for i := range pod.Spec.Containers {
		pod.Spec.Containers[i].Env = nil
	}
	pod.Status.Conditions = nil
}

func wireTransport(tb testing.TB) *DropFieldsTransport {
	tb.Helper()
	t, err := NewDropFieldsTransport(wirePodDropFields, reflect.TypeFor[*corev1.Pod](), reflect.TypeFor[*corev1.PodList](), true, "v1/pods")
	if err != nil {
		tb.Fatal(err)
	}
	return t
}

// decodeProtobufPod decodes a pod in Kubernetes' protobuf encoding.
func decodeProtobufPod(data []byte) (*corev1.Pod, error) {
	obj, _, err := protobuf.NewSerializer(clientgoscheme.Scheme, clientgoscheme.Scheme).Decode(data, nil, &corev1.Pod{})
	if err != nil {
		return nil, err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, errors.New("not a pod")
	}
	return pod, nil
}

// FuzzDropProtobuf checks that dropping fields from any bytes never
// panics, leaves bytes it rejects unchanged, and that whatever decodes as a
// pod decodes after dropping as the same pod without the dropped fields.
func FuzzDropProtobuf(f *testing.F) {
	pod := testkit.EncodeProtobuf(f, testkit.WirePod())
	f.Add(pod)
	f.Add(pod[:len(pod)/2])
	f.Add(testkit.EncodeProtobuf(f, &corev1.Pod{}))
	f.Add([]byte(ProtobufMagic))
	f.Add([]byte(ProtobufMagic + "\x12\x02\x0a\xff"))
	tree := wireTransport(f).protoEvent.sub[0].sub[0] // one object: magic, envelope, pod
	f.Fuzz(func(t *testing.T, data []byte) {
		in := bytes.Clone(data)
		var p protoRewriter
		out, err := p.drop(data, tree)
		if err != nil {
			if !bytes.Equal(out, in) || !bytes.Equal(data, in) {
				t.Fatalf("rejected input changed: %v", err)
			}
			return
		}
		want, err := decodeProtobufPod(in)
		if err != nil {
			return
		}
		got, err := decodeProtobufPod(out)
		if err != nil {
			t.Fatalf("the input decodes, the output does not: %v", err)
		}
		wireClear(want)
		if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("(-full decode with the fields cleared +projected):\n%s", diff)
		}
	})
}

// FuzzDropJSON is FuzzDropProtobuf for JSON, decoded case-sensitively as
// client-go does.
func FuzzDropJSON(f *testing.F) {
	pod, err := utiljson.Marshal(testkit.WirePod())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(pod)
	f.Add(pod[:len(pod)/2])
	f.Add([]byte(`{"metadata":{"managedFields":[],"annotations":{"drop.example.com/a":"x"}} , "status":{"conditions":null,"phase":"Running"}}`))
	f.Add([]byte(`{"metadata":{"annotations":{"drop.example.com/a":"x","drop.example.com/a":"y"}},"spec":{"containers":[1,{"env":[]},{"env":[{"name":"\"]}"}]}]}}`))
	f.Add([]byte(`{"st\u0061tus":{"conditions":[{}]}}`))
	f.Add([]byte(`[`))
	tree, err := compileDropFields(wirePodDropFields, reflect.TypeFor[corev1.Pod](), true)
	if err != nil {
		f.Fatal(err)
	}
	var filter jsonFilter
	f.Fuzz(func(t *testing.T, data []byte) {
		in := bytes.Clone(data)
		out, err := filter.drop(data, tree, false)
		if err != nil {
			if !bytes.Equal(out, in) || !bytes.Equal(data, in) {
				t.Fatalf("rejected input changed: %v", err)
			}
			return
		}
		var want, got corev1.Pod
		if utiljson.Unmarshal(in, &want) != nil {
			return
		}
		if err := utiljson.Unmarshal(out, &got); err != nil {
			t.Fatalf("the input decodes, the output %q does not: %v", out, err)
		}
		wireClear(&want)
		if diff := cmp.Diff(&want, &got, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("(-full decode with the fields cleared +projected):\n%s", diff)
		}
	})
}

// protobufWatchFrame is one event of a protobuf watch stream.
func protobufWatchFrame(tb testing.TB, eventType string, obj runtime.Object) []byte {
	tb.Helper()
	event := metav1.WatchEvent{Type: eventType, Object: runtime.RawExtension{Raw: testkit.EncodeProtobuf(tb, obj)}}
	data, err := event.Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(data))), data...)
}

func TestDropFieldsWatchBody(t *testing.T) {
	pod := testkit.WirePod()
	status := &metav1.Status{Status: metav1.StatusFailure, Message: "gone", Code: 410}
	// A bookmark's annotations may say that a streaming list's initial
	// events end: it is passed on whole, as errors are.
	bookmark := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9", Annotations: map[string]string{"drop.example.com/a": "true"}}}
	protoStream := slices.Concat(protobufWatchFrame(t, "ADDED", pod), protobufWatchFrame(t, "ERROR", status), protobufWatchFrame(t, "BOOKMARK", bookmark), protobufWatchFrame(t, "MODIFIED", pod))
	jsonPod, _ := utiljson.Marshal(pod)
	jsonStatus, _ := utiljson.Marshal(status)
	jsonBookmark, _ := utiljson.Marshal(bookmark)
	jsonStream := []byte(`{"type":"ADDED","object":` + string(jsonPod) + "}\n" +
		`{"type":"ERROR","object":` + string(jsonStatus) + "}\n" +
		`{"type":"BOOKMARK","object":` + string(jsonBookmark) + "}\n" +
		`{"object":` + string(jsonPod) + `,"type":"MODIFIED"}` + "\n")
	projected := testkit.WirePod()
	wireClear(projected)
	projectedJSON, _ := utiljson.Marshal(projected)
	wantJSON := `{"type":"ADDED","object":` + string(projectedJSON) + "}\n" +
		`{"type":"ERROR","object":` + string(jsonStatus) + "}\n" +
		`{"type":"BOOKMARK","object":` + string(jsonBookmark) + "}\n" +
		`{"object":` + string(projectedJSON) + `,"type":"MODIFIED"}` + "\n"
	wantProto := slices.Concat(protobufWatchFrame(t, "ADDED", projected), protobufWatchFrame(t, "ERROR", status), protobufWatchFrame(t, "BOOKMARK", bookmark), protobufWatchFrame(t, "MODIFIED", projected))

	for _, tc := range []struct {
		name     string
		protobuf bool
		in       []byte
		want     []byte
	}{
		{"protobuf", true, protoStream, wantProto},
		{"json", false, jsonStream, []byte(wantJSON)},
	} {
		for _, reader := range []struct {
			name string
			wrap func(io.Reader) io.Reader
		}{
			{"whole", func(r io.Reader) io.Reader { return r }},
			{"byte by byte", iotest.OneByteReader},
			{"half", iotest.HalfReader},
		} {
			t.Run(tc.name+"/"+reader.name, func(t *testing.T) {
				tr := wireTransport(t)
				tree := tr.jsonEvent
				if tc.protobuf {
					tree = tr.protoEvent
				}
				body := &dropFieldsWatchBody{src: io.NopCloser(reader.wrap(bytes.NewReader(bytes.Clone(tc.in)))), t: tr, tree: tree, protobuf: tc.protobuf}
				got, err := io.ReadAll(iotest.OneByteReader(body))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, tc.want) {
					t.Errorf("filtered stream:\n got %q\nwant %q", got, tc.want)
				}
				if n := tr.malformed.Load(); n != 0 {
					t.Errorf("%d malformed", n)
				}
			})
		}
	}
}

func TestDropFieldsWatchBodyPassesMalformedEventsOn(t *testing.T) {
	good := protobufWatchFrame(t, "ADDED", testkit.WirePod())
	bad := binary.BigEndian.AppendUint32(nil, 3)
	bad = append(bad, 0x12, 0x05, 0x0a) // an object field longer than the event
	truncated := good[:len(good)-3]
	projected := testkit.WirePod()
	wireClear(projected)
	want := slices.Concat(bad, protobufWatchFrame(t, "ADDED", projected), truncated)
	tr := wireTransport(t)
	body := &dropFieldsWatchBody{src: io.NopCloser(bytes.NewReader(slices.Concat(bad, good, truncated))), t: tr, tree: tr.protoEvent, protobuf: true}
	got, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("filtered stream:\n got %q\nwant %q", got, want)
	}
	if n := tr.malformed.Load(); n != 1 {
		t.Errorf("%d malformed events counted, want 1", n)
	}

	// A JSON stream of something else than objects is passed on whole.
	tr = wireTransport(t)
	in := `{"type":"ADDED","object":{}}` + "\n" + `["not an event"] {"type":"ADDED","object":{"metadata":{"managedFields":[]}}}`
	body = &dropFieldsWatchBody{src: io.NopCloser(strings.NewReader(in)), t: tr, tree: tr.jsonEvent}
	got, err = io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != in {
		t.Errorf("filtered stream:\n got %q\nwant %q", got, in)
	}
	if n := tr.malformed.Load(); n != 1 {
		t.Errorf("%d malformed counted, want 1", n)
	}
}

func TestDropFieldsTransportPassesAMalformedListOn(t *testing.T) {
	body := []byte(ProtobufMagic + "\x12\x05\x12\x10")
	tr := wireTransport(t)
	client := tr.Wrap(&http.Client{Transport: testkit.RoundTripFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{
			StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/vnd.kubernetes.protobuf"}},
			Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req,
		}, nil
	})})
	resp, err := client.Get("http://server/api/v1/pods")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, body) {
		t.Errorf("body = %q, want it unchanged: %q", got, body)
	}
	if n := tr.malformed.Load(); n != 1 {
		t.Errorf("%d malformed counted, want 1", n)
	}
}

// BenchmarkDropProtobuf drops wirePodDropFields from a pod's watch event,
// in place, as the watch body does with each event.
func BenchmarkDropProtobuf(b *testing.B) {
	frame := protobufWatchFrame(b, "ADDED", testkit.WirePod())[4:]
	tree := wireTransport(b).protoEvent
	buf := make([]byte, len(frame))
	var p protoRewriter
	b.ReportAllocs()
	for b.Loop() {
		copy(buf, frame)
		if _, err := p.drop(buf, tree); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDropJSON is BenchmarkDropProtobuf for a JSON watch event.
func BenchmarkDropJSON(b *testing.B) {
	pod, err := utiljson.Marshal(testkit.WirePod())
	if err != nil {
		b.Fatal(err)
	}
	frame := []byte(`{"type":"ADDED","object":` + string(pod) + `}`)
	tree := wireTransport(b).jsonEvent
	buf := make([]byte, len(frame))
	var filter jsonFilter
	b.ReportAllocs()
	for b.Loop() {
		copy(buf, frame)
		if _, err := filter.drop(buf, tree, true); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDropFieldsWatchBodyPassesACutJSONEventOnAtOnce feeds JSON watch
// streams whose first event was cut short before the newline that ends
// every event (the API server writes one event a line), followed by whole
// events, on a connection that stays open. The body must give the bytes up
// whole at once, logged and counted, for the client's decoder to reject as
// it would without DropFields (the reflector then watches again): it held
// them back, waiting for braces that never closed, until 64 MiB came or the
// server ended the watch minutes later.
func TestDropFieldsWatchBodyPassesACutJSONEventOnAtOnce(t *testing.T) {
	pod, err := utiljson.Marshal(testkit.WirePod())
	if err != nil {
		t.Fatal(err)
	}
	event := `{"type":"ADDED","object":` + string(pod) + "}\n"
	afterName := strings.Index(event, `"name":"p"`) + len(`"name":"p"`)
	for _, tc := range []struct{ name, cut string }{
		{"in a string", event[:afterName-1]},
		{"after a value", event[:afterName]},
		{"after a colon", `{"type":"ADDED","object":`},
		{"after an escape", `{"type":"ADDED","object":{"metadata":{"name":"a\`},
		{"after braces in a string", `{"type":"ADDED","object":{"metadata":{"name":"}]\"}}"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.cut + "\n" + event + event
			src, server := io.Pipe()
			t.Cleanup(func() { server.Close() })
			go func() { _, _ = server.Write([]byte(in)) }()
			tr := wireTransport(t)
			body := &dropFieldsWatchBody{src: src, t: tr, tree: tr.jsonEvent}
			read := make(chan []byte)
			go func() {
				got := make([]byte, len(in))
				n, _ := io.ReadFull(body, got)
				read <- got[:n]
			}()
			var got []byte
			select {
			case got = <-read:
			case <-time.After(testkit.Timeout):
				t.Fatal("the body still holds the cut event back")
			}
			if diff := cmp.Diff(in, string(got)); diff != "" {
				t.Errorf("passed on (-want the stream whole +got):\n%s", diff)
			}
			if n := tr.malformed.Load(); n != 1 {
				t.Errorf("%d malformed counted, want 1", n)
			}
			// What client-go's JSON framer does with the bytes: fail.
			decoder := json.NewDecoder(bytes.NewReader(got))
			var syntaxErr *json.SyntaxError
			for err == nil {
				var frame json.RawMessage
				err = decoder.Decode(&frame)
			}
			if !errors.As(err, &syntaxErr) {
				t.Errorf("decoding what was passed on: %v, want a syntax error", err)
			}
		})
	}
}

// TestDropFieldsWatchBodyPassesPrettyJSONOn checks that a JSON watch
// stream with newlines inside its events, which the API server never
// writes but client-go's decoder accepts, is passed on whole rather than
// rejected.
func TestDropFieldsWatchBodyPassesPrettyJSONOn(t *testing.T) {
	event := metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Object: testkit.WirePod()}}
	pretty, err := json.MarshalIndent(event, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	in := string(pretty) + "\n" + string(pretty) + "\n"
	tr := wireTransport(t)
	body := &dropFieldsWatchBody{src: io.NopCloser(strings.NewReader(in)), t: tr, tree: tr.jsonEvent}
	got, err := io.ReadAll(body)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, string(got)); diff != "" {
		t.Errorf("passed on (-want the stream whole +got):\n%s", diff)
	}
	if n := tr.malformed.Load(); n != 1 {
		t.Errorf("%d malformed counted, want 1", n)
	}
}

// BenchmarkJSONSplitter finds the ends of the JSON watch events of
// production-like pods, as the watch body does before filtering each.
func BenchmarkJSONSplitter(b *testing.B) {
	var stream []byte
	for _, pod := range prodpods.New(20) {
		raw, err := utiljson.Marshal(&pod)
		if err != nil {
			b.Fatal(err)
		}
		stream = append(append(append(stream, `{"type":"MODIFIED","object":`...), raw...), "}\n"...)
	}
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		var s jsonSplitter
		for pending := stream; ; {
			end, err := s.end(pending)
			if err != nil {
				b.Fatal(err)
			}
			if end < 0 {
				break
			}
			pending = pending[end:]
		}
	}
}

// longEventPod is a pod whose JSON is about size bytes: a long annotation
// beside the fields wirePodDropFields drops.
func longEventPod(size int) *corev1.Pod {
	pod := testkit.WirePod()
	pod.Annotations["long.example.com/value"] = strings.Repeat("x", size)
	return pod
}

// chunkReader returns at most n bytes per Read, as a network connection
// does.
type chunkReader struct {
	r io.Reader
	n int
}

func (c chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// TestDropFieldsWatchBodyLongEvents: events of several MiB between short
// ones, read in pieces of network size or less, come out as each event
// filtered whole does; the buffer grown for a long event is let go after
// it.
func TestDropFieldsWatchBodyLongEvents(t *testing.T) {
	short, long := testkit.WirePod(), longEventPod(3<<20)
	var jsonStream, wantJSON, protoStream, wantProto []byte
	for _, pod := range []*corev1.Pod{short, long, short, long, long, short} {
		data, err := utiljson.Marshal(pod)
		if err != nil {
			t.Fatal(err)
		}
		event := []byte(`{"type":"MODIFIED","object":` + string(data) + "}\n")
		jsonStream = append(jsonStream, event...)
		var f jsonFilter
		filtered, err := f.drop(bytes.Clone(event), wireTransport(t).jsonEvent, true)
		if err != nil {
			t.Fatal(err)
		}
		wantJSON = append(wantJSON, filtered...)
		frame := protobufWatchFrame(t, "MODIFIED", pod)
		protoStream = append(protoStream, frame...)
		projected := pod.DeepCopy()
		wireClear(projected)
		wantProto = append(wantProto, protobufWatchFrame(t, "MODIFIED", projected)...)
	}
	for _, tc := range []struct {
		name     string
		protobuf bool
		in, want []byte
	}{
		{"json", false, jsonStream, wantJSON},
		{"protobuf", true, protoStream, wantProto},
	} {
		for _, chunk := range []int{watchReadSize, 1000, 1 << 20} {
			tr := wireTransport(t)
			tree := tr.jsonEvent
			if tc.protobuf {
				tree = tr.protoEvent
			}
			body := &dropFieldsWatchBody{src: io.NopCloser(chunkReader{bytes.NewReader(tc.in), chunk}), t: tr, tree: tree, protobuf: tc.protobuf}
			var got []byte
			buf := make([]byte, 4096)
			for {
				n, err := body.Read(buf)
				got = append(got, buf[:n]...)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(got, tc.want) {
				t.Errorf("%s, reads of %d bytes: the filtered stream differs from each event filtered whole (%d bytes, want %d)", tc.name, chunk, len(got), len(tc.want))
			}
			if n := tr.malformed.Load(); n != 0 {
				t.Errorf("%s, reads of %d bytes: %d malformed", tc.name, chunk, n)
			}
			if c := cap(body.buf); c > maxIdleWatchBuffer {
				t.Errorf("%s, reads of %d bytes: a buffer of %d bytes kept after the stream's short last event, want at most %d", tc.name, chunk, c, maxIdleWatchBuffer)
			}
		}
	}
}

// BenchmarkDropFieldsWatchBodyLongEvent filters one long JSON (or
// protobuf) watch event read in pieces of network size: the cost per
// byte (ns/op divided by the bytes, or MB/s) must not grow with the
// event's length.
func BenchmarkDropFieldsWatchBodyLongEvent(b *testing.B) {
	for _, size := range []int{2 << 20, 16 << 20} {
		pod := longEventPod(size)
		data, err := utiljson.Marshal(pod)
		if err != nil {
			b.Fatal(err)
		}
		for _, tc := range []struct {
			name     string
			protobuf bool
			event    []byte
		}{
			{"json", false, []byte(`{"type":"MODIFIED","object":` + string(data) + "}\n")},
			{"protobuf", true, protobufWatchFrame(b, "MODIFIED", pod)},
		} {
			b.Run(tc.name+"/"+strconv.Itoa(size>>20)+"MiB", func(b *testing.B) {
				tr := wireTransport(b)
				tree := tr.jsonEvent
				if tc.protobuf {
					tree = tr.protoEvent
				}
				in := make([]byte, len(tc.event))
				out := make([]byte, watchReadSize)
				b.SetBytes(int64(len(tc.event)))
				b.ReportAllocs()
				for b.Loop() {
					copy(in, tc.event)
					body := &dropFieldsWatchBody{src: io.NopCloser(chunkReader{bytes.NewReader(in), watchReadSize}), t: tr, tree: tree, protobuf: tc.protobuf}
					for {
						if _, err := body.Read(out); err == io.EOF {
							break
						} else if err != nil {
							b.Fatal(err)
						}
					}
				}
			})
		}
	}
}

// TestDropFieldsWatchBodyLongEventGrowsGeometrically: the buffer of a
// JSON watch event, whose length is known only at its end, grows by
// doubling: an 8-MiB event read 32 KiB at a time takes a few dozen
// allocations, not one per read (256, each copying what was read so far:
// a cost quadratic in the event's length).
func TestDropFieldsWatchBodyLongEventGrowsGeometrically(t *testing.T) {
	data, err := utiljson.Marshal(longEventPod(8 << 20))
	if err != nil {
		t.Fatal(err)
	}
	event := []byte(`{"type":"MODIFIED","object":` + string(data) + "}\n")
	tr := wireTransport(t)
	in := make([]byte, len(event))
	out := make([]byte, watchReadSize)
	allocs := testing.AllocsPerRun(3, func() {
		copy(in, event)
		body := &dropFieldsWatchBody{src: io.NopCloser(chunkReader{bytes.NewReader(in), watchReadSize}), t: tr, tree: tr.jsonEvent}
		for {
			if _, err := body.Read(out); err == io.EOF {
				break
			} else if err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs > 40 {
		t.Errorf("%v allocations to filter one event of %d bytes, want at most 40", allocs, len(event))
	}
}
