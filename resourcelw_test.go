package informer

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// TestDynamicListReportsStatus lists through the dynamic ListerWatcher,
// which sends its own list requests, from a server answering 410 Gone
// with a Status: the error is the Status's, as through the dynamic client,
// so that the reflector knows an expired continue token or resource
// version.
func TestDynamicListReportsStatus(t *testing.T) {
	body := []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old","reason":"Expired","code":410}`)
	lw, err := newDynamicListerWatcher(&rest.Config{Host: "http://server"}, RESTOptions{Resource: corev1.SchemeGroupVersion.WithResource("pods"), HTTPClient: servingClient(http.StatusGone, runtime.ContentTypeJSON, body)})
	if err != nil {
		t.Fatal(err)
	}
	_, err = lw.List(t.Context(), metav1.ListOptions{})
	if !apierrors.IsResourceExpired(err) {
		t.Errorf("List = %v, want a ResourceExpired error", err)
	}
}

// servedMetadataList returns a metadata ListerWatcher of pods whose list
// requests all get body, of contentType, and what client-go's metadata
// client lists from body as our ListerWatcher returns it.
func servedMetadataList(t testing.TB, body []byte, contentType string) (*metadataListerWatcher, *ListResult[*metav1.PartialObjectMetadata]) {
	t.Helper()
	client := servingClient(http.StatusOK, contentType, body)
	config := &rest.Config{Host: "http://server"}
	resource := corev1.SchemeGroupVersion.WithResource("pods")
	lw, err := newMetadataListerWatcher(config, RESTOptions{Resource: resource, HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	meta, err := metadata.NewForConfigAndClient(config, client)
	if err != nil {
		t.Fatal(err)
	}
	list, err := meta.Resource(resource).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := &ListResult[*metav1.PartialObjectMetadata]{Items: []*metav1.PartialObjectMetadata{}, ResourceVersion: list.ResourceVersion, Continue: list.Continue}
	for i := range list.Items {
		list.Items[i].TypeMeta = metav1.TypeMeta{}
		want.Items = append(want.Items, &list.Items[i])
	}
	return lw, want
}

// TestMetadataListSkipsCachedItems is TestDynamicListSkipsCachedItems for
// the metadata ListerWatcher, in protobuf and JSON, against client-go's
// metadata client.
func TestMetadataListSkipsCachedItems(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 18))
		list := &metav1.PartialObjectMetadataList{
			TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"},
			ListMeta: metav1.ListMeta{ResourceVersion: "20", Continue: "next"},
		}
		for _, pod := range randomListedPods(rng, rng.IntN(40)) {
			item := metav1.PartialObjectMetadata{ObjectMeta: pod.ObjectMeta}
			if rng.IntN(2) == 0 {
				item.TypeMeta = metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}
			}
			list.Items = append(list.Items, item)
		}
		contentType := runtime.ContentTypeProtobuf
		var body []byte
		if rng.IntN(2) == 0 {
			var buf bytes.Buffer
			if err := protobuf.NewSerializer(metainternalversionscheme.Scheme, metainternalversionscheme.Scheme).Encode(list, &buf); err != nil {
				t.Fatal(err)
			}
			body = buf.Bytes()
		} else {
			contentType = runtime.ContentTypeJSON
			var err error
			if body, err = json.Marshal(list); err != nil {
				t.Fatal(err)
			}
		}
		lw, want := servedMetadataList(t, body, contentType)
		cached := randomCache(rng, want.Items)
		var found []*metav1.PartialObjectMetadata
		got, err := lw.List(withCachedLookup(t.Context(), cacheLookup(cached, &found)), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("seed %d (%s): %v", seed, contentType, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("seed %d (%s): list (-want +got):\n%s", seed, contentType, diff)
		}
		checkFoundReused(t, seed, cached, found, got.Items)
	}
}
