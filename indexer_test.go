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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// testPod returns a pod; users (annotation) feeds the multi-value index.
func testPod(namespace, name, rv string, labels map[string]string, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, ResourceVersion: rv, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: node},
	}
}

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
	mustAdd(t, s, testPod("ns", "foo", "1", nil, "bar"))
	got, exists, err := s.Get(testPod("ns", "foo", "", nil, ""))
	if err != nil || !exists || got.Spec.NodeName != "bar" {
		t.Fatalf("Get after Add = %v, %v, %v", got, exists, err)
	}
	if err := s.Update(testPod("ns", "foo", "2", nil, "baz")); err != nil {
		t.Fatal(err)
	}
	got, exists, _ = s.GetByKey("ns/foo")
	if !exists || got.Spec.NodeName != "baz" {
		t.Fatalf("GetByKey after Update = %v, %v", got, exists)
	}
	if err := s.Delete(testPod("ns", "foo", "3", nil, "")); err != nil {
		t.Fatal(err)
	}
	if _, exists, _ := s.GetByKey("ns/foo"); exists {
		t.Fatal("found a deleted object")
	}
	mustAdd(t, s, testPod("ns", "a", "4", nil, ""), testPod("ns", "c", "5", nil, ""), testPod("", "e", "6", nil, ""))
	if diff := cmp.Diff([]string{"e", "ns/a", "ns/c"}, keysOf(s.List())); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	keys := s.ListKeys()
	slices.Sort(keys)
	if diff := cmp.Diff([]string{"e", "ns/a", "ns/c"}, keys); diff != "" {
		t.Errorf("ListKeys (-want +got):\n%s", diff)
	}
	if err := s.Replace([]*corev1.Pod{testPod("ns", "foo", "7", nil, ""), testPod("ns", "bar", "8", nil, "")}, "9"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ns/bar", "ns/foo"}, keysOf(s.List())); diff != "" {
		t.Errorf("List after Replace (-want +got):\n%s", diff)
	}
	if err := s.Resync(); err != nil {
		t.Errorf("Resync: %v", err)
	}
	mustCheck(t, s)
}

func TestIndexerAddOfExistingKeyUpdates(t *testing.T) {
	s := NewIndexer(Indexers[*corev1.Pod]{"byNode": byNode})
	mustAdd(t, s, testPod("ns", "a", "1", nil, "n1"), testPod("ns", "a", "2", nil, "n2"))
	if diff := cmp.Diff([]string{"ns/a@2"}, versionsOf(s.List())); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string][]string{"n2": {"ns/a"}}, indexContent(t, s, "byNode")); diff != "" {
		t.Errorf("byNode (-want +got):\n%s", diff)
	}
}

func TestIndexerIndexByValue(t *testing.T) {
	s := NewIndexer(Indexers[*corev1.Pod]{"byNode": byNode})
	mustAdd(t, s, testPod("", "a", "1", nil, "b"), testPod("", "c", "1", nil, "b"),
		testPod("", "e", "1", nil, "f"), testPod("", "g", "1", nil, "h"))
	for value, want := range map[string][]string{"b": {"a", "c"}, "f": {"e"}, "h": {"g"}} {
		got, err := s.Index("byNode", testPod("", "", "", nil, value))
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
	s := NewIndexer(Indexers[*corev1.Pod]{"byUser": byUser})
	pod := func(name, users string) *corev1.Pod { return withUsers(testPod("", name, "1", nil, ""), users) }
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
	s := NewIndexer(Indexers[*corev1.Pod]{"byUser": byUser})
	one := withUsers(testPod("", "one", "1", nil, ""), "ernie,bert")
	two := withUsers(testPod("", "two", "1", nil, ""), "bert,oscar")
	tre := withUsers(testPod("", "tre", "1", nil, ""), "ernie,elmo")
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
	s := NewIndexer(Indexers[*corev1.Pod]{"byNode": byNode})
	mustAdd(t, s, testPod("", "retain", "1", map[string]string{"app": "x"}, "shared"),
		testPod("", "delete", "1", map[string]string{"app": "y"}, "shared"),
		testPod("", "alone", "1", map[string]string{"app": "y", "only": "me"}, "own"))
	if err := s.Delete(testPod("", "delete", "2", nil, "")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(testPod("", "alone", "2", nil, "")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{"shared": {"retain"}}, indexContent(t, s, "byNode")); diff != "" {
		t.Errorf("byNode (-want +got):\n%s", diff)
	}
	s.mu.RLock()
	_, yKept := s.c.labels["app"].values["y"]
	_, onlyKept := s.c.labels["only"]
	s.mu.RUnlock()
	if yKept || onlyKept {
		t.Errorf("empty label lists kept: app=y %v, only %v", yKept, onlyKept)
	}
	mustCheck(t, s)
}

func TestIndexerReplaceRebuildsIndexes(t *testing.T) {
	s := NewIndexer(Indexers[*corev1.Pod]{"byNode": byNode})
	mustAdd(t, s, testPod("ns", "a", "1", map[string]string{"app": "old"}, "n1"), testPod("ns", "b", "1", nil, "n1"))
	if err := s.Replace([]*corev1.Pod{
		testPod("ns", "b", "5", map[string]string{"app": "new"}, "n2"),
		testPod("other", "c", "5", nil, "n3"),
	}, "10"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{"n2": {"ns/b"}, "n3": {"other/c"}}, indexContent(t, s, "byNode")); diff != "" {
		t.Errorf("byNode (-want +got):\n%s", diff)
	}
	if got := s.Select("", mustParse(t, "app=old")); got != nil {
		t.Errorf("label index still has app=old: %v", keysOf(got))
	}
	if diff := cmp.Diff([]string{"ns/b"}, keysOf(s.Select("ns", nil))); diff != "" {
		t.Errorf("Select(ns) (-want +got):\n%s", diff)
	}
	mustCheck(t, s)
}

func TestIndexerReplaceKeepsLastOfDuplicateNames(t *testing.T) {
	s := NewIndexer(Indexers[*corev1.Pod]{"byNode": byNode})
	if err := s.Replace([]*corev1.Pod{testPod("ns", "a", "1", nil, "n1"), testPod("ns", "a", "2", nil, "n2")}, "3"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ns/a@2"}, versionsOf(s.List())); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	mustCheck(t, s)
}

func TestIndexerAddIndexers(t *testing.T) {
	s := NewIndexer(Indexers[*corev1.Pod]{"byNode": byNode})
	mustAdd(t, s, withUsers(testPod("", "a", "1", nil, "n1"), "x,y"), withUsers(testPod("", "b", "1", nil, "n2"), "y"))
	if err := s.AddIndexers(Indexers[*corev1.Pod]{"byUser": byUser}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]string{"x": {"a"}, "y": {"a", "b"}}, indexContent(t, s, "byUser")); diff != "" {
		t.Errorf("back-filled byUser (-want +got):\n%s", diff)
	}
	mustAdd(t, s, withUsers(testPod("", "c", "1", nil, "n1"), "x"))
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
		indexers Indexers[*corev1.Pod]
		wantErr  string
	}{
		{"name conflict", Indexers[*corev1.Pod]{"byNode": byNode, "zeta": byNode, "byUser": byUser}, `indexer conflict: byNode, byUser already exist`},
		{"nil function", Indexers[*corev1.Pod]{"nil": nil}, `adding index "nil": nil IndexFunc`},
		{"function error", Indexers[*corev1.Pod]{"failing": failing}, `adding index "failing": object b: boom`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewIndexer(Indexers[*corev1.Pod]{"byNode": byNode, "byUser": byUser})
			mustAdd(t, s, testPod("", "a", "1", nil, "n"), testPod("", "b", "1", nil, "n"))
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

func TestIndexerIndexFuncErrorLeavesStoreUnchanged(t *testing.T) {
	boom := errors.New("boom")
	failing := func(p *corev1.Pod) ([]string, error) {
		if p.Labels["fail"] != "" {
			return nil, boom
		}
		return []string{p.Spec.NodeName}, nil
	}
	s := NewIndexer(Indexers[*corev1.Pod]{"a": byNode, "failing": failing})
	mustAdd(t, s, testPod("ns", "x", "1", map[string]string{"app": "x"}, "n1"))
	bad := testPod("ns", "x", "2", map[string]string{"fail": "yes"}, "n2")
	for name, op := range map[string]func() error{
		"Add":     func() error { return s.Add(bad) },
		"Update":  func() error { return s.Update(bad) },
		"new":     func() error { return s.Add(testPod("ns", "y", "2", map[string]string{"fail": "yes"}, "n2")) },
		"Replace": func() error { return s.Replace([]*corev1.Pod{testPod("ns", "z", "2", nil, "n"), bad}, "9") },
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
	s := NewIndexer(Indexers[*corev1.Pod]{"nil": nil})
	err := s.Add(testPod("", "a", "1", nil, ""))
	if err == nil || !strings.Contains(err.Error(), `index "nil" has a nil IndexFunc`) {
		t.Errorf("Add error = %v", err)
	}
	if got := s.List(); len(got) != 0 {
		t.Errorf("stored %v", keysOf(got))
	}
}

func TestIndexerIndexFuncCalledOncePerVersion(t *testing.T) {
	var calls []string
	counting := func(p *corev1.Pod) ([]string, error) {
		calls = append(calls, p.ResourceVersion)
		return []string{p.Spec.NodeName}, nil
	}
	s := NewIndexer(Indexers[*corev1.Pod]{"n": counting})
	mustAdd(t, s, testPod("", "a", "1", nil, "n1"))
	if err := s.Update(testPod("", "a", "2", nil, "n2")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(testPod("", "a", "3", nil, "")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"1", "2"}, calls); diff != "" {
		t.Errorf("index function calls (-want +got):\n%s", diff)
	}
}

func TestIndexerUnknownIndex(t *testing.T) {
	s := NewIndexer[*corev1.Pod](nil)
	mustAdd(t, s, testPod("", "a", "1", nil, ""))
	want := `index with name "nope" does not exist`
	_, err1 := s.ByIndex("nope", "x")
	_, err2 := s.IndexKeys("nope", "x")
	_, err3 := s.Index("nope", testPod("", "a", "", nil, ""))
	for i, err := range []error{err1, err2, err3} {
		if err == nil || err.Error() != want {
			t.Errorf("call %d: error %v, want %q", i, err, want)
		}
	}
	if diff := cmp.Diff([]string{}, s.ListIndexFuncValues("nope")); diff != "" {
		t.Errorf("ListIndexFuncValues (-want +got):\n%s", diff)
	}
}

func TestIndexerMissingKeys(t *testing.T) {
	s := NewIndexer(Indexers[*corev1.Pod]{"byNode": byNode})
	if got, exists, err := s.Get(testPod("ns", "missing", "", nil, "")); got != nil || exists || err != nil {
		t.Errorf("Get(missing) = %v, %v, %v", got, exists, err)
	}
	for _, key := range []string{"ns/missing", "missing", "/a", "a/b/c", ""} {
		if got, exists, err := s.GetByKey(key); got != nil || exists || err != nil {
			t.Errorf("GetByKey(%q) = %v, %v, %v", key, got, exists, err)
		}
	}
	// Deleting what is not stored is not an error and still records the RV.
	if err := s.Delete(testPod("ns", "missing", "7", nil, "")); err != nil {
		t.Errorf("Delete(missing): %v", err)
	}
	if got := s.LastStoreSyncResourceVersion(); got != "7" {
		t.Errorf("resource version after Delete(missing) = %q, want 7", got)
	}
	// Updating what is not stored adds it.
	if err := s.Update(testPod("ns", "missing", "8", nil, "n")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ns/missing@8"}, versionsOf(s.List())); diff != "" {
		t.Errorf("after Update(missing) (-want +got):\n%s", diff)
	}
	if _, existed, err := s.remove(ObjectName{Name: "nothing"}); existed || err != nil {
		t.Errorf("remove(missing) = %v, %v", existed, err)
	}
	// "/a" must not find the cluster-scoped object "a".
	mustAdd(t, s, testPod("", "a", "9", nil, ""))
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
		"Replace": s.Replace([]*corev1.Pod{testPod("", "a", "1", nil, ""), nil}, "1"),
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
		{"add", func() error { return s.Add(testPod("", "k1", "10", nil, "")) }, "10"},
		{"add same RV", func() error { return s.Add(testPod("", "k3", "10", nil, "")) }, "10"},
		{"add newer", func() error { return s.Add(testPod("", "k4", "20", nil, "")) }, "20"},
		{"delete with newer RV", func() error { return s.Delete(testPod("", "k4", "30", nil, "")) }, "30"},
		{"update", func() error { return s.Update(testPod("", "k1", "40", nil, "")) }, "40"},
		{"remove keeps RV", func() error { _, _, err := s.remove(ObjectName{Name: "k1"}); return err }, "40"},
		{"upsert", func() error { _, _, err := s.upsert(testPod("", "k5", "45", nil, "")); return err }, "45"},
		{"replace", func() error { return s.Replace([]*corev1.Pod{testPod("", "k2", "30", nil, "")}, "50") }, "50"},
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
	s := NewIndexer(Indexers[*corev1.Pod]{"byNode": byNode})
	a1, a2 := testPod("ns", "a", "1", nil, "n1"), testPod("ns", "a", "2", nil, "n2")
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
	b, c, d := testPod("ns", "b", "3", nil, "n"), testPod("ns", "c", "3", nil, "n"), testPod("ns", "d", "3", nil, "n")
	removed, previous, err := s.replaceAll([]*corev1.Pod{b, c}, "4")
	if err != nil || removed != nil || previous != nil {
		t.Errorf("first replaceAll = %v, %v, %v", removed, previous, err)
	}
	mustAdd(t, s, d)
	b2 := testPod("ns", "b", "5", nil, "m")
	e := testPod("ns", "e", "5", nil, "m")
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

func TestMetaNamespaceIndexFunc(t *testing.T) {
	s := NewIndexer(Indexers[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]})
	mustAdd(t, s, testPod("a", "x", "1", nil, ""), testPod("a", "y", "1", nil, ""), testPod("", "z", "1", nil, ""))
	if diff := cmp.Diff(map[string][]string{"a": {"a/x", "a/y"}, "": {"z"}}, indexContent(t, s, NamespaceIndex)); diff != "" {
		t.Errorf("namespace index (-want +got):\n%s", diff)
	}
}

func TestIndexerConcurrentUse(t *testing.T) {
	s := NewIndexer(Indexers[*corev1.Pod]{"byNode": byNode})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				p := testPod(fmt.Sprintf("ns-%d", i%3), fmt.Sprintf("p-%d", i%20), fmt.Sprint(i),
					map[string]string{"app": fmt.Sprint(i % 4)}, fmt.Sprintf("n-%d", (i+w)%5))
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
				s.Select("", mustParseNoT(fmt.Sprintf("app=%d", i%4)))
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
			ours: NewIndexer(Indexers[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod], "byNode": byNode}),
			clientGo: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{
				cache.NamespaceIndex: cache.MetaNamespaceIndexFunc,
				"byNode": func(obj any) ([]string, error) {
					return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
				},
			}),
		}
		for i := range 100_000 {
			p := testPod(fmt.Sprintf("ns-%d", i%1000), fmt.Sprintf("pod-%d", i), fmt.Sprint(i+1), map[string]string{
				"app":               fmt.Sprintf("app-%d", i%100),
				"tier":              fmt.Sprintf("tier-%d", i%3),
				"pod-template-hash": fmt.Sprintf("%08x", uint32(i/10)*2654435761),
			}, fmt.Sprintf("node-%d", i%1000))
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
	pod := testPod("ns-7", "new-pod", "1", f.pods[7].Labels, "node-7")
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
