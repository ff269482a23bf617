package informer

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/dynamic"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer/internal/testkit"
)

// randomJSONList encodes list as a JSON list body in one of the ways a
// server or a proxy may write it: members in any order, items with or
// without kind and apiVersion, metadata anywhere in an item, a member name
// escaped, indented or not; the list without its kind if mayOmitKind (the
// dynamic client needs it, a typed decoder does not).
func randomJSONList(t testing.TB, rng *rand.Rand, list *corev1.PodList, mayOmitKind bool) []byte {
	t.Helper()
	marshal := func(v any) string {
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	object := func(members []string) string {
		rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		return "{" + strings.Join(members, ",") + "}"
	}
	items := make([]string, len(list.Items))
	for i := range list.Items {
		pod := &list.Items[i]
		metadataName := `"metadata"`
		if rng.IntN(4) == 0 {
			metadataName = `"metad\u0061ta"`
		}
		members := []string{metadataName + ":" + marshal(pod.ObjectMeta), `"spec":` + marshal(pod.Spec), `"status":` + marshal(pod.Status)}
		if rng.IntN(2) == 0 {
			members = append(members, `"kind":"Pod"`, `"apiVersion":"v1"`)
		}
		items[i] = object(members)
	}
	members := []string{`"apiVersion":"v1"`, `"metadata":` + marshal(list.ListMeta), `"items":[` + strings.Join(items, ",") + "]"}
	if !mayOmitKind || rng.IntN(3) > 0 {
		members = append(members, `"kind":"PodList"`)
	}
	body := []byte(object(members))
	if rng.IntN(2) == 0 {
		var indented bytes.Buffer
		if err := json.Indent(&indented, body, "", "  "); err != nil {
			t.Fatal(err)
		}
		body = indented.Bytes()
	}
	return body
}

// TestRESTListSkipsCachedJSONItems is TestRESTListSkipsCachedItems for
// JSON lists written in random ways: the items the cache holds at the
// listed version are the cached objects, the others what a REST client's
// decoder makes of the whole body, in list order.
func TestRESTListSkipsCachedJSONItems(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 15))
		pods := randomListedPods(rng, rng.IntN(40))
		body := randomJSONList(t, rng, &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "20", Continue: "next"}, Items: pods}, true)
		want, err := decodedJSON(body)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		cached := randomCache(rng, want.Items)
		var found []*corev1.Pod
		got, err := servedListLW(t, body, string(ContentTypeJSON)).List(withCachedLookup(t.Context(), cacheLookup(cached, &found)), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("seed %d: list (-want +got):\n%s", seed, diff)
		}
		checkFoundReused(t, seed, cached, found, got.Items)
	}
}

// TestRESTListDecodesJSONItemsItCannotSkip lists JSON bodies whose items,
// all cached at the listed version, cannot be skipped: they are decoded
// whole, the cache's objects left alone and the lookup never called.
func TestRESTListDecodesJSONItemsItCannotSkip(t *testing.T) {
	cached := map[ObjectName]*corev1.Pod{
		{Namespace: "ns", Name: "a"}: NewPod("ns", "a", "3", PodNode("cached")),
		{Namespace: "ns", Name: "b"}: NewPod("ns", "b", "3", PodNode("cached")),
	}
	const (
		a = `{"metadata":{"namespace":"ns","name":"a","resourceVersion":"3"}}`
		b = `{"metadata":{"namespace":"ns","name":"b","resourceVersion":"3"}}`
	)
	for _, tc := range []struct {
		name, body string
		// skipped is true where the lookup may still find the other item.
		skipped bool
	}{
		{name: "metadata twice", body: `{"kind":"PodList","items":[{"metadata":{"namespace":"ns","name":"a","resourceVersion":"3"},"metadata":{"labels":{"x":"y"}}}]}`},
		{name: "name twice", body: `{"items":[{"metadata":{"namespace":"ns","name":"a","name":"b","resourceVersion":"3"}}]}`},
		{name: "an escaped name", body: `{"items":[{"metadata":{"namespace":"ns","name":"\u0061","resourceVersion":"3"}}]}`},
		{name: "a null namespace", body: `{"items":[{"metadata":{"namespace":null,"name":"a","resourceVersion":"3"}}]}`},
		{name: "another kind", body: `{"kind":"Status","items":[` + a + "," + b + `],"status":"Success"}`},
		{name: "another kind in other case", body: `{"Kind":"Status","items":[` + a + `],"status":"Success"}`},
		{name: "kind twice", body: `{"kind":"PodList","kind":"Status","items":[` + a + `],"status":"Success"}`},
		{name: "items twice", body: `{"items":[` + a + `],"items":[` + b + `]}`},
		{name: "metadata not an object", body: `{"items":[{"metadata":null}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(tc.body)
			want, err := decodedJSON(body)
			if err != nil {
				t.Fatal(err)
			}
			var found []*corev1.Pod
			got, err := servedListLW(t, body, string(ContentTypeJSON)).List(withCachedLookup(t.Context(), cacheLookup(cached, &found)), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("list (-decoded whole +got):\n%s", diff)
			}
			if len(found) > 0 {
				t.Errorf("the lookup found %d cached objects", len(found))
			}
		})
	}
}

// FuzzRESTListSkipsCachedJSONItems is FuzzRESTListSkipsCachedItems for
// JSON bodies.
func FuzzRESTListSkipsCachedJSONItems(f *testing.F) {
	pods := []corev1.Pod{*NewPod("ns", "a", "3"), *NewPod("ns", "b", "4"), *NewPod("ns", "c", "3"), *testkit.WirePod()}
	rng := rand.New(rand.NewPCG(1, 15))
	for range 4 {
		f.Add(randomJSONList(f, rng, &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}, Items: pods}, true))
	}
	f.Add([]byte(`{"items":[{"metadata":{"namespace":"ns","name":"a","resourceVersion":"3"}} , {"metadata":{"namespace":"ns","name":"b","resourceVersion":"3"}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		cached := map[ObjectName]*corev1.Pod{}
		for _, name := range []string{"a", "b"} {
			cached[ObjectName{Namespace: "ns", Name: name}] = NewPod("ns", name, "3", PodNode("cached"))
		}
		want, wantErr := decodedJSON(body)
		var found []*corev1.Pod
		got, err := servedListLW(t, bytes.Clone(body), string(ContentTypeJSON)).List(withCachedLookup(t.Context(), cacheLookup(cached, &found)), metav1.ListOptions{})
		if wantErr != nil {
			return // ours may list what a decoder rejects in an item it need not decode
		}
		if err != nil {
			t.Fatalf("List failed on a body that decodes: %v", err)
		}
		for i, pod := range want.Items {
			if c := cached[NameOf(pod)]; c != nil && c.ResourceVersion == pod.ResourceVersion && i < len(got.Items) && slices.Contains(found, got.Items[i]) {
				want.Items[i] = c
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("list (-decoded whole, cached objects in place +got):\n%s", diff)
		}
	})
}

// FuzzDynamicListSkipsCachedItems is FuzzRESTListSkipsCachedJSONItems for
// the dynamic ListerWatcher, against client-go's dynamic client.
func FuzzDynamicListSkipsCachedItems(f *testing.F) {
	pods := []corev1.Pod{*NewPod("ns", "a", "3"), *NewPod("ns", "b", "4"), *NewPod("ns", "c", "3"), *testkit.WirePod()}
	rng := rand.New(rand.NewPCG(1, 16))
	for range 4 {
		f.Add(randomJSONList(f, rng, &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}, Items: pods}, false))
	}
	f.Add([]byte(`{"kind":"List","items":[{"metadata":{"namespace":"ns","name":"a","resourceVersion":"3"}} , {"metadata":{"namespace":"ns","name":"b","resourceVersion":"3"}},{"kind":"X","metadata":{"name":"c"}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		cached := map[ObjectName]*unstructured.Unstructured{}
		for _, name := range []string{"a", "b"} {
			obj := &unstructured.Unstructured{}
			obj.SetNamespace("ns")
			obj.SetName(name)
			obj.SetResourceVersion("3")
			obj.SetLabels(map[string]string{"cached": "yes"})
			cached[NameOf(obj)] = obj
		}
		lw, want, wantErr := servedDynamicList(t, bytes.Clone(body))
		var found []*unstructured.Unstructured
		got, err := lw.List(withCachedLookup(t.Context(), cacheLookup(cached, &found)), metav1.ListOptions{})
		if wantErr != nil {
			return // ours may list what a decoder rejects in an item it need not decode
		}
		if err != nil {
			t.Fatalf("List failed on a body that decodes: %v", err)
		}
		for i, obj := range want.Items {
			if c := cached[NameOf(obj)]; c != nil && c.GetResourceVersion() == obj.GetResourceVersion() && i < len(got.Items) && slices.Contains(found, got.Items[i]) {
				want.Items[i] = c
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("list (-decoded whole, cached objects in place +got):\n%s", diff)
		}
	})
}

// decodedJSON is what a REST client's decoder makes of body, a JSON
// PodList response.
func decodedJSON(body []byte) (*ListResult[*corev1.Pod], error) {
	list := &corev1.PodList{}
	if _, _, err := kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, clientgoscheme.Scheme, clientgoscheme.Scheme, kjson.SerializerOptions{}).Decode(body, nil, list); err != nil {
		return nil, err
	}
	return listResultOf(list), nil
}

// servedDynamicList returns a dynamic ListerWatcher of pods whose list
// requests all get body, a JSON list, and what client-go's dynamic client
// lists from body as our ListerWatcher returns it, or the client's error.
func servedDynamicList(t testing.TB, body []byte) (*dynamicListerWatcher, *ListResult[*unstructured.Unstructured], error) {
	t.Helper()
	client := servingClient(http.StatusOK, runtime.ContentTypeJSON, body)
	config := &rest.Config{Host: "http://server"}
	resource := corev1.SchemeGroupVersion.WithResource("pods")
	lw, err := newDynamicListerWatcher(config, RESTOptions{Resource: resource, HTTPClient: client})
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfigAndClient(config, client)
	if err != nil {
		t.Fatal(err)
	}
	list, err := dyn.Resource(resource).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return lw, nil, err
	}
	want := &ListResult[*unstructured.Unstructured]{Items: []*unstructured.Unstructured{}, ResourceVersion: list.GetResourceVersion(), Continue: list.GetContinue()}
	for i := range list.Items {
		want.Items = append(want.Items, &list.Items[i])
	}
	return lw, want, nil
}

// TestDynamicListSkipsCachedItems is TestRESTListSkipsCachedJSONItems
// for the dynamic ListerWatcher: the items the cache holds at the listed
// version are the cached objects, the others what client-go's dynamic
// client lists from the whole body (with the list's kind and apiVersion
// where an item has neither), in list order.
func TestDynamicListSkipsCachedItems(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 16))
		pods := randomListedPods(rng, rng.IntN(40))
		body := randomJSONList(t, rng, &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "20", Continue: "next"}, Items: pods}, false)
		lw, want, err := servedDynamicList(t, body)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		cached := randomCache(rng, want.Items)
		var found []*unstructured.Unstructured
		got, err := lw.List(withCachedLookup(t.Context(), cacheLookup(cached, &found)), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("seed %d: list (-want +got):\n%s", seed, diff)
		}
		checkFoundReused(t, seed, cached, found, got.Items)
	}
}
