package wire

import (
	"bytes"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	restclientwatch "k8s.io/client-go/rest/watch"

	"github.com/kubetyped/informer/internal/prodpods"
	"github.com/kubetyped/informer/internal/testkit"
)

// protobufCodecs returns apimachinery's protobuf serializers over
// client-go's scheme and ours.
func protobufCodecs(t testing.TB) (theirs, ours runtime.SerializerInfo) {
	t.Helper()
	find := func(ns runtime.NegotiatedSerializer) runtime.SerializerInfo {
		info, ok := runtime.SerializerInfoForMediaType(ns.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
		if !ok {
			t.Fatal("no protobuf serializer")
		}
		return info
	}
	return find(serializer.NewCodecFactory(clientgoscheme.Scheme).WithoutConversion()), find(NewRESTCodecs(clientgoscheme.Scheme, nil, nil))
}

// encodeProtobufWithKind is obj in Kubernetes' protobuf encoding with its
// kind in the envelope, as the API server writes it.
func encodeProtobufWithKind(t testing.TB, obj runtime.Object) []byte {
	t.Helper()
	kinds, _, err := clientgoscheme.Scheme.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(kinds[0])
	return testkit.EncodeProtobuf(t, obj)
}

// decoded is what a Decode call returned, comparable with cmp.
type decoded struct {
	Obj runtime.Object
	GVK *schema.GroupVersionKind
	Err string
}

func decodeWith(d runtime.Decoder, data []byte, defaults *schema.GroupVersionKind, into runtime.Object) decoded {
	obj, gvk, err := d.Decode(data, defaults, into)
	got := decoded{Obj: obj, GVK: gvk}
	if err != nil {
		got.Err = err.Error()
	}
	return got
}

// TestProtobufDecoderDecodesAsAPIMachinery decodes production-like pods,
// a list of them, and malformed or partial envelopes, with and without an
// object to decode into and defaults, and compares every result and error
// with apimachinery's.
func TestProtobufDecoderDecodesAsAPIMachinery(t *testing.T) {
	theirs, ours := protobufCodecs(t)
	pods := prodpods.New(30)
	var inputs [][]byte
	for i := range pods {
		inputs = append(inputs, encodeProtobufWithKind(t, &pods[i]))
	}
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "next"}, Items: pods}
	inputs = append(inputs, encodeProtobufWithKind(t, list))
	noKind := &runtime.Unknown{Raw: []byte{}}
	noVersion := &runtime.Unknown{TypeMeta: runtime.TypeMeta{Kind: "Pod"}, Raw: []byte{}}
	for _, u := range []*runtime.Unknown{noKind, noVersion} {
		b, err := u.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, append([]byte(ProtobufMagic), b...))
	}
	inputs = append(inputs,
		nil, []byte(ProtobufMagic), []byte("not protobuf"),
		append([]byte(ProtobufMagic), 0x0a, 0x7f), // a field longer than the data
		append([]byte(ProtobufMagic), 0x2a, 0x00), // a field runtime.Unknown does not have
	)
	podGVK := corev1.SchemeGroupVersion.WithKind("Pod")
	for i, data := range inputs {
		for _, defaults := range []*schema.GroupVersionKind{nil, &podGVK} {
			for _, into := range []func() runtime.Object{
				func() runtime.Object { return nil },
				func() runtime.Object { return &corev1.Pod{} },
				func() runtime.Object { return &corev1.PodList{} },
				func() runtime.Object { return &runtime.Unknown{} },
			} {
				want := decodeWith(theirs.Serializer, data, defaults, into())
				got := decodeWith(ours.Serializer, data, defaults, into())
				if diff := testkit.DiffLarge(want, got); diff != "" {
					t.Errorf("input %d, defaults %v, into %T (-apimachinery +ours):\n%s", i, defaults, into(), diff)
				}
			}
		}
	}
}

// TestWatchEventDecoderKeepsEarlierObjects decodes a protobuf watch stream
// through client-go's watch decoder, with our codecs and with
// apimachinery's: the same events come out, and the objects of earlier
// events still equal the originals after later frames were read into the
// buffer their bytes came from.
func TestWatchEventDecoderKeepsEarlierObjects(t *testing.T) {
	theirs, _ := protobufCodecs(t)
	pods := prodpods.New(40)
	var stream bytes.Buffer
	frames := theirs.StreamSerializer.Framer.NewFrameWriter(&stream)
	var want []watch.Event
	writeEvent := func(eventType watch.EventType, obj runtime.Object) {
		var event bytes.Buffer
		if err := theirs.StreamSerializer.Serializer.Encode(&metav1.WatchEvent{Type: string(eventType), Object: runtime.RawExtension{Raw: encodeProtobufWithKind(t, obj)}}, &event); err != nil {
			t.Fatal(err)
		}
		if _, err := frames.Write(event.Bytes()); err != nil {
			t.Fatal(err)
		}
		want = append(want, watch.Event{Type: eventType, Object: obj.DeepCopyObject()})
	}
	for i := range pods {
		eventType := watch.Added
		if i%3 == 1 {
			eventType = watch.Modified
		}
		writeEvent(eventType, &pods[i])
	}
	writeEvent(watch.Bookmark, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "77", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}})
	writeEvent(watch.Error, &metav1.Status{Status: metav1.StatusFailure, Message: "too old", Reason: metav1.StatusReasonExpired, Code: 410})
	for _, codecs := range []struct {
		name string
		ns   runtime.NegotiatedSerializer
	}{
		{"apimachinery", serializer.NewCodecFactory(clientgoscheme.Scheme).WithoutConversion()},
		{"ours", NewRESTCodecs(clientgoscheme.Scheme, nil, nil)},
	} {
		objects, streaming, framer, err := runtime.NewClientNegotiator(codecs.ns, corev1.SchemeGroupVersion).StreamDecoder(runtime.ContentTypeProtobuf, nil)
		if err != nil {
			t.Fatal(err)
		}
		// A reader handing out a few bytes at a time, so that frames are
		// read in pieces into the decoder's buffer.
		reader := io.NopCloser(&smallReads{data: stream.Bytes(), n: 1000})
		decoder := restclientwatch.NewDecoder(streamingDecoder(reader, framer, streaming), objects)
		var got []watch.Event
		for {
			eventType, obj, err := decoder.Decode()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%s: event %d: %v", codecs.name, len(got), err)
			}
			got = append(got, watch.Event{Type: eventType, Object: obj})
		}
		if diff := testkit.DiffLarge(want, got); diff != "" {
			t.Errorf("%s: events (-want +got):\n%s", codecs.name, diff)
		}
	}
}

// streamingDecoder reads frames of r with framer and decodes them with s.
func streamingDecoder(r io.ReadCloser, framer runtime.Framer, s runtime.Serializer) streaming.Decoder {
	return streaming.NewDecoder(framer.NewFrameReader(r), s)
}

// smallReads reads at most n bytes of data at a time.
type smallReads struct {
	data []byte
	n    int
}

func (r *smallReads) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.n)], r.data)
	r.data = r.data[n:]
	return n, nil
}

// FuzzProtobufDecoder checks that on any bytes our protobuf decoders
// return what apimachinery's return (or fail as they fail), and never
// panic.
func FuzzProtobufDecoder(f *testing.F) {
	theirs, ours := protobufCodecs(f)
	pods := prodpods.New(2)
	pod := encodeProtobufWithKind(f, &pods[0])
	f.Add(pod)
	f.Add(pod[:len(pod)/2])
	f.Add(encodeProtobufWithKind(f, &corev1.PodList{Items: pods}))
	var event bytes.Buffer
	if err := theirs.StreamSerializer.Serializer.Encode(&metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: pod}}, &event); err != nil {
		f.Fatal(err)
	}
	f.Add(event.Bytes())
	f.Add([]byte(ProtobufMagic + "\x12\x02\x0a\xff"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, into := range []func() runtime.Object{
			func() runtime.Object { return nil },
			func() runtime.Object { return &corev1.Pod{} },
		} {
			want := decodeWith(theirs.Serializer, data, nil, into())
			got := decodeWith(ours.Serializer, data, nil, into())
			if diff := testkit.DiffLarge(want, got); diff != "" {
				t.Fatalf("object into %T (-apimachinery +ours):\n%s", into(), diff)
			}
		}
		want := decodeWith(theirs.StreamSerializer.Serializer, data, nil, &metav1.WatchEvent{})
		got := decodeWith(ours.StreamSerializer.Serializer, data, nil, &metav1.WatchEvent{})
		if diff := testkit.DiffLarge(want, got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("watch event (-apimachinery +ours):\n%s", diff)
		}
	})
}
