package informer

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubetyped/informer/internal/testkit"
)

// TestReplaceByTheStoredObjectsKeepsTheContents replaces a store's content
// by its own objects in its own order, as a relist of an unchanged cache
// does: the contents are kept (not rebuilt) and only the resource version
// moves; removed and previous are what a rebuild reports. Any other list
// (another order, an object changed or missing or added) rebuilds them.
func TestReplaceByTheStoredObjectsKeepsTheContents(t *testing.T) {
	newStore := func() (*Indexer[*corev1.Pod], []*corev1.Pod) {
		s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]})
		var pods []*corev1.Pod
		for i := range 50 {
			pods = append(pods, testkit.NewPod(fmt.Sprintf("ns%d", i%3), fmt.Sprintf("p%d", i), "5", testkit.PodLabels(map[string]string{"app": fmt.Sprint(i % 4)})))
		}
		if _, _, err := s.replaceAll(pods, "5"); err != nil {
			t.Fatal(err)
		}
		return s, pods
	}
	s, pods := newStore()
	before := s.c
	removed, previous, err := s.replaceAll(append([]*corev1.Pod(nil), pods...), "9")
	if err != nil {
		t.Fatal(err)
	}
	if s.c != before {
		t.Error("a replace by the stored objects rebuilt the contents")
	}
	if diff := cmp.Diff([]*corev1.Pod(nil), removed); diff != "" {
		t.Errorf("removed: %s", diff)
	}
	if diff := cmp.Diff(pods, previous); diff != "" {
		t.Errorf("previous (-stored +got):\n%s", diff)
	}
	if rv := s.LastStoreSyncResourceVersion(); rv != "9" {
		t.Errorf("resource version %s, want 9", rv)
	}
	got, err := NewLister(s, corev1.SchemeGroupVersion.WithResource("pods")).List(labels.SelectorFromSet(labels.Set{"app": "1"}))
	if err != nil || len(got) != 13 {
		t.Errorf("label query after the replace: %d pods, %v; want 13", len(got), err)
	}

	changed := pods[7].DeepCopy()
	changed.ResourceVersion = "8"
	for name, list := range map[string][]*corev1.Pod{
		"reordered": append(append([]*corev1.Pod(nil), pods[1:]...), pods[0]),
		"changed":   append(append(append([]*corev1.Pod(nil), pods[:7]...), changed), pods[8:]...),
		"shorter":   pods[:49],
		"duplicate": append(append([]*corev1.Pod(nil), pods[:49]...), pods[0]),
	} {
		s, _ := newStore()
		before := s.c
		if _, _, err := s.replaceAll(list, "9"); err != nil {
			t.Fatal(err)
		}
		if s.c == before {
			t.Errorf("%s: a replace by another list kept the contents", name)
		}
	}
}
