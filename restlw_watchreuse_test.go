package informer

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer/internal/testkit"
)

// encodeWatchStream returns a protobuf watch body of events of pods,
// framed as kube-apiserver frames them (each object's kind set).
func encodeWatchStream(t *testing.T, events []watch.Event) []byte {
	t.Helper()
	info, _ := runtime.SerializerInfoForMediaType(clientgoscheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	var buf bytes.Buffer
	enc := streaming.NewEncoder(info.StreamSerializer.Framer.NewFrameWriter(&buf), info.StreamSerializer.Serializer)
	for _, ev := range events {
		obj := ev.Object.DeepCopyObject()
		obj.GetObjectKind().SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Pod"))
		raw := testkit.EncodeProtobuf(t, obj)
		if err := enc.Encode(&metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: raw}}); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// TestRESTStreamingListSkipsCachedObjects streams initial events of which
// the cache holds some objects at the streamed resource version, some at
// another, and not others: the watch carries the cached objects for the
// first (they bear a mark no streamed pod has, so a decoded copy would
// show), decoded objects for the others, and after the bookmark ending the
// initial events it decodes everything, even an object cached at its
// version. Without the lookup, or for a watch that is not a streaming
// list, everything is decoded.
func TestRESTStreamingListSkipsCachedObjects(t *testing.T) {
	var pods []*corev1.Pod
	var events []watch.Event
	cached := map[ObjectName]*corev1.Pod{}
	for i := range 10 {
		pod := testkit.WirePod()
		pod.Name, pod.ResourceVersion = fmt.Sprintf("p%d", i), "15"
		pods = append(pods, pod)
		events = append(events, watch.Event{Type: watch.Added, Object: pod})
		copy := pod.DeepCopy()
		copy.Labels = map[string]string{"cached": "yes"}
		switch {
		case i < 4:
			cached[NameOf(copy)] = copy
		case i < 6:
			copy.ResourceVersion = "9"
			cached[NameOf(copy)] = copy
		}
	}
	events = append(events,
		watch.Event{Type: watch.Bookmark, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "20",
			Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}},
		watch.Event{Type: watch.Added, Object: pods[0]})
	body := encodeWatchStream(t, events)
	lw, err := newRESTListerWatcher[*corev1.Pod](&rest.Config{Host: "http://server"}, RESTOptions{ContentType: ContentTypeProtobuf,
		HTTPClient: &http.Client{Transport: testkit.RoundTripFunc(func(req *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/vnd.kubernetes.protobuf;stream=watch"}},
				Body: io.NopCloser(bytes.NewReader(body)), Request: req}, nil
		})}})
	if err != nil {
		t.Fatal(err)
	}
	streaming := metav1.ListOptions{SendInitialEvents: new(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true}
	for _, tc := range []struct {
		name      string
		lookup    bool
		options   metav1.ListOptions
		wantReuse bool
	}{
		{"streaming list with a lookup", true, streaming, true},
		{"streaming list without a lookup", false, streaming, false},
		{"watch with a lookup", true, metav1.ListOptions{ResourceVersion: "10"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			var found []*corev1.Pod
			if tc.lookup {
				ctx = withCachedLookup(ctx, cacheLookup(cached, &found))
			}
			w, err := lw.Watch(ctx, tc.options)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			var got []*corev1.Pod
			for ev := range w.ResultChan() {
				pod, ok := ev.Object.(*corev1.Pod)
				if !ok {
					t.Fatalf("event %s of a %T: %v", ev.Type, ev.Object, ev.Object)
				}
				if ev.Type == watch.Added {
					got = append(got, pod)
				}
			}
			if len(got) != 11 {
				t.Fatalf("%d added events, want 11", len(got))
			}
			for i, pod := range got {
				isCached := pod == cached[NameOf(pod)]
				wantCached := tc.wantReuse && i < 4
				if isCached != wantCached {
					t.Errorf("event %d (%s): the cached object %v, want %v", i, pod.Name, isCached, wantCached)
				}
				if !isCached {
					if diff := cmp.Diff(pods[i%10], pod); diff != "" {
						t.Errorf("event %d: decoded object (-streamed +got):\n%s", i, diff)
					}
				}
			}
			if tc.wantReuse {
				checkFoundReused(t, 0, cached, found, got)
			} else if len(found) != 0 {
				t.Errorf("the lookup found %d objects, want none", len(found))
			}
		})
	}
}
