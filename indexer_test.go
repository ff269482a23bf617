package informer

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

func withUsers(p *corev1.Pod, users string) *corev1.Pod {
	p.Annotations = map[string]string{"users": users}
	return p
}

func byNode(p *corev1.Pod) ([]string, error) { return []string{p.Spec.NodeName}, nil }

// byUser indexes a pod under each name of its comma-separated "users"
// annotation, and under nothing without it.
func byUser(p *corev1.Pod) ([]string, error) {
	if p.Annotations["users"] == "" {
		return nil, nil
	}
	return strings.Split(p.Annotations["users"], ","), nil
}

// keysOf returns the sorted keys of objs.
func keysOf[T Object](objs []T) []string {
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		keys = append(keys, KeyOf(o))
	}
	slices.Sort(keys)
	return keys
}

// versionsOf returns the sorted "key@resourceVersion" of objs.
func versionsOf[T Object](objs []T) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, KeyOf(o)+"@"+o.GetResourceVersion())
	}
	slices.Sort(out)
	return out
}

// indexContent returns value → sorted keys for every value of an index.
func indexContent[T Object](t *testing.T, s *Indexer[T], index string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, v := range s.ListIndexFuncValues(index) {
		keys, err := s.IndexKeys(index, v)
		if err != nil {
			t.Fatalf("IndexKeys(%q, %q): %v", index, v, err)
		}
		out[v] = keys
	}
	return out
}

func mustAdd(t *testing.T, s *Indexer[*corev1.Pod], pods ...*corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		if err := s.Add(p); err != nil {
			t.Fatalf("Add(%s): %v", KeyOf(p), err)
		}
	}
}

func TestIndexerStoreOperations(t *testing.T) {
	s := NewIndexer[*corev1.Pod](nil)
	mustAdd(t, s, NewPod("ns", "foo", "1", PodNode("bar")))
	got, exists, err := s.Get(NewPod("ns", "foo", ""))
	if err != nil || !exists || got.Spec.NodeName != "bar" {
		t.Fatalf("Get after Add = %v, %v, %v", got, exists, err)
	}
	if err := s.Update(NewPod("ns", "foo", "2", PodNode("baz"))); err != nil {
		t.Fatal(err)
	}
	got, exists, _ = s.GetByKey("ns/foo")
	if !exists || got.Spec.NodeName != "baz" {
		t.Fatalf("GetByKey after Update = %v, %v", got, exists)
	}
	if err := s.Delete(NewPod("ns", "foo", "3")); err != nil {
		t.Fatal(err)
	}
	if _, exists, _ := s.GetByKey("ns/foo"); exists {
		t.Fatal("found a deleted object")
	}
	mustAdd(t, s, NewPod("ns", "a", "4"), NewPod("ns", "c", "5"), NewPod("", "e", "6"))
	if diff := cmp.Diff([]string{"e", "ns/a", "ns/c"}, keysOf(s.List())); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	keys := s.ListKeys()
	slices.Sort(keys)
	if diff := cmp.Diff([]string{"e", "ns/a", "ns/c"}, keys); diff != "" {
		t.Errorf("ListKeys (-want +got):\n%s", diff)
	}
	if err := s.Replace([]*corev1.Pod{NewPod("ns", "foo", "7"), NewPod("ns", "bar", "8")}, "9"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ns/bar", "ns/foo"}, keysOf(s.List())); diff != "" {
		t.Errorf("List after Replace (-want +got):\n%s", diff)
	}
	mustCheck(t, s)
}

func TestIndexerAddOfExistingKeyUpdates(t *testing.T) {
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"byNode": byNode})
	mustAdd(t, s, NewPod("ns", "a", "1", PodNode("n1")), NewPod("ns", "a", "2", PodNode("n2")))
	if diff := cmp.Diff([]string{"ns/a@2"}, versionsOf(s.List())); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]string{"n2": {"ns/a"}}, indexContent(t, s, "byNode")); diff != "" {
		t.Errorf("byNode (-want +got):\n%s", diff)
	}
}

func TestIndexerReplaceRebuildsIndexes(t *testing.T) {
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"byNode": byNode})
	mustAdd(t, s, NewPod("ns", "a", "1", PodLabels(map[string]string{"app": "old"}), PodNode("n1")), NewPod("ns", "b", "1", PodNode("n1")))
	if err := s.Replace([]*corev1.Pod{
		NewPod("ns", "b", "5", PodLabels(map[string]string{"app": "new"}), PodNode("n2")),
		NewPod("other", "c", "5", PodNode("n3")),
	}, "10"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{"n2": {"ns/b"}, "n3": {"other/c"}}, indexContent(t, s, "byNode")); diff != "" {
		t.Errorf("byNode (-want +got):\n%s", diff)
	}
	if got := s.selectLabels("", mustParse(t, "app=old")); got != nil {
		t.Errorf("label index still has app=old: %v", keysOf(got))
	}
	if diff := cmp.Diff([]string{"ns/b"}, keysOf(s.selectLabels("ns", nil))); diff != "" {
		t.Errorf("Select(ns) (-want +got):\n%s", diff)
	}
	mustCheck(t, s)
}

func TestIndexerReplaceKeepsLastOfDuplicateNames(t *testing.T) {
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"byNode": byNode})
	if err := s.Replace([]*corev1.Pod{NewPod("ns", "a", "1", PodNode("n1")), NewPod("ns", "a", "2", PodNode("n2"))}, "3"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ns/a@2"}, versionsOf(s.List())); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	mustCheck(t, s)
}

func TestIndexerMissingKeys(t *testing.T) {
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"byNode": byNode})
	if got, exists, err := s.Get(NewPod("ns", "missing", "")); got != nil || exists || err != nil {
		t.Errorf("Get(missing) = %v, %v, %v", got, exists, err)
	}
	for _, key := range []string{"ns/missing", "missing", "/a", "a/b/c", ""} {
		if got, exists, err := s.GetByKey(key); got != nil || exists || err != nil {
			t.Errorf("GetByKey(%q) = %v, %v, %v", key, got, exists, err)
		}
	}
	// Deleting what is not stored is not an error and still records the RV.
	if err := s.Delete(NewPod("ns", "missing", "7")); err != nil {
		t.Errorf("Delete(missing): %v", err)
	}
	if got := s.LastStoreSyncResourceVersion(); got != "7" {
		t.Errorf("resource version after Delete(missing) = %q, want 7", got)
	}
	// Updating what is not stored adds it.
	if err := s.Update(NewPod("ns", "missing", "8", PodNode("n"))); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ns/missing@8"}, versionsOf(s.List())); diff != "" {
		t.Errorf("after Update(missing) (-want +got):\n%s", diff)
	}
	if _, existed, err := s.remove(ObjectName{Name: "nothing"}); existed || err != nil {
		t.Errorf("remove(missing) = %v, %v", existed, err)
	}
	// "/a" must not find the cluster-scoped object "a".
	mustAdd(t, s, NewPod("", "a", "9"))
	if _, exists, _ := s.GetByKey("/a"); exists {
		t.Error(`GetByKey("/a") found the cluster-scoped object "a"`)
	}
	if _, exists, _ := s.GetByKey("a"); !exists {
		t.Error(`GetByKey("a") did not find the cluster-scoped object "a"`)
	}
}

func TestIndexerRejectsNilObjects(t *testing.T) {
	s := NewIndexer[*corev1.Pod](nil)
	_, _, getErr := s.Get(nil)
	_, indexErr := s.Index("x", nil)
	_, _, upsertErr := s.upsert(nil)
	for name, err := range map[string]error{
		"Add": s.Add(nil), "Update": s.Update(nil), "Delete": s.Delete(nil), "Get": getErr,
		"Index": indexErr, "upsert": upsertErr,
		"Replace": s.Replace([]*corev1.Pod{NewPod("", "a", "1"), nil}, "1"),
	} {
		if err == nil || !strings.Contains(err.Error(), "nil *v1.Pod") {
			t.Errorf("%s(nil) error = %v", name, err)
		}
	}
	if got := s.List(); len(got) != 0 {
		t.Errorf("stored %v", keysOf(got))
	}
}

func TestIndexerResourceVersion(t *testing.T) {
	s := NewIndexer[*corev1.Pod](nil)
	rv := s.LastStoreSyncResourceVersion
	steps := []struct {
		name string
		op   func() error
		want string
	}{
		{"initial", func() error { return nil }, ""},
		{"add", func() error { return s.Add(NewPod("", "k1", "10")) }, "10"},
		{"add same RV", func() error { return s.Add(NewPod("", "k3", "10")) }, "10"},
		{"add newer", func() error { return s.Add(NewPod("", "k4", "20")) }, "20"},
		{"delete with newer RV", func() error { return s.Delete(NewPod("", "k4", "30")) }, "30"},
		{"update", func() error { return s.Update(NewPod("", "k1", "40")) }, "40"},
		{"remove keeps RV", func() error { _, _, err := s.remove(ObjectName{Name: "k1"}); return err }, "40"},
		{"upsert", func() error { _, _, err := s.upsert(NewPod("", "k5", "45")); return err }, "45"},
		{"replace", func() error { return s.Replace([]*corev1.Pod{NewPod("", "k2", "30")}, "50") }, "50"},
		{"replaceAll", func() error { _, _, err := s.replaceAll(nil, "55"); return err }, "55"},
		{"bookmark", func() error { s.Bookmark("60"); return nil }, "60"},
	}
	for _, step := range steps {
		if err := step.op(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := rv(); got != step.want {
			t.Errorf("%s: resource version %q, want %q", step.name, got, step.want)
		}
	}
}

func TestIndexerUpsertRemoveReplaceAll(t *testing.T) {
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"byNode": byNode})
	a1, a2 := NewPod("ns", "a", "1", PodNode("n1")), NewPod("ns", "a", "2", PodNode("n2"))
	if old, existed, err := s.upsert(a1); old != nil || existed || err != nil {
		t.Errorf("upsert(new) = %v, %v, %v", old, existed, err)
	}
	if old, existed, err := s.upsert(a2); old != a1 || !existed || err != nil {
		t.Errorf("upsert(existing) = %v, %v, %v", old, existed, err)
	}
	if got, ok := s.getByName(ObjectName{Namespace: "ns", Name: "a"}); got != a2 || !ok {
		t.Errorf("getByName = %v, %v", got, ok)
	}
	if old, existed, err := s.remove(ObjectName{Namespace: "ns", Name: "a"}); old != a2 || !existed || err != nil {
		t.Errorf("remove = %v, %v, %v", old, existed, err)
	}

	// Nothing listed was stored before: previous is nil.
	b, c, d := NewPod("ns", "b", "3", PodNode("n")), NewPod("ns", "c", "3", PodNode("n")), NewPod("ns", "d", "3", PodNode("n"))
	removed, previous, err := s.replaceAll([]*corev1.Pod{b, c}, "4")
	if err != nil || removed != nil || previous != nil {
		t.Errorf("first replaceAll = %v, %v, %v", removed, previous, err)
	}
	mustAdd(t, s, d)
	b2 := NewPod("ns", "b", "5", PodNode("m"))
	e := NewPod("ns", "e", "5", PodNode("m"))
	removed, previous, err = s.replaceAll([]*corev1.Pod{e, b2}, "6")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ns/c@3", "ns/d@3"}, versionsOf(removed)); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]*corev1.Pod{nil, b}, previous); diff != "" {
		t.Errorf("previous (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]string{"m": {"ns/b", "ns/e"}}, indexContent(t, s, "byNode")); diff != "" {
		t.Errorf("byNode (-want +got):\n%s", diff)
	}
	mustCheck(t, s)
}

func TestIndexerConcurrentUse(t *testing.T) {
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"byNode": byNode})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				p := NewPod(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("p-%d", i%20), fmt.Sprint(i), PodLabels(map[string]string{"app": fmt.Sprint(i % 4)}), PodNode(fmt.Sprintf("n-%d", (i+w)%5)))
				switch i % 7 {
				case 0:
					_ = s.Delete(p)
				case 1:
					_ = s.Replace([]*corev1.Pod{p}, "1")
				default:
					_ = s.Add(p)
				}
			}
		})
		wg.Go(func() {
			for i := range 200 {
				s.selectLabels("", mustParseNoT(fmt.Sprintf("app=%d", i%4)))
				_, _ = s.ByIndex("byNode", fmt.Sprintf("n-%d", i%5))
				_, _, _ = s.GetByKey(fmt.Sprintf("ns-%d/p-%d", i%3, i%20))
				s.List()
			}
		})
	}
	wg.Wait()
	mustCheck(t, s)
}

// storeFixture holds the same 100,000 pods (shaped like the W3–W5 pods of
// the benchmark spec: 1,000 namespaces and nodes, labels app, tier and
// pod-template-hash) in our Indexer and in client-go's, both with the
// namespace and node indexes.
type storeFixture struct {
	pods     []*corev1.Pod
	ours     *Indexer[*corev1.Pod]
	clientGo cache.Indexer
}

var (
	fixtureOnce sync.Once
	fixture     *storeFixture
)

func benchFixture(b *testing.B) *storeFixture {
	fixtureOnce.Do(func() {
		f := &storeFixture{
			ours: NewIndexer(map[string]IndexFunc[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod], "byNode": byNode}),
			clientGo: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{
				cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
				"byNode": func(obj any) ([]string, error) {
					return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
				},
			}),
		}
		for i := range 100_000 {
			p := NewPod(fmt.Sprintf("ns-%d", i%1000), fmt.Sprintf("pod-%d", i), fmt.Sprint(i+1), PodLabels(map[string]string{
				"app":               fmt.Sprintf("app-%d", i%100),
				"tier":              fmt.Sprintf("tier-%d", i%3),
				"pod-template-hash": fmt.Sprintf("%08x", uint32(i/10)*2654435761),
			}), PodNode(fmt.Sprintf("node-%d", i%1000)))
			f.pods = append(f.pods, p)
			if err := f.ours.Add(p); err != nil {
				panic(err)
			}
			if err := f.clientGo.Add(p); err != nil {
				panic(err)
			}
		}
		fixture = f
	})
	b.ResetTimer()
	return fixture
}

var sinkPod *corev1.Pod

// BenchmarkGetByKey is W5: one lookup in a store of 100,000 pods.
func BenchmarkGetByKey(b *testing.B) {
	f := benchFixture(b)
	const key = "ns-7/pod-7007"
	b.Run("ours", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			sinkPod, _, _ = f.ours.GetByKey(key)
		}
	})
	b.Run("client-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			obj, _, _ := f.clientGo.GetByKey(key)
			sinkPod = obj.(*corev1.Pod)
		}
	})
}

// BenchmarkByIndex is W4's query: the 100 pods of node-7.
func BenchmarkByIndex(b *testing.B) {
	f := benchFixture(b)
	b.Run("ours", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if pods, _ := f.ours.ByIndex("byNode", "node-7"); len(pods) != 100 {
				b.Fatalf("%d hits", len(pods))
			}
		}
	})
	b.Run("client-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if objs, _ := f.clientGo.ByIndex("byNode", "node-7"); len(objs) != 100 {
				b.Fatalf("%d hits", len(objs))
			}
		}
	})
}

// BenchmarkUpsertUpdate is W4's write: a pod moving between node-7 and
// node-8, as a shallow copy sharing its labels (the informer's update path).
func BenchmarkUpsertUpdate(b *testing.B) {
	f := benchFixture(b)
	original := f.pods[7]
	away, back := *original, *original
	away.Spec.NodeName, away.ResourceVersion = "node-8", "a"
	back.ResourceVersion = "b"
	moves := [2]*corev1.Pod{&away, &back}
	b.Run("ours", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, _, err := f.ours.upsert(moves[i&1]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("client-go", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if err := f.clientGo.Update(moves[i&1]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	if err := errors.Join(f.ours.Update(original), f.clientGo.Update(original)); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkUpsertNew stores a new pod and removes it again (the informer's
// add and delete paths) in a store of 100,000 pods.
func BenchmarkUpsertNew(b *testing.B) {
	f := benchFixture(b)
	pod := NewPod("ns-7", "new-pod", "1", PodLabels(f.pods[7].Labels), PodNode("node-7"))
	name := NameOf(pod)
	b.Run("ours", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := f.ours.upsert(pod); err != nil {
				b.Fatal(err)
			}
			if _, existed, _ := f.ours.remove(name); !existed {
				b.Fatal("not stored")
			}
		}
	})
	b.Run("client-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := errors.Join(f.clientGo.Add(pod), f.clientGo.Delete(pod)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestIndexerReplaceConcurrentWithAddIndexers(t *testing.T) {
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"byNode": byNode})
	var items []*corev1.Pod
	for i := range 200 {
		items = append(items, NewPod("ns", fmt.Sprintf("p%d", i), "1", PodLabels(map[string]string{"app": fmt.Sprint(i % 3)}), PodNode(fmt.Sprint(i%7))))
	}
	for round := range 20 {
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := s.Replace(items[round:], fmt.Sprint(round)); err != nil {
				t.Error(err)
			}
		})
		wg.Go(func() {
			if err := s.AddIndexers(map[string]IndexFunc[*corev1.Pod]{fmt.Sprintf("byNode%d", round): byNode}); err != nil {
				t.Error(err)
			}
		})
		wg.Wait()
		// Every index, including one added during the Replace, covers
		// every object.
		mustCheck(t, s)
	}
}

// Readers of an object being updated must not race with the update, which
// replaces the entry's object in place (run with -race).
func TestIndexerReadsDuringUpdatesOfTheSameObject(t *testing.T) {
	s := NewIndexer[*corev1.Pod](nil)
	mustAdd(t, s, NewPod("ns", "p", "0"))
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range 2000 {
			if err := s.Update(NewPod("ns", "p", fmt.Sprint(i))); err != nil {
				t.Error(err)
				return
			}
		}
	})
	lister := NewLister(s, podResource).Namespace("ns")
	for range 2000 {
		if _, exists, _ := s.GetByKey("ns/p"); !exists {
			t.Fatal("GetByKey lost the object")
		}
		if _, err := lister.Get("p"); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}

// TestIndexerWritesAllocateOnlyIndexValues checks that an update of a
// stored object and a Replace allocate nothing per object beyond what the
// index functions return (and, for Replace, the entries): the prepared
// write and its values stay on the stack.
func TestIndexerWritesAllocateOnlyIndexValues(t *testing.T) {
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{
		NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod],
		"byNode":       byNode, // one allocation: its result
	})
	pod := NewPod("ns", "a", "1", PodNode("n1"), PodLabels(map[string]string{"app": "a"}))
	mustAdd(t, s, pod)
	if allocs := testing.AllocsPerRun(100, func() { _ = s.Update(pod) }); allocs != 1 {
		t.Errorf("Update of a stored object: %v allocations, want 1 (the index function's result)", allocs)
	}
	pods := make([]*corev1.Pod, 64)
	for i := range pods {
		pods[i] = NewPod("ns", fmt.Sprintf("p%d", i), "1", PodNode("n1"))
	}
	base := testing.AllocsPerRun(10, func() { _ = s.Replace(pods[:1], "1") })
	allocs := testing.AllocsPerRun(10, func() { _ = s.Replace(pods, "1") })
	// Per object beyond the first: its entry and the index function's
	// result, and the growth of the contents' tables, which do not depend
	// on the prepared writes.
	if perPod := (allocs - base) / float64(len(pods)-1); perPod > 2.5 {
		t.Errorf("Replace: %.2f allocations per object, want at most 2.5 (its entry, its index values, table growth)", perPod)
	}
}
