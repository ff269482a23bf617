package informer

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestIndexerIndexByValue(t *testing.T) {
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"byNode": byNode})
	mustAdd(t, s, NewPod("", "a", "1", PodNode("b")), NewPod("", "c", "1", PodNode("b")),
		NewPod("", "e", "1", PodNode("f")), NewPod("", "g", "1", PodNode("h")))
	for value, want := range map[string][]string{"b": {"a", "c"}, "f": {"e"}, "h": {"g"}} {
		got, err := s.Index("byNode", NewPod("", "", "", PodNode(value)))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, keysOf(got)); diff != "" {
			t.Errorf("Index(%q) (-want +got):\n%s", value, diff)
		}
	}
	values := s.ListIndexFuncValues("byNode")
	slices.Sort(values)
	if diff := cmp.Diff([]string{"b", "f", "h"}, values); diff != "" {
		t.Errorf("ListIndexFuncValues (-want +got):\n%s", diff)
	}
}

func TestIndexerMultiValueIndex(t *testing.T) {
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"byUser": byUser})
	pod := func(name, users string) *corev1.Pod { return withUsers(NewPod("", name, "1"), users) }
	steps := []struct {
		name string
		op   func() error
		want map[string][]string
	}{
		{"add", func() error { return errors.Join(s.Add(pod("key1", "foo")), s.Add(pod("key2", "bar"))) },
			map[string][]string{"foo": {"key1"}, "bar": {"key2"}}},
		{"key2 gains foo", func() error { return s.Update(pod("key2", "foo,bar")) },
			map[string][]string{"foo": {"key1", "key2"}, "bar": {"key2"}}},
		{"key1 gains bar", func() error { return s.Update(pod("key1", "foo,bar")) },
			map[string][]string{"foo": {"key1", "key2"}, "bar": {"key1", "key2"}}},
		{"add key3", func() error { return s.Add(pod("key3", "foo,bar,baz")) },
			map[string][]string{"foo": {"key1", "key2", "key3"}, "bar": {"key1", "key2", "key3"}, "baz": {"key3"}}},
		{"key1 loses bar", func() error { return s.Update(pod("key1", "foo")) },
			map[string][]string{"foo": {"key1", "key2", "key3"}, "bar": {"key2", "key3"}, "baz": {"key3"}}},
		{"key2 loses foo", func() error { return s.Update(pod("key2", "bar")) },
			map[string][]string{"foo": {"key1", "key3"}, "bar": {"key2", "key3"}, "baz": {"key3"}}},
		{"delete key1", func() error { return s.Delete(pod("key1", "")) },
			map[string][]string{"foo": {"key3"}, "bar": {"key2", "key3"}, "baz": {"key3"}}},
		{"delete key3", func() error { return s.Delete(pod("key3", "")) },
			map[string][]string{"bar": {"key2"}}},
		{"repeated values count once", func() error { return s.Update(pod("key2", "bar,bar,qux,bar")) },
			map[string][]string{"bar": {"key2"}, "qux": {"key2"}}},
		{"key2 gains four values", func() error { return s.Update(pod("key2", "a,b,c,d,e")) },
			map[string][]string{"a": {"key2"}, "b": {"key2"}, "c": {"key2"}, "d": {"key2"}, "e": {"key2"}}},
		{"key2 loses its second and last values and gains one", func() error { return s.Update(pod("key2", "a,c,d,f")) },
			map[string][]string{"a": {"key2"}, "c": {"key2"}, "d": {"key2"}, "f": {"key2"}}},
		{"key2 loses its first value and all but one other", func() error { return s.Update(pod("key2", "x,c")) },
			map[string][]string{"c": {"key2"}, "x": {"key2"}}},
		{"no values", func() error { return s.Update(pod("key2", "")) },
			map[string][]string{}},
	}
	for _, step := range steps {
		if err := step.op(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if diff := cmp.Diff(step.want, indexContent(t, s, "byUser")); diff != "" {
			t.Errorf("%s: index (-want +got):\n%s", step.name, diff)
		}
		mustCheck(t, s)
	}
}

func TestIndexerByIndexAndIndexWithSharedObjects(t *testing.T) {
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"byUser": byUser})
	one := withUsers(NewPod("", "one", "1"), "ernie,bert")
	two := withUsers(NewPod("", "two", "1"), "bert,oscar")
	tre := withUsers(NewPod("", "tre", "1"), "ernie,elmo")
	mustAdd(t, s, one, two, tre)
	for user, want := range map[string][]string{
		"ernie": {"one", "tre"}, "bert": {"one", "two"}, "elmo": {"tre"}, "oscar": {"two"}, "elmo1": {},
	} {
		got, err := s.ByIndex("byUser", user)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, keysOf(got)); diff != "" {
			t.Errorf("ByIndex(%q) (-want +got):\n%s", user, diff)
		}
	}
	// one shares ernie with tre and bert with two; each object is listed once.
	got, err := s.Index("byUser", one)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"one", "tre", "two"}, keysOf(got)); diff != "" {
		t.Errorf("Index(one) (-want +got):\n%s", diff)
	}
	if err := s.Delete(tre); err != nil {
		t.Fatal(err)
	}
	twoCopy := two.DeepCopy()
	twoCopy.Annotations["users"] = "oscar"
	if err := s.Update(twoCopy); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{"ernie": {"one"}, "bert": {"one"}, "oscar": {"two"}}, indexContent(t, s, "byUser")); diff != "" {
		t.Errorf("after delete and update (-want +got):\n%s", diff)
	}
}

func TestIndexerEmptyBucketsRemoved(t *testing.T) {
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"byNode": byNode})
	mustAdd(t, s, NewPod("", "retain", "1", PodLabels(map[string]string{"app": "x"}), PodNode("shared")),
		NewPod("", "delete", "1", PodLabels(map[string]string{"app": "y"}), PodNode("shared")),
		NewPod("", "alone", "1", PodLabels(map[string]string{"app": "y", "only": "me"}), PodNode("own")))
	// Index the label keys.
	if got := s.selectLabels("", mustParse(t, "app,only")); len(got) != 1 {
		t.Fatalf("selected %d objects, want 1", len(got))
	}
	if err := s.Delete(NewPod("", "delete", "2")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(NewPod("", "alone", "2")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{"shared": {"retain"}}, indexContent(t, s, "byNode")); diff != "" {
		t.Errorf("byNode (-want +got):\n%s", diff)
	}
	s.mu.RLock()
	_, yKept := s.c.labels["app"].byValue["y"]
	onlyKept := len(s.c.labels["only"].byValue) > 0
	s.mu.RUnlock()
	if yKept || onlyKept {
		t.Errorf("empty label lists kept: app=y %v, only %v", yKept, onlyKept)
	}
	mustCheck(t, s)
}

func TestIndexerAddIndexers(t *testing.T) {
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"byNode": byNode})
	mustAdd(t, s, withUsers(NewPod("", "a", "1", PodNode("n1")), "x,y"), withUsers(NewPod("", "b", "1", PodNode("n2")), "y"))
	if err := s.AddIndexers(map[string]IndexFunc[*corev1.Pod]{"byUser": byUser}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{"x": {"a"}, "y": {"a", "b"}}, indexContent(t, s, "byUser")); diff != "" {
		t.Errorf("back-filled byUser (-want +got):\n%s", diff)
	}
	mustAdd(t, s, withUsers(NewPod("", "c", "1", PodNode("n1")), "x"))
	if diff := cmp.Diff(map[string][]string{"x": {"a", "c"}, "y": {"a", "b"}}, indexContent(t, s, "byUser")); diff != "" {
		t.Errorf("byUser after Add (-want +got):\n%s", diff)
	}
	names := []string{}
	for name := range s.GetIndexers() {
		names = append(names, name)
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"byNode", "byUser"}, names); diff != "" {
		t.Errorf("GetIndexers (-want +got):\n%s", diff)
	}
	mustCheck(t, s)
}

func TestIndexerAddIndexersRejects(t *testing.T) {
	failing := func(p *corev1.Pod) ([]string, error) {
		if p.Name == "b" {
			return nil, errors.New("boom")
		}
		return []string{"v"}, nil
	}
	for _, tc := range []struct {
		name     string
		indexers map[string]IndexFunc[*corev1.Pod]
		wantErr  string
	}{
		{"name conflict", map[string]IndexFunc[*corev1.Pod]{"byNode": byNode, "zeta": byNode, "byUser": byUser}, `indexer conflict: byNode, byUser already exist`},
		{"nil function", map[string]IndexFunc[*corev1.Pod]{"nil": nil}, `adding index "nil": nil IndexFunc`},
		{"function error", map[string]IndexFunc[*corev1.Pod]{"failing": failing}, `adding index "failing": object b: boom`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"byNode": byNode, "byUser": byUser})
			mustAdd(t, s, NewPod("", "a", "1", PodNode("n")), NewPod("", "b", "1", PodNode("n")))
			err := s.AddIndexers(tc.indexers)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("AddIndexers error = %v, want it to contain %q", err, tc.wantErr)
			}
			if got := len(s.GetIndexers()); got != 2 {
				t.Errorf("%d indexers after a failed AddIndexers, want 2", got)
			}
			mustCheck(t, s)
		})
	}
}

func TestIndexerIndexFuncCalledOncePerVersion(t *testing.T) {
	var calls []string
	counting := func(p *corev1.Pod) ([]string, error) {
		calls = append(calls, p.ResourceVersion)
		return []string{p.Spec.NodeName}, nil
	}
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"n": counting})
	mustAdd(t, s, NewPod("", "a", "1", PodNode("n1")))
	if err := s.Update(NewPod("", "a", "2", PodNode("n2"))); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(NewPod("", "a", "3")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"1", "2"}, calls); diff != "" {
		t.Errorf("index function calls (-want +got):\n%s", diff)
	}
}

func TestIndexerUnknownIndex(t *testing.T) {
	s := NewIndexer[*corev1.Pod](nil)
	mustAdd(t, s, NewPod("", "a", "1"))
	want := `index with name "nope" does not exist`
	_, err1 := s.ByIndex("nope", "x")
	_, err2 := s.IndexKeys("nope", "x")
	_, err3 := s.Index("nope", NewPod("", "a", ""))
	for i, err := range []error{err1, err2, err3} {
		if err == nil || err.Error() != want {
			t.Errorf("call %d: error %v, want %q", i, err, want)
		}
	}
	if diff := cmp.Diff([]string{}, s.ListIndexFuncValues("nope")); diff != "" {
		t.Errorf("ListIndexFuncValues (-want +got):\n%s", diff)
	}
}

func TestMetaNamespaceIndexFunc(t *testing.T) {
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]})
	mustAdd(t, s, NewPod("a", "x", "1"), NewPod("a", "y", "1"), NewPod("", "z", "1"))
	if diff := cmp.Diff(map[string][]string{"a": {"a/x", "a/y"}, "": {"z"}}, indexContent(t, s, NamespaceIndex)); diff != "" {
		t.Errorf("namespace index (-want +got):\n%s", diff)
	}
}

func TestIndexerIndexFuncErrorLeavesStoreUnchanged(t *testing.T) {
	boom := errors.New("boom")
	failing := func(p *corev1.Pod) ([]string, error) {
		if p.Labels["fail"] != "" {
			return nil, boom
		}
		return []string{p.Spec.NodeName}, nil
	}
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"a": byNode, "failing": failing})
	mustAdd(t, s, NewPod("ns", "x", "1", PodLabels(map[string]string{"app": "x"}), PodNode("n1")))
	bad := NewPod("ns", "x", "2", PodLabels(map[string]string{"fail": "yes"}), PodNode("n2"))
	for name, op := range map[string]func() error{
		"Add":    func() error { return s.Add(bad) },
		"Update": func() error { return s.Update(bad) },
		"new": func() error {
			return s.Add(NewPod("ns", "y", "2", PodLabels(map[string]string{"fail": "yes"}), PodNode("n2")))
		},
		"Replace": func() error { return s.Replace([]*corev1.Pod{NewPod("ns", "z", "2", PodNode("n")), bad}, "9") },
		"upsert":  func() error { _, _, err := s.upsert(bad); return err },
	} {
		err := op()
		if !errors.Is(err, boom) || !strings.Contains(err.Error(), `index "failing"`) || !strings.Contains(err.Error(), "ns/") {
			t.Errorf("%s: error %v should wrap the index function's error and name the index and the key", name, err)
		}
		if diff := cmp.Diff([]string{"ns/x@1"}, versionsOf(s.List())); diff != "" {
			t.Errorf("%s: store changed (-want +got):\n%s", name, diff)
		}
		if diff := cmp.Diff(map[string][]string{"n1": {"ns/x"}}, indexContent(t, s, "a")); diff != "" {
			t.Errorf("%s: index changed (-want +got):\n%s", name, diff)
		}
		if got := s.LastStoreSyncResourceVersion(); got != "1" {
			t.Errorf("%s: resource version %q, want 1", name, got)
		}
		mustCheck(t, s)
	}
	if _, err := s.Index("failing", bad); !errors.Is(err, boom) {
		t.Errorf("Index error = %v, want it to wrap boom", err)
	}
}

func TestIndexerNilIndexFunc(t *testing.T) {
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"nil": nil})
	err := s.Add(NewPod("", "a", "1"))
	if err == nil || !strings.Contains(err.Error(), `index "nil" has a nil IndexFunc`) {
		t.Errorf("Add error = %v", err)
	}
	if got := s.List(); len(got) != 0 {
		t.Errorf("stored %v", keysOf(got))
	}
}

func TestIndexerNamespaceIndexUsesNamespaceLists(t *testing.T) {
	// A function of its own is filed like any other index; one that
	// returns what MetaNamespaceIndexFunc returns is one.
	lookalike := func(p *corev1.Pod) ([]string, error) { return []string{p.Namespace}, nil }
	forwards := func(p *corev1.Pod) ([]string, error) { return MetaNamespaceIndexFunc(p) }
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{
		NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod],
		"lookalike":    lookalike,
		"forwards":     forwards,
		"byNode":       byNode,
	})
	var flags []string
	for _, ix := range s.plan.indexes {
		flags = append(flags, fmt.Sprintf("%s:%t", ix.name, ix.byNamespace))
	}
	if diff := cmp.Diff([]string{"byNode:false", "forwards:true", "lookalike:false", "namespace:true"}, flags); diff != "" {
		t.Fatalf("indexes recognized as by namespace (-want +got):\n%s", diff)
	}
	// The recognized index must always answer like the look-alike, which is
	// filed like any other index.
	check := func(step string) {
		t.Helper()
		mustCheck(t, s)
		for _, index := range []string{NamespaceIndex, "forwards"} {
			if diff := cmp.Diff(indexContent(t, s, "lookalike"), indexContent(t, s, index)); diff != "" {
				t.Errorf("%s: index %s (-lookalike +%s):\n%s", step, index, index, diff)
			}
		}
	}
	mustAdd(t, s, NewPod("a", "p1", "1", PodNode("n1")), NewPod("a", "p2", "1", PodNode("n1")),
		NewPod("b", "p1", "1", PodNode("n2")), NewPod("", "cluster", "1"))
	check("add")
	if err := s.Update(NewPod("b", "p1", "2", PodNode("n3"))); err != nil {
		t.Fatal(err)
	}
	check("update")
	if err := errors.Join(s.Delete(NewPod("a", "p1", "3")), s.Delete(NewPod("b", "p1", "3"))); err != nil {
		t.Fatal(err)
	}
	check("delete")
	got, err := s.ByIndex(NamespaceIndex, "a")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a/p2"}, keysOf(got)); diff != "" {
		t.Errorf("ByIndex(namespace, a) (-want +got):\n%s", diff)
	}
	got, err = s.Index(NamespaceIndex, NewPod("", "other", ""))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"cluster"}, keysOf(got)); diff != "" {
		t.Errorf("Index(namespace, cluster-scoped) (-want +got):\n%s", diff)
	}
	if err := s.AddIndexers(map[string]IndexFunc[*corev1.Pod]{"late": MetaNamespaceIndexFunc[*corev1.Pod]}); err != nil {
		t.Fatal(err)
	}
	check("index added")
	if diff := cmp.Diff(indexContent(t, s, "lookalike"), indexContent(t, s, "late")); diff != "" {
		t.Errorf("added namespace index (-lookalike +late):\n%s", diff)
	}
	if err := s.Replace([]*corev1.Pod{NewPod("c", "p9", "4"), NewPod("a", "p2", "4")}, "4"); err != nil {
		t.Fatal(err)
	}
	check("replace")
	if diff := cmp.Diff(map[string][]string{"a": {"a/p2"}, "c": {"c/p9"}}, indexContent(t, s, "late")); diff != "" {
		t.Errorf("after Replace (-want +got):\n%s", diff)
	}
}

// BenchmarkNamespaceIndex compares a namespace index whose function the
// Indexer recognizes as MetaNamespaceIndexFunc (served from its own
// per-namespace lists) with a closure computing the same values, which the
// Indexer computes and files like any other index. One op replaces the
// contents with 100,000 pods in 1,000 namespaces; retained-B/pod is the
// heap the filled Indexer keeps per pod.
func BenchmarkNamespaceIndex(b *testing.B) {
	pods := make([]*corev1.Pod, 100_000)
	for i := range pods {
		pods[i] = NewPod(fmt.Sprintf("ns-%d", i%1000), fmt.Sprintf("pod-%d", i), "1",
			PodLabels(map[string]string{"app": fmt.Sprintf("app-%d", i%100)}))
	}
	for name, fn := range map[string]IndexFunc[*corev1.Pod]{
		"recognized": MetaNamespaceIndexFunc[*corev1.Pod],
		"closure":    func(p *corev1.Pod) ([]string, error) { return []string{p.Namespace}, nil },
	} {
		b.Run(name, func(b *testing.B) {
			var retained uint64
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				before := heapInUse()
				b.StartTimer()
				s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{NamespaceIndex: fn})
				if err := s.Replace(pods, "1"); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				retained = heapInUse() - before
				runtime.KeepAlive(s)
				b.StartTimer()
			}
			b.ReportMetric(float64(retained)/float64(len(pods)), "retained-B/pod")
		})
	}
}

// heapInUse returns the live heap after a full collection.
func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestIndexPlanServesEachIndexByItsKind checks the plan an Indexer files
// by: the namespace and label kinds first, then one function kind per user
// index that MetaNamespaceIndexFunc does not serve, each at the position
// its index names (kind) and with its own values and lists (value). A
// function that panics or fails on the zero
// T, as the recognition calls it, is a function index like any other.
func TestIndexPlanServesEachIndexByItsKind(t *testing.T) {
	failing := func(*corev1.Pod) ([]string, error) { return nil, errors.New("no") }
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{
		"a-node":       byNode, // panics on the zero T
		"b-failing":    failing,
		NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod],
	})
	type kindView struct {
		Kind  string
		Value int
	}
	type indexView struct {
		Name        string
		ByNamespace bool
		Kind        int32
	}
	view := func(plan *indexPlan[*corev1.Pod]) ([]kindView, []indexView) {
		var kinds []kindView
		for _, k := range plan.kinds {
			switch k := k.(type) {
			case namespaceKind[*corev1.Pod]:
				kinds = append(kinds, kindView{Kind: "namespace"})
			case labelKind[*corev1.Pod]:
				kinds = append(kinds, kindView{Kind: "label"})
			case *funcKind[*corev1.Pod]:
				kinds = append(kinds, kindView{"func " + k.name, k.value})
			}
		}
		var indexes []indexView
		for _, ix := range plan.indexes {
			indexes = append(indexes, indexView{ix.name, ix.byNamespace, ix.kind})
		}
		return kinds, indexes
	}
	kinds, indexes := view(s.plan)
	wantKinds := []kindView{{Kind: "namespace"}, {Kind: "label"}, {"func a-node", 0}, {"func b-failing", 1}}
	if diff := cmp.Diff(wantKinds, kinds); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
	wantIndexes := []indexView{{"a-node", false, 2}, {"b-failing", false, 3}, {NamespaceIndex, true, ownerNamespace}}
	if diff := cmp.Diff(wantIndexes, indexes); diff != "" {
		t.Errorf("indexes (-want +got):\n%s", diff)
	}
	// An added index extends the plan: the kinds before keep their places.
	if err := s.AddIndexers(map[string]IndexFunc[*corev1.Pod]{"c-name": func(p *corev1.Pod) ([]string, error) {
		return []string{p.Name}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	kinds, indexes = view(s.plan)
	if diff := cmp.Diff(append(wantKinds, kindView{"func c-name", 2}), kinds); diff != "" {
		t.Errorf("kinds after AddIndexers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(append(wantIndexes, indexView{"c-name", false, 4}), indexes); diff != "" {
		t.Errorf("indexes after AddIndexers (-want +got):\n%s", diff)
	}
	if s.published.Load() != s.plan {
		t.Error("the published plan is not the Indexer's")
	}
}
