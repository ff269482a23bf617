package informer

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer/internal/prodpods"
)

// podListJSON returns a JSON list of production-like pods at resource
// version 42, as the API server sends it.
func podListJSON(t *testing.T, n int) []byte {
	t.Helper()
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"}, ListMeta: metav1.ListMeta{ResourceVersion: "42"}}
	for _, p := range prodpods.New(n) {
		p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
		list.Items = append(list.Items, p)
	}
	body, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	return body
}

// TestDynamicListerWatcherOf checks that the dynamic ListerWatcher handing
// objects out through an interface type lists what NewDynamicListerWatcher
// lists, hands the calling informer's cached objects back for reuse, and
// that an informer deduplicating over it shares sub-trees on decode.
func TestDynamicListerWatcherOf(t *testing.T) {
	opts := RESTOptions{Resource: corev1.SchemeGroupVersion.WithResource("pods"), HTTPClient: servingClient(http.StatusOK, runtime.ContentTypeJSON, podListJSON(t, 20))}
	config := &rest.Config{Host: "http://server"}
	plain, err := NewDynamicListerWatcher(config, opts)
	if err != nil {
		t.Fatal(err)
	}
	want, err := plain.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lw, err := NewDynamicListerWatcherOf[anyObject](config, opts)
	if err != nil {
		t.Fatal(err)
	}
	cached := map[ObjectName]anyObject{NameOf(want.Items[3]): want.Items[3]}
	var found []anyObject
	got, err := lw.List(withCachedLookup(context.Background(), cacheLookup(cached, &found)), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	items := make([]*unstructured.Unstructured, 0, len(got.Items))
	for _, obj := range got.Items {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			t.Fatalf("listed a %T, want *unstructured.Unstructured", obj)
		}
		items = append(items, u)
	}
	if diff := cmp.Diff(want.Items, items); diff != "" {
		t.Errorf("items (-NewDynamicListerWatcher +NewDynamicListerWatcherOf):\n%s", diff)
	}
	if len(found) != 1 || items[3] != want.Items[3] {
		t.Errorf("the cached object was looked up %d times and reused: %v", len(found), items[3] == want.Items[3])
	}
	if got.ResourceVersion != "42" {
		t.Errorf("resource version %q, want 42", got.ResourceVersion)
	}

	inf, err := NewInformer(lw, InformerOptions[anyObject]{Deduplicate: new(true)})
	if err != nil {
		t.Fatal(err)
	}
	own, ok := inf.source.listerWatcher().(*handedOutAs[anyObject, *unstructured.Unstructured])
	if !ok || own == lw || !own.description().interns.SharesSubObjects() || inf.queue.intern != nil {
		t.Errorf("an informer deduplicating over NewDynamicListerWatcherOf does not share on decode: own ListerWatcher %v, queue pass %v", ok && own != lw, inf.queue.intern != nil)
	}
	if _, err := NewDynamicListerWatcherOf[*corev1.Pod](config, opts); err == nil {
		t.Error("no error handing unstructured objects out as pods")
	}
}

// TestMetadataListerWatcherOf checks that the metadata ListerWatcher
// handing objects out through an interface type gives each the kind asked
// for, and leaves the kind of those without one alone.
func TestMetadataListerWatcherOf(t *testing.T) {
	list := &metav1.PartialObjectMetadataList{
		TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"},
		ListMeta: metav1.ListMeta{ResourceVersion: "7"},
	}
	for _, name := range []string{"a", "b"} {
		list.Items = append(list.Items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: "7"}})
	}
	body, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	opts := RESTOptions{Resource: corev1.SchemeGroupVersion.WithResource("pods"), HTTPClient: servingClient(http.StatusOK, runtime.ContentTypeJSON, body)}
	config := &rest.Config{Host: "http://server"}
	kind := corev1.SchemeGroupVersion.WithKind("Pod")
	for _, k := range []struct {
		set  bool
		want metav1.TypeMeta
	}{{true, metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}}, {false, metav1.TypeMeta{}}} {
		var lw ListerWatcher[anyObject]
		if k.set {
			lw, err = NewMetadataListerWatcherOf[anyObject](config, opts, kind)
		} else {
			lw, err = NewMetadataListerWatcherOf[anyObject](config, opts, schema.GroupVersionKind{})
		}
		if err != nil {
			t.Fatal(err)
		}
		got, err := lw.List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var kinds []metav1.TypeMeta
		for _, obj := range got.Items {
			kinds = append(kinds, obj.(*metav1.PartialObjectMetadata).TypeMeta)
		}
		if diff := cmp.Diff([]metav1.TypeMeta{k.want, k.want}, kinds); diff != "" {
			t.Errorf("kinds with kind set %v (-want +got):\n%s", k.set, diff)
		}
	}
}
