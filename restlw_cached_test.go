package informer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer/internal/testkit"
	"github.com/kubetyped/informer/internal/wire"
)

// servedListLW is a REST ListerWatcher of pods asking for contentType
// whose list requests all get body, of that content type.
func servedListLW(t *testing.T, body []byte, contentType string) *restListerWatcher[*corev1.Pod] {
	t.Helper()
	lw, err := newRESTListerWatcher[*corev1.Pod](&rest.Config{Host: "http://server"}, RESTOptions{ContentType: ContentType(contentType), HTTPClient: servingClient(http.StatusOK, contentType, body)})
	if err != nil {
		t.Fatal(err)
	}
	return lw
}

// servingClient is an HTTP client whose every request gets body, of
// contentType, with status.
func servingClient(status int, contentType string, body []byte) *http.Client {
	return &http.Client{Transport: testkit.RoundTripFunc(func(req *http.Request) (*http.Response, error) {
		return &http.Response{
			StatusCode: status, Header: http.Header{"Content-Type": {contentType}},
			Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req,
		}, nil
	})}
}

// cacheLookup is a cachedLookup over cached, recording what it found.
func cacheLookup[T Object](cached map[ObjectName]T, found *[]T) cachedLookup[T] {
	return func(name ObjectName, resourceVersion string) (T, bool) {
		obj, ok := cached[name]
		if !ok || obj.GetResourceVersion() != resourceVersion {
			var zero T
			return zero, false
		}
		*found = append(*found, obj)
		return obj, true
	}
}

// randomCache returns a cache holding, for each of listed picked at
// random, a copy of it marked with a label no listed object has, at its
// version (and then the copy replaces it in listed, as what a list should
// return) or at an older one.
func randomCache[T Object](rng *rand.Rand, listed []T) map[ObjectName]T {
	cached := map[ObjectName]T{}
	for i, obj := range listed {
		copy, _ := obj.DeepCopyObject().(T)
		copy.SetLabels(map[string]string{"cached": "yes"})
		switch rng.IntN(3) {
		case 0: // not cached
		case 1: // cached at the listed version
			cached[NameOf(copy)] = copy
			listed[i] = copy
		case 2: // cached at an older version
			copy.SetResourceVersion("9")
			cached[NameOf(copy)] = copy
		}
	}
	return cached
}

// checkFoundReused fails t unless found, the objects a cacheLookup over
// cached found, are the items of got that are cached objects, in order.
func checkFoundReused[T Object](t *testing.T, seed uint64, cached map[ObjectName]T, found, got []T) {
	t.Helper()
	var reused []T
	for _, obj := range got {
		if c, ok := cached[NameOf(obj)]; ok && c == obj {
			reused = append(reused, obj)
		}
	}
	if diff := cmp.Diff(found, reused); diff != "" {
		t.Errorf("seed %d: the lookup's finds are not the items reused, in order (-found +reused):\n%s", seed, diff)
	}
}

// randomListedPods returns n pods, each a variation of wirePod.
func randomListedPods(rng *rand.Rand, n int) []corev1.Pod {
	pods := make([]corev1.Pod, n)
	for i := range pods {
		pod := testkit.WirePod()
		pod.Namespace = fmt.Sprintf("ns%d", rng.IntN(3))
		pod.Name = fmt.Sprintf("p%d", i)
		pod.ResourceVersion = strconv.Itoa(10 + rng.IntN(5))
		pod.Spec.NodeName = fmt.Sprintf("node%d", rng.IntN(4))
		pods[i] = *pod
	}
	return pods
}

// TestRESTListSkipsCachedItems lists random protobuf pages of which the
// cache holds some items at the listed resource version, some at another,
// and not others: the items found are the cached objects (which carry a
// mark no listed pod has, so a decoded copy would show), the others are
// decoded, and every item is in list order.
func TestRESTListSkipsCachedItems(t *testing.T) {
	for seed := range uint64(30) {
		rng := rand.New(rand.NewPCG(seed, 14))
		pods := randomListedPods(rng, rng.IntN(40))
		cached := map[ObjectName]*corev1.Pod{}
		want := []*corev1.Pod{}
		for i := range pods {
			want = append(want, &pods[i])
			copy := pods[i].DeepCopy()
			copy.Labels = map[string]string{"cached": "yes"}
			switch rng.IntN(3) {
			case 0: // not cached
			case 1: // cached at the listed version
				cached[NameOf(copy)] = copy
				want[i] = copy
			case 2: // cached at an older version
				copy.ResourceVersion = "9"
				cached[NameOf(copy)] = copy
			}
		}
		body := testkit.EncodeProtobuf(t, &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "20", Continue: "next"}, Items: pods})
		lw := servedListLW(t, body, string(ContentTypeProtobuf))
		var found []*corev1.Pod
		got, err := lw.List(withCachedLookup(t.Context(), cacheLookup(cached, &found)), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if diff := cmp.Diff(&ListResult[*corev1.Pod]{Items: want, ResourceVersion: "20", Continue: "next"}, got); diff != "" {
			t.Errorf("seed %d: list (-want +got):\n%s", seed, diff)
		}
		for i, pod := range got.Items {
			if cached[NameOf(pod)] != pod && want[i] != &pods[i] {
				t.Errorf("seed %d: item %d is a copy of the cached object", seed, i)
			}
		}
		checkFoundReused(t, seed, cached, found, got.Items)
	}
}

// TestRESTListDecodesWhatItCannotSkip lists protobuf bodies whose items
// cannot be skipped, or which are not lists: they are decoded whole, and the
// cache's objects left alone.
func TestRESTListDecodesWhatItCannotSkip(t *testing.T) {
	pods := randomListedPods(rand.New(rand.NewPCG(1, 14)), 3)
	cached := map[ObjectName]*corev1.Pod{}
	for i := range pods {
		cached[NameOf(&pods[i])] = pods[i].DeepCopy()
	}
	list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "20"}, Items: pods}
	protoBody := testkit.EncodeProtobuf(t, list)
	for _, tc := range []struct {
		name, contentType string
		body              []byte
		wantErr           func(error) bool
	}{
		{name: "every item with two metadata fields", contentType: string(ContentTypeProtobuf), body: withDoubledMetadata(t, list)},
		{name: "cut short", contentType: string(ContentTypeProtobuf), body: protoBody[:len(protoBody)-3], wantErr: func(err error) bool { return err != nil }},
		{
			name: "a failure Status", contentType: string(ContentTypeProtobuf),
			body:    testkit.EncodeProtobuf(t, &metav1.Status{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: metav1.StatusFailure, Reason: metav1.StatusReasonExpired, Code: 410, Message: "too old"}),
			wantErr: apierrors.IsResourceExpired,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lw := servedListLW(t, tc.body, tc.contentType)
			var found []*corev1.Pod
			got, err := lw.List(withCachedLookup(t.Context(), cacheLookup(cached, &found)), metav1.ListOptions{})
			if tc.wantErr != nil {
				if !tc.wantErr(err) {
					t.Fatalf("List = %v, %v; want the error expected", got, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(decodedWhole(t, tc.body), got); diff != "" {
				t.Errorf("list (-decoded whole +got):\n%s", diff)
			}
			for _, pod := range got.Items {
				if cached[NameOf(pod)] == pod {
					t.Errorf("%s is the cached object", NameOf(pod))
				}
			}
		})
	}
}

// decodedWhole is what a REST client's decoder makes of body, a PodList.
func decodedWhole(t *testing.T, body []byte) *ListResult[*corev1.Pod] {
	t.Helper()
	result, err := decodedWholeOrError(body)
	if err != nil {
		t.Fatal(err)
	}
	return result
}

// withDoubledMetadata is list's protobuf body with each item's metadata
// field written twice, which decoding merges.
func withDoubledMetadata(t *testing.T, list *corev1.PodList) []byte {
	t.Helper()
	var items []byte
	for i := range list.Items {
		data, err := list.Items[i].Marshal()
		if err != nil {
			t.Fatal(err)
		}
		metadata, err := list.Items[i].ObjectMeta.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		data = protowire.AppendTag(data, 1, protowire.BytesType)
		data = protowire.AppendBytes(data, metadata)
		items = protowire.AppendTag(items, 2, protowire.BytesType)
		items = protowire.AppendBytes(items, data)
	}
	head := testkit.EncodeProtobuf(t, &corev1.PodList{ListMeta: list.ListMeta})
	msg, ok := wire.ProtobufListMessage(head, "PodList")
	if !ok {
		t.Fatal(errors.New("no list message"))
	}
	return testkit.EncodeProtobuf(t, &runtime.Unknown{
		TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "PodList"},
		Raw:      append(bytes.Clone(msg), items...),
	})
}

// TestRESTListRetriesAResetConnection lists through a connection reset
// once: the list is sent again, as the REST client's Do would, and
// succeeds.
func TestRESTListRetriesAResetConnection(t *testing.T) {
	body := testkit.EncodeProtobuf(t, &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "20"}, Items: []corev1.Pod{*NewPod("ns", "a", "3")}})
	var calls atomic.Int32
	client := &http.Client{Transport: testkit.RoundTripFunc(func(req *http.Request) (*http.Response, error) {
		if calls.Add(1) == 1 {
			return nil, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
		}
		return &http.Response{
			StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {string(ContentTypeProtobuf)}},
			Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: req,
		}, nil
	})}
	lw, err := newRESTListerWatcher[*corev1.Pod](&rest.Config{Host: "http://server"}, RESTOptions{ContentType: ContentTypeProtobuf, HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	got, err := lw.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(decodedWhole(t, body), got); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

// FuzzRESTListSkipsCachedItems lists any bytes with a cache holding pods
// a and b at version 3: it never panics, and whatever a REST client's
// decoder decodes as a PodList lists as the same items, but for those
// listed as a or b at version 3, which are the cached objects.
func FuzzRESTListSkipsCachedItems(f *testing.F) {
	pods := []corev1.Pod{*NewPod("ns", "a", "3"), *NewPod("ns", "b", "4"), *NewPod("ns", "c", "3"), *testkit.WirePod()}
	f.Add(testkit.EncodeProtobuf(f, &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}, Items: pods}))
	f.Add(testkit.EncodeProtobuf(f, &corev1.PodList{Items: pods[:1]}))
	f.Fuzz(func(t *testing.T, body []byte) {
		cached := map[ObjectName]*corev1.Pod{}
		for _, name := range []string{"a", "b"} {
			cached[ObjectName{Namespace: "ns", Name: name}] = NewPod("ns", name, "3", PodNode("cached"))
		}
		want, wantErr := decodedProtobuf(body)
		var found []*corev1.Pod
		got, err := servedListLW(t, bytes.Clone(body), string(ContentTypeProtobuf)).List(withCachedLookup(t.Context(), cacheLookup(cached, &found)), metav1.ListOptions{})
		if wantErr != nil {
			return // ours may list what a decoder rejects in an item it need not decode
		}
		if err != nil {
			t.Fatalf("List failed on a body that decodes: %v", err)
		}
		for i, pod := range want.Items {
			if c := cached[NameOf(pod)]; c != nil && c.ResourceVersion == pod.ResourceVersion && slices.Contains(found, got.Items[i]) {
				want.Items[i] = c
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("list (-decoded whole, cached objects in place +got):\n%s", diff)
		}
	})
}

// decodedProtobuf is what a REST client's decoder makes of body, a
// protobuf PodList response.
func decodedProtobuf(body []byte) (*ListResult[*corev1.Pod], error) {
	list := &corev1.PodList{}
	if _, _, err := protobuf.NewSerializer(clientgoscheme.Scheme, clientgoscheme.Scheme).Decode(body, nil, list); err != nil {
		return nil, err
	}
	return listResultOf(list), nil
}

// listResultOf is list as the REST ListerWatcher returns it.
func listResultOf(list *corev1.PodList) *ListResult[*corev1.Pod] {
	result := &ListResult[*corev1.Pod]{Items: []*corev1.Pod{}, ResourceVersion: list.ResourceVersion, Continue: list.Continue}
	for i := range list.Items {
		list.Items[i].TypeMeta = metav1.TypeMeta{}
		result.Items = append(result.Items, &list.Items[i])
	}
	return result
}

// decodedWholeOrError is decodedWhole, returning the decoder's error.
func decodedWholeOrError(body []byte) (*ListResult[*corev1.Pod], error) {
	list := &corev1.PodList{}
	if _, _, err := clientgoscheme.Codecs.UniversalDeserializer().Decode(body, nil, list); err != nil {
		return nil, err
	}
	return listResultOf(list), nil
}
