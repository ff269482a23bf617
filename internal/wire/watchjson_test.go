package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	apijson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/watch"
	restclientwatch "k8s.io/client-go/rest/watch"

	"github.com/kubetyped/informer/internal/crdtypes"
	"github.com/kubetyped/informer/internal/testkit"
)

// workloadJSONTypes returns a scheme of W8's Workloads and the typed JSON
// decoder's types of Workload and WorkloadList.
func workloadJSONTypes(t testing.TB) (*runtime.Scheme, *TypedJSONTypes) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := crdtypes.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	types := NewTypedJSONTypes(scheme, reflect.TypeFor[*crdtypes.Workload](), reflect.TypeFor[*crdtypes.WorkloadList]())
	if types == nil {
		t.Fatal("the typed JSON decoder cannot decode Workloads")
	}
	return scheme, types
}

// workloadStreamCodecs returns apimachinery's codecs of Workloads and ours
// (NewRESTCodecs with the typed JSON decoder, so with NewJSONWatchStream).
func workloadStreamCodecs(t testing.TB) (theirs, ours runtime.NegotiatedSerializer) {
	t.Helper()
	scheme, types := workloadJSONTypes(t)
	return serializer.NewCodecFactory(scheme).WithoutConversion(), NewRESTCodecs(scheme, NewInternTable(), types)
}

// watchOutcome is what client-go's watch decoder read from a stream: its
// events, then how it ended (the error's text, or io.EOF and
// io.ErrUnexpectedEOF by name: client-go's watch ends quietly on those and
// reports any other error as an error event).
type watchOutcome struct {
	Events []watch.Event
	End    string
}

// decodeWatchStream decodes stream as a REST client's watch does with ns,
// reading at most chunk bytes at a time from the stream.
func decodeWatchStream(t testing.TB, ns runtime.NegotiatedSerializer, stream []byte, chunk int) watchOutcome {
	t.Helper()
	objects, streaming, framer, err := runtime.NewClientNegotiator(ns, crdtypes.GroupVersion).StreamDecoder(runtime.ContentTypeJSON, nil)
	if err != nil {
		t.Fatal(err)
	}
	decoder := restclientwatch.NewDecoder(streamingDecoder(io.NopCloser(&smallReads{data: stream, n: chunk}), framer, streaming), objects)
	var out watchOutcome
	for {
		eventType, obj, err := decoder.Decode()
		switch {
		case errors.Is(err, io.EOF):
			out.End = "EOF"
		case errors.Is(err, io.ErrUnexpectedEOF):
			out.End = "unexpected EOF"
		case err != nil:
			out.End = "error"
		default:
			out.Events = append(out.Events, watch.Event{Type: eventType, Object: obj})
			continue
		}
		return out
	}
}

// workloadEvents is a watch stream of Workloads as the API server writes
// it, each event on a line of its own.
func workloadEvents(t testing.TB, n int) []byte {
	t.Helper()
	var stream bytes.Buffer
	for i, w := range crdtypes.New(n) {
		w.TypeMeta = metav1.TypeMeta{APIVersion: crdtypes.GroupVersion.String(), Kind: "Workload"}
		object, err := json.Marshal(&w)
		if err != nil {
			t.Fatal(err)
		}
		eventType := watch.Added
		if i%3 == 1 {
			eventType = watch.Modified
		}
		event, err := json.Marshal(metav1.WatchEvent{Type: string(eventType), Object: runtime.RawExtension{Raw: object}})
		if err != nil {
			t.Fatal(err)
		}
		stream.Write(event)
		stream.WriteByte('\n')
	}
	return stream.Bytes()
}

// TestJSONWatchStreamDecodesAsAPIMachinery reads watch streams of
// Workloads (whole, cut short, with events of other shapes than the API
// server's, malformed) with client-go's watch decoder over apimachinery's
// codecs and over ours, in reads of a few sizes, and compares the events
// and how each stream ended.
func TestJSONWatchStreamDecodesAsAPIMachinery(t *testing.T) {
	theirs, ours := workloadStreamCodecs(t)
	events := workloadEvents(t, 12)
	status := `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old","reason":"Expired","code":410}}`
	bookmark := `{"type":"BOOKMARK","object":{"kind":"Workload","apiVersion":"kueue.bench.kubetyped.io/v1beta1","metadata":{"resourceVersion":"77","annotations":{"k8s.io/initial-events-end":"true"}}}}`
	first := string(events[:bytes.IndexByte(events, '\n')])
	streams := map[string]string{
		"events":                  string(events) + bookmark + "\n" + status,
		"empty":                   "",
		"whitespace":              " \n\t\r ",
		"no newlines":             first + first + bookmark,
		"spaces in the envelope":  `{ "type" : "ADDED" , "object" : ` + first[len(`{"type":"ADDED","object":`):],
		"object first":            `{"object":{"kind":"Workload","apiVersion":"kueue.bench.kubetyped.io/v1beta1","metadata":{"name":"a"}},"type":"ADDED"}`,
		"another key":             first[:len(first)-1] + `,"x":1}`,
		"type twice":              first[:len(first)-1] + `,"type":"DELETED"}`,
		"escaped type":            `{"type":"ADD\u0045D","object":{"kind":"Workload","apiVersion":"kueue.bench.kubetyped.io/v1beta1","metadata":{"name":"a"}}}`,
		"empty type":              `{"type":"","object":{"kind":"Workload","apiVersion":"kueue.bench.kubetyped.io/v1beta1","metadata":{"name":"a"}}}`,
		"null object":             `{"type":"ADDED","object":null}`,
		"string object":           `{"type":"ADDED","object":"x"}`,
		"quotes and brackets":     `{"type":"ADDED","object":{"kind":"Workload","apiVersion":"kueue.bench.kubetyped.io/v1beta1","metadata":{"name":"a\"}{[\\","labels":{"b\\\\":"]}\\\"{"}}}}` + "\n" + first,
		"cut in a string":         first[:len(first)/2],
		"cut, then events":        first[:len(first)/2] + "\n" + first + "\n" + first,
		"cut after a value":       first[:strings.Index(first, `"name":`)+20] + "\n" + first,
		"indented":                "{\n  \"type\": \"ADDED\",\n  \"object\": {\"kind\":\"Workload\",\"apiVersion\":\"kueue.bench.kubetyped.io/v1beta1\",\"metadata\":{\"name\":\"a\"}}\n}\n" + first,
		"blank lines":             "\n \n" + first + "\n\r\n\n" + first + "\n",
		"cut after a backslash":   `{"type":"ADDED","object":{"metadata":{"name":"a\`,
		"cut in a literal":        first + "\ntru",
		"a literal":               "12",
		"a literal, then events":  "12 " + first,
		"closing bracket":         "}" + first,
		"unbalanced":              `{"type":"ADDED","object":{"metadata":{"name":"a"}}}}` + first,
		"missing comma":           `{"type":"ADDED" "object":{}}` + first,
		"malformed object":        `{"type":"ADDED","object":{"metadata":{"name":"a",}}}` + "\n" + first,
		"malformed object, cut":   `{"type":"ADDED","object":{"metadata":{"name":"a",}`,
		"array":                   `[{"type":"ADDED"}]`,
		"not JSON":                "<html>",
		"two values, no space":    `{"type":"ADDED","object":{"kind":"Workload","apiVersion":"kueue.bench.kubetyped.io/v1beta1","metadata":{"name":"a"}}}` + `{"type":"DELETED","object":{"kind":"Workload","apiVersion":"kueue.bench.kubetyped.io/v1beta1","metadata":{"name":"a"}}}`,
		"an event after an error": status + "\n" + first,
	}
	for name, stream := range streams {
		for _, chunk := range []int{1, 7, 1000, 1 << 20} {
			want := decodeWatchStream(t, theirs, []byte(stream), chunk)
			got := decodeWatchStream(t, ours, []byte(stream), chunk)
			if diff := testkit.DiffLarge(want, got); diff != "" {
				t.Errorf("%s, reads of %d bytes (-apimachinery +ours):\n%s", name, chunk, diff)
			}
		}
	}
	if got := decodeWatchStream(t, ours, []byte(streams["events"]), 1000); len(got.Events) != 14 || got.End != "EOF" {
		t.Errorf("the events stream decoded to %d events ending with %s, want 14 and EOF", len(got.Events), got.End)
	}
}

// TestJSONFrameReaderShortBuffer reads values into buffers too small for
// them, as apimachinery's streaming decoder does before growing its
// buffer: each Read fills the buffer and returns io.ErrShortBuffer until
// the value's last bytes; values after the first two are not one a line,
// and are read by apimachinery's framer.
func TestJSONFrameReaderShortBuffer(t *testing.T) {
	values := []string{`{"a":"` + string(bytes.Repeat([]byte("x"), 100)) + `"}`, `[1,2,{"b":[]}]`, `"s"`, `{}`}
	stream := io.NopCloser(bytes.NewReader([]byte(values[0] + "\n" + values[1] + values[2] + " " + values[3])))
	r := jsonFramer{Framer: apijson.Framer}.NewFrameReader(stream)
	var got []string
	var value []byte
	buf := make([]byte, 9)
	for {
		n, err := r.Read(buf)
		value = append(value, buf[:n]...)
		if errors.Is(err, io.ErrShortBuffer) {
			continue
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(value))
		value = nil
	}
	if diff := cmp.Diff(values, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}

// FuzzJSONWatchStream checks that on any bytes client-go's watch decoder
// reads the same events over our codecs as over apimachinery's, and ends
// the same way.
func FuzzJSONWatchStream(f *testing.F) {
	theirs, ours := workloadStreamCodecs(f)
	events := workloadEvents(f, 2)
	f.Add(events, uint16(1000))
	f.Add(events[:len(events)/2], uint16(7))
	f.Add([]byte(`{"type":"ADDED","object":{"metadata":{"name":"a\"}"}}}`+"\n"), uint16(3))
	f.Add([]byte(`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","code":410}}`), uint16(50))
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint16) {
		n := int(chunk%4096) + 1
		want := decodeWatchStream(t, theirs, stream, n)
		got := decodeWatchStream(t, ours, stream, n)
		if diff := testkit.DiffLarge(want, got); diff != "" {
			t.Errorf("(-apimachinery +ours):\n%s", diff)
		}
	})
}

// TestParseJSONWatchEvent checks which envelopes the event decoder reads
// in place (the API server's) and which it leaves to apimachinery.
func TestParseJSONWatchEvent(t *testing.T) {
	type parsed struct {
		Type   string
		Object string
		OK     bool
	}
	for _, tc := range []struct {
		event string
		want  parsed
	}{
		{`{"type":"ADDED","object":{"a":"}\"{"}}`, parsed{"ADDED", `{"a":"}\"{"}`, true}},
		{`{"type":"BOOKMARK","object":{}}` + "\n", parsed{"BOOKMARK", `{}`, true}},
		{`{"type":"","object":{}}`, parsed{"", `{}`, true}},
		{`{"type":"ADDED","object":{}} x`, parsed{}},
		{`{"type":"ADDED","object":{},"x":1}`, parsed{}},
		{`{"type":"ADDED","object":null}`, parsed{}},
		{`{"type":"ADDED","object":[]}`, parsed{}},
		{`{"type":"ADD ED","object":{}}`, parsed{}},
		{`{"type":"ADDED","object":{}`, parsed{}},
		{`{"object":{},"type":"ADDED"}`, parsed{}},
	} {
		typ, object, ok := parseJSONWatchEvent([]byte(tc.event))
		if diff := cmp.Diff(tc.want, parsed{typ, string(object), ok}); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.event, diff)
		}
	}
	_, ours := workloadStreamCodecs(t)
	info, ok := runtime.SerializerInfoForMediaType(ours.SupportedMediaTypes(), runtime.ContentTypeJSON)
	if !ok || info.StreamSerializer == nil {
		t.Fatal("no JSON stream serializer")
	}
	if _, ok := info.StreamSerializer.Framer.(jsonFramer); !ok {
		t.Errorf("the JSON stream's framer is a %T, want this package's", info.StreamSerializer.Framer)
	}
	if _, ok := info.StreamSerializer.Serializer.(*jsonWatchEventDecoder); !ok {
		t.Errorf("the JSON stream's serializer is a %T, want this package's", info.StreamSerializer.Serializer)
	}
}
