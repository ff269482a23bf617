package informer

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// randomJSONList encodes list as a JSON list body in one of the ways a
// server or a proxy may write it: members in any order, items with or
// without kind and apiVersion, metadata anywhere in an item, a member name
// escaped, indented or not.
func randomJSONList(t testing.TB, rng *rand.Rand, list *corev1.PodList) []byte {
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
	if rng.IntN(3) > 0 {
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
		cached := map[ObjectName]*corev1.Pod{}
		body := randomJSONList(t, rng, &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "20", Continue: "next"}, Items: pods})
		want, err := decodedWholeOrError(body)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for i, pod := range want.Items {
			copy := pod.DeepCopy()
			copy.Labels = map[string]string{"cached": "yes"}
			switch rng.IntN(3) {
			case 0: // not cached
			case 1: // cached at the listed version
				cached[NameOf(copy)] = copy
				want.Items[i] = copy
			case 2: // cached at an older version
				copy.ResourceVersion = "9"
				cached[NameOf(copy)] = copy
			}
		}
		var found []*corev1.Pod
		got, err := servedListLW(t, body, string(ContentTypeJSON)).List(withCachedLookup(t.Context(), cacheLookup(cached, &found)), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("seed %d: list (-want +got):\n%s", seed, diff)
		}
		var reused []*corev1.Pod
		for _, pod := range got.Items {
			if cached[NameOf(pod)] == pod {
				reused = append(reused, pod)
			}
		}
		if diff := cmp.Diff(found, reused); diff != "" {
			t.Errorf("seed %d: the lookup's finds are not the items reused, in order (-found +reused):\n%s", seed, diff)
		}
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
			want, err := decodedWholeOrError(body)
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
	pods := []corev1.Pod{*NewPod("ns", "a", "3"), *NewPod("ns", "b", "4"), *NewPod("ns", "c", "3"), *wirePod()}
	rng := rand.New(rand.NewPCG(1, 15))
	for range 4 {
		f.Add(randomJSONList(f, rng, &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "9"}, Items: pods}))
	}
	f.Add([]byte(`{"items":[{"metadata":{"namespace":"ns","name":"a","resourceVersion":"3"}} , {"metadata":{"namespace":"ns","name":"b","resourceVersion":"3"}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		cached := map[ObjectName]*corev1.Pod{}
		for _, name := range []string{"a", "b"} {
			cached[ObjectName{Namespace: "ns", Name: name}] = NewPod("ns", name, "3", PodNode("cached"))
		}
		want, wantErr := decodedWholeOrError(body)
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
