package replayserver

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"

	"github.com/kubetyped/informer/internal/prodpods"
)

// serializerEncode returns obj as apimachinery's protobuf serializer
// encodes it for a client (envelope included).
func serializerEncode(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	var buf bytes.Buffer
	if err := info.Serializer.Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// serializerEvent returns a watch event as kube-apiserver frames it.
func serializerEvent(t *testing.T, eventType watch.EventType, obj runtime.Object) []byte {
	t.Helper()
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	var buf bytes.Buffer
	enc := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(&buf), info.StreamSerializer.Serializer)
	if err := enc.Encode(&metav1.WatchEvent{Type: string(eventType), Object: runtime.RawExtension{Raw: serializerEncode(t, obj)}}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func testCluster(t *testing.T, pods int) *prodpods.Cluster {
	t.Helper()
	f, err := prodpods.NewFleet(prodpods.FleetOptions{Pods: pods})
	if err != nil {
		t.Fatal(err)
	}
	c, err := f.Cluster(0)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestFramingMatchesSerializers checks the hand-written framing byte for
// byte against apimachinery's serializers: a list page, a watch event, a
// bookmark and an error event.
func TestFramingMatchesSerializers(t *testing.T) {
	cl := testCluster(t, 20)
	// kube-apiserver's encoder sets the kind of what it encodes.
	list := corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}}
	list.ResourceVersion, list.Continue, list.RemainingItemCount = "1000000042", "tok", ptr.To[int64](7)
	itemsLen := 0
	for i := range 3 {
		pod, err := cl.Pod(i, 1, prodpods.MinResourceVersion+uint64(i))
		if err != nil {
			t.Fatal(err)
		}
		list.Items = append(list.Items, pod)
		itemsLen += fieldLen(cl.PodSize(i))
	}
	got := appendPageHead(nil, listMeta{resourceVersion: list.ResourceVersion, continueToken: "tok", remaining: 7, hasRemaining: true}, itemsLen)
	for i := range 3 {
		got = cl.AppendPod(appendItemHead(got, cl.PodSize(i)), i, 1, prodpods.MinResourceVersion+uint64(i))
	}
	got = appendUnknownTail(got)
	if want := serializerEncode(t, &list); !bytes.Equal(got, want) {
		t.Errorf("list page: %d bytes differ from the serializer's %d", len(got), len(want))
	}

	pod := list.Items[1]
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	ev := appendEventHead(nil, eventModified, "Pod", cl.PodSize(1))
	ev = appendUnknownTail(cl.AppendPod(ev, 1, 1, prodpods.MinResourceVersion+1))
	if want := serializerEvent(t, watch.Modified, &pod); !bytes.Equal(ev, want) {
		t.Errorf("watch event: %d bytes differ from the serializer's %d", len(ev), len(want))
	}

	bm, err := bookmarkEvent("1000000099", true)
	if err != nil {
		t.Fatal(err)
	}
	want := serializerEvent(t, watch.Bookmark, &corev1.Pod{TypeMeta: pod.TypeMeta, ObjectMeta: metav1.ObjectMeta{ResourceVersion: "1000000099",
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}})
	if !bytes.Equal(bm, want) {
		t.Errorf("bookmark: %q differs from the serializer's %q", bm, want)
	}

	st := tooOld(5)
	errEv, err := errorEvent(st)
	if err != nil {
		t.Fatal(err)
	}
	if want := serializerEvent(t, watch.Error, st); !bytes.Equal(errEv, want) {
		t.Errorf("error event: %q differs from the serializer's %q", errEv, want)
	}
	if diff := cmp.Diff(int32(410), st.Code); diff != "" {
		t.Error(diff)
	}
}
