package wire

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"
	"weak"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/randfill"

	"github.com/kubetyped/informer/internal/testkit"
)

// internedCopy interns a deep copy of obj with T's intern function and
// returns it; obj is left as it was.
func internedCopy[T interface {
	metav1.Object
	DeepCopy() T
}](t *InternTable, obj T) T {
	c := obj.DeepCopy()
	InternObject(t, InternFuncFor[T](), c)
	return c
}

// TestInternChangesNoValue interns random pods, unstructured objects and
// metadata and compares each with an untouched deep copy.
func TestInternChangesNoValue(t *testing.T) {
	table := newBareInternTable()
	f := randfill.NewWithSeed(14).NilChance(0.2).NumElements(0, 4)
	for i := range 100 {
		var pod corev1.Pod
		f.Fill(&pod)
		if diff := testkit.DiffLarge(&pod, internedCopy(table, &pod)); diff != "" {
			t.Fatalf("pod %d changed by interning (-before +after):\n%s", i, diff)
		}
		var meta metav1.PartialObjectMetadata
		f.Fill(&meta.ObjectMeta)
		if diff := testkit.DiffLarge(&meta, internedCopy(table, &meta)); diff != "" {
			t.Fatalf("metadata %d changed by interning (-before +after):\n%s", i, diff)
		}
		var cm corev1.ConfigMap // a type without a walk of its own: metadata only
		f.Fill(&cm)
		if diff := testkit.DiffLarge(&cm, internedCopy(table, &cm)); diff != "" {
			t.Fatalf("config map %d changed by interning (-before +after):\n%s", i, diff)
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w", "namespace": "ns", "labels": map[string]any{"app": "a"}},
		"spec":     map[string]any{"list": []any{"x", int64(1), map[string]any{"k": "v"}, []any{"y"}}, "flag": true},
	}}
	if diff := testkit.DiffLarge(u, internedCopy(table, u)); diff != "" {
		t.Fatalf("unstructured object changed by interning (-before +after):\n%s", diff)
	}
}

// TestInternShares checks that equal strings of two objects end up sharing
// their bytes, managed fields included, and that unique ones are left alone.
func TestInternShares(t *testing.T) {
	table := newBareInternTable()
	mk := func(name string) *corev1.Pod {
		p := testkit.NewPod("ns-"+strings.Repeat("x", 1), name, "1", testkit.PodLabels(map[string]string{"app": "web"}), testkit.PodNode("node-1"))
		p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{}}`)}}}
		p.Spec.Containers = []corev1.Container{{Name: "c", Image: "registry/app:1"}}
		return p
	}
	// A string is shared from its second sighting on: the first object
	// keeps its own copy.
	_ = internedCopy(table, mk("first"))
	a, b := internedCopy(table, mk("a")), internedCopy(table, mk("b"))
	same := func(what string, x, y string) {
		t.Helper()
		if unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("%s: %q not shared", what, x)
		}
	}
	same("namespace", a.Namespace, b.Namespace)
	same("node", a.Spec.NodeName, b.Spec.NodeName)
	same("image", a.Spec.Containers[0].Image, b.Spec.Containers[0].Image)
	same("label value", a.Labels["app"], b.Labels["app"])
	for k := range a.Labels {
		for k2 := range b.Labels {
			same("label key", k, k2)
		}
	}
	if &a.ManagedFields[0].FieldsV1.Raw[0] != &b.ManagedFields[0].FieldsV1.Raw[0] {
		t.Error("managed fields' bytes not shared")
	}
	if raw := a.ManagedFields[0].FieldsV1.Raw; cap(raw) != len(raw) {
		t.Errorf("shared bytes have capacity %d beyond their length %d: an append would write into them", cap(raw), len(raw))
	}
	if a.Name == b.Name || unsafe.StringData(a.Name) == unsafe.StringData(b.Name) {
		t.Error("names shared")
	}
}

// TestInternTableShrinks interns the strings of many objects, lets the
// objects go and checks that a sweep leaves the table empty.
func TestInternTableShrinks(t *testing.T) {
	table := newBareInternTable()
	pods := make([]*corev1.Pod, 3000)
	for i := range pods {
		// Strings longer than 16 bytes: tiny ones may share an allocation
		// with a live object and outlive their own (see weak.Pointer).
		// Twice: a string enters the table when seen a second time.
		node := testkit.PodNode(fmt.Sprintf("a-node-name-long-enough-%d", i))
		_ = internedCopy(table, testkit.NewPod("ns", "p", "1", node))
		pods[i] = internedCopy(table, testkit.NewPod("ns", "p", "1", node))
	}
	if n := table.len(); n < len(pods) {
		t.Fatalf("table holds %d strings, want at least %d", n, len(pods))
	}
	runtime.KeepAlive(pods)
	eventuallyForgetsAll(t, table)
}

// eventuallyForgetsAll waits for table's strings to forget every string
// they hold now, once the objects using them are let go (the caller's
// part) and the garbage collector has freed them, the sweeps coming from
// insertions, as in production.
func eventuallyForgetsAll(t *testing.T, table *InternTable) {
	t.Helper()
	eventuallyForgets(t, table, "string", []shareSetForTest{&table.strings}, func() bool { return sweepStringsThroughPut(table) })
}

// freshStrings numbers the strings sweepStringsThroughPut makes, so that
// each is new to any table.
var freshStrings atomic.Int64

// sweepStringsThroughPut interns new strings, each twice (to enter the
// table) and used by nothing, until the strings' set sweeps, as the
// insertions of decoding do, and reports whether it did within the
// insertions the sweep rule allows (shareSet.put). The strings are longer
// than frontMaxLen, so that the front cache does not keep them. Call with
// table.mu held.
func sweepStringsThroughPut(table *InternTable) bool {
	for range len(table.strings.slots) + minSweepInserts {
		s := fmt.Sprintf("fresh-%0*d", frontMaxLen, freshStrings.Add(1))
		table.str(s)
		table.str(strings.Clone(s))
		if table.strings.inserts == 0 {
			return true
		}
	}
	return false
}

// TestInternFrontCache interns strings that fall into the same set of the
// front cache, more of them than it has ways, in turns, with strings too
// long for it, strings sharing a prefix and strings sharing a key: every
// call must return a string equal to the one passed, and from the second
// sighting on the one shared copy.
func TestInternFrontCache(t *testing.T) {
	table := newBareInternTable()
	bySet := map[uint64][]string{}
	var same []string
	for i := 0; len(same) == 0; i++ {
		s := fmt.Sprintf("value-%d", i)
		set := frontKey(s) >> (64 - frontSetBits)
		if bySet[set] = append(bySet[set], s); len(bySet[set]) == 2*frontWays+1 {
			same = bySet[set]
		}
	}
	long := strings.Repeat("l", frontMaxLen+1)
	strs := append(same, long, long[:frontMaxLen], same[0]+"x", same[0][:len(same[0])-1])
	// Strings of one length equal in the words frontKey reads: the same
	// key, told apart only by comparing them.
	for _, c := range "abc" {
		s := []byte(strings.Repeat("k", 40))
		s[10] = byte(c)
		strs = append(strs, string(s))
	}
	if frontKey(strs[len(strs)-1]) != frontKey(strs[len(strs)-2]) {
		t.Fatal("test strings do not share a front key")
	}
	shared := map[string]string{}
	for round := range 4 {
		for _, s := range strs {
			in := strings.Clone(s) // a fresh copy, as a decode makes
			got := table.str(in)
			if got != s {
				t.Fatalf("round %d: str(%q) = %q", round, s, got)
			}
			if round == 0 {
				continue
			}
			if c, ok := shared[s]; !ok {
				shared[s] = got
			} else if unsafe.StringData(c) != unsafe.StringData(got) {
				t.Errorf("round %d: %q not the shared copy", round, s)
			}
		}
	}
}

// TestInternFrontCacheBounded checks how many strings that no object uses
// any more the front cache keeps alive: at most one per entry, and none
// once the strings' set is swept (by an insertion).
func TestInternFrontCacheBounded(t *testing.T) {
	table := newBareInternTable()
	for i := range 3 * frontSets * frontWays {
		// Long enough not to be tiny allocations (see TestInternTableShrinks);
		// twice, to enter the table.
		s := fmt.Sprintf("a-string-long-enough-%d", i)
		table.str(strings.Clone(s))
		table.str(strings.Clone(s))
	}
	live := func() int {
		n := 0
		for _, slot := range table.strings.slots {
			if slot.p.Value() != nil {
				n++
			}
		}
		return n
	}
	runtime.GC()
	if n := live(); n > frontSets*frontWays {
		t.Errorf("%d strings alive with no object using them, want at most the front cache's %d entries", n, frontSets*frontWays)
	}
	if !sweepStringsThroughPut(table) {
		t.Fatal("the strings' set was not swept within the insertions its rule allows")
	}
	testkit.Eventually(t, "no string alive", func() bool {
		runtime.GC()
		return live() == 0
	})
}

// TestInternTableSweepsAfterGCOnceIdle fills a table's strings and shared
// sub-objects, lets every object go and takes no more values in: garbage
// collections alone must empty it (sweepAfterGC), where insertions were
// the only trigger of a sweep before.
func TestInternTableSweepsAfterGCOnceIdle(t *testing.T) {
	table := NewInternTable()
	pods := make([]*corev1.Pod, 3000)
	for i := range pods {
		// Long strings, not tiny allocations (see TestInternTableShrinks);
		// each pod twice, for its values to enter the table.
		node := testkit.PodNode(fmt.Sprintf("a-node-name-long-enough-%d", i))
		p := testkit.NewPod("ns", "p", "1", node)
		p.Labels = map[string]string{"app": fmt.Sprintf("an-app-name-long-enough-%d", i)}
		_ = internedCopy(table, p)
		pods[i] = internedCopy(table, p)
	}
	if n := table.len(); n < 2*len(pods) {
		t.Fatalf("table holds %d strings and sub-objects, want at least %d", n, 2*len(pods))
	}
	runtime.KeepAlive(pods)
	pods = nil
	testkit.Eventually(t, "garbage collections to empty the idle table", func() bool {
		runtime.GC()
		return table.len() == 0
	})
}

// TestSweepAfterGCLetsTheTableGo checks that the sweeps after garbage
// collections do not keep a table alive, so that they stop with it.
func TestSweepAfterGCLetsTheTableGo(t *testing.T) {
	w := weak.Make(NewInternTable())
	testkit.Eventually(t, "the table to be collected", func() bool {
		runtime.GC()
		return w.Value() == nil
	})
}
