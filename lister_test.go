package informer

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// podResource names pods as client-go's generated pod lister does.
var podResource = schema.GroupVersionResource{Version: "v1", Resource: "pod"}

// listerPair holds the same pods behind our Lister and client-go's
// generated pod lister.
func listerPair(t *testing.T, pods []*corev1.Pod) (*Lister[*corev1.Pod], corev1listers.PodLister) {
	t.Helper()
	ours := NewIndexer(map[string]IndexFunc[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]})
	theirs := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		if err := errors.Join(ours.Add(p), theirs.Add(p)); err != nil {
			t.Fatal(err)
		}
	}
	return NewLister(ours, podResource), corev1listers.NewPodLister(theirs)
}

func TestListerListMatchesClientGo(t *testing.T) {
	var pods []*corev1.Pod
	for _, p := range selectFixture() {
		if p.Namespace != "" { // pods are namespaced
			pods = append(pods, p)
		}
	}
	ours, theirs := listerPair(t, pods)
	for name, sel := range selectorMatrix(t) {
		if sel == nil {
			continue // client-go's listers do not accept a nil selector
		}
		got, err := ours.List(sel)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := theirs.List(sel)
		if diff := cmp.Diff(versionsOf(want), versionsOf(got)); diff != "" {
			t.Errorf("List(%s) (-client-go +ours):\n%s", name, diff)
		}
		for _, ns := range []string{"ns1", "ns2", "nope"} {
			got, err := ours.Namespace(ns).List(sel)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := theirs.Pods(ns).List(sel)
			if diff := cmp.Diff(versionsOf(want), versionsOf(got)); diff != "" {
				t.Errorf("Namespace(%q).List(%s) (-client-go +ours):\n%s", ns, name, diff)
			}
		}
	}
}

func TestListerNilSelectorListsEverything(t *testing.T) {
	ours, _ := listerPair(t, []*corev1.Pod{NewPod("a", "x", "1"), NewPod("b", "y", "1")})
	got, err := ours.List(nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a/x", "b/y"}, keysOf(got)); diff != "" {
		t.Errorf("List(nil) (-want +got):\n%s", diff)
	}
	got, _ = ours.Namespace("b").List(nil)
	if diff := cmp.Diff([]string{"b/y"}, keysOf(got)); diff != "" {
		t.Errorf("Namespace(b).List(nil) (-want +got):\n%s", diff)
	}
}

func TestListerGet(t *testing.T) {
	x := NewPod("a", "x", "1")
	ours, theirs := listerPair(t, []*corev1.Pod{x})
	if got, err := ours.Namespace("a").Get("x"); got != x || err != nil {
		t.Errorf(`Namespace("a").Get("x") = %v, %v`, got, err)
	}
	if got, err := ours.Get("a/x"); got != x || err != nil {
		t.Errorf(`Get("a/x") = %v, %v`, got, err)
	}
	for _, tc := range []struct {
		name   string
		ours   func() (*corev1.Pod, error)
		theirs func() (*corev1.Pod, error)
	}{
		{"missing name", func() (*corev1.Pod, error) { return ours.Namespace("a").Get("y") },
			func() (*corev1.Pod, error) { return theirs.Pods("a").Get("y") }},
		{"other namespace", func() (*corev1.Pod, error) { return ours.Namespace("b").Get("x") },
			func() (*corev1.Pod, error) { return theirs.Pods("b").Get("x") }},
	} {
		got, err := tc.ours()
		_, want := tc.theirs()
		if got != nil || !apierrors.IsNotFound(err) {
			t.Errorf("%s: got %v, %v; want a NotFound error", tc.name, got, err)
			continue
		}
		if diff := cmp.Diff(statusOf(t, want), statusOf(t, err)); diff != "" {
			t.Errorf("%s: error status (-client-go +ours):\n%s", tc.name, diff)
		}
	}
	_, err := ours.Get("a/missing")
	want := &metav1.StatusDetails{Name: "a/missing", Kind: "pod"}
	if diff := cmp.Diff(want, statusOf(t, err).Details); diff != "" {
		t.Errorf("Get(missing) details (-want +got):\n%s", diff)
	}
}

func statusOf(t *testing.T, err error) metav1.Status {
	t.Helper()
	var status *apierrors.StatusError
	if !errors.As(err, &status) {
		t.Fatalf("%v is not a StatusError", err)
	}
	return status.ErrStatus
}

func TestListerClusterScoped(t *testing.T) {
	indexer := NewIndexer[*corev1.Node](nil)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"zone": "z1"}}}
	if err := indexer.Add(node); err != nil {
		t.Fatal(err)
	}
	nodes := NewLister(indexer, schema.GroupVersionResource{Version: "v1", Resource: "nodes"})
	if got, err := nodes.Get("node-1"); got != node || err != nil {
		t.Errorf(`Get("node-1") = %v, %v`, got, err)
	}
	if got, err := nodes.Namespace("").Get("node-1"); got != node || err != nil {
		t.Errorf(`Namespace("").Get("node-1") = %v, %v`, got, err)
	}
	got, _ := nodes.List(labels.SelectorFromSet(labels.Set{"zone": "z1"}))
	if diff := cmp.Diff([]string{"node-1"}, keysOf(got)); diff != "" {
		t.Errorf("List(zone=z1) (-want +got):\n%s", diff)
	}
	if _, err := nodes.Get("node-2"); !apierrors.IsNotFound(err) || err.Error() != `nodes "node-2" not found` {
		t.Errorf(`Get("node-2") error = %v`, err)
	}
}

// BenchmarkNamespaceListerGet is W5's second case: Get through the
// namespaced lister (client-go's builds a key string each time).
func BenchmarkNamespaceListerGet(b *testing.B) {
	f := benchFixture(b)
	ours := NewLister(f.ours, podResource).Namespace("ns-7")
	theirs := corev1listers.NewPodLister(f.clientGo).Pods("ns-7")
	b.Run("ours", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkPod, _ = ours.Get("pod-7007")
		}
	})
	b.Run("client-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkPod, _ = theirs.Get("pod-7007")
		}
	})
}
