package informer

import (
	"fmt"
	"hash/maphash"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// check verifies that the table counts its entries, stays at most 3/4
// full and finds every entry from its home slot.
func (t *nameTable[T]) check() error {
	n := 0
	for _, s := range t.slots {
		if s.e == nil {
			continue
		}
		n++
		if s.hash != hashObjectName(t.seed, s.e.name) || s.e.hash != s.hash {
			return fmt.Errorf("entry %s has a stale hash", s.e.name)
		}
		if t.get(s.e.name) != s.e {
			return fmt.Errorf("entry %s is unreachable", s.e.name)
		}
	}
	if n != t.count || n*4 > len(t.slots)*3 {
		return fmt.Errorf("%d entries counted %d in %d slots", n, t.count, len(t.slots))
	}
	return nil
}

func tableEntry(namespace, name string) *entry[*corev1.Pod] {
	return &entry[*corev1.Pod]{name: ObjectName{Namespace: namespace, Name: name}}
}

// insertNew hashes e's name and inserts it, as contents.put does.
func (t *nameTable[T]) insertNew(e *entry[T]) {
	e.hash = hashObjectName(t.seed, e.name)
	t.insert(e)
}

func TestNameTableInsertGetDelete(t *testing.T) {
	tb := newNameTable[*corev1.Pod](0, maphash.MakeSeed())
	var entries []*entry[*corev1.Pod]
	for i := range 500 {
		// Cluster-scoped names that look like namespaced keys (invalid in
		// Kubernetes) are stored under their own name all the same.
		e := tableEntry(fmt.Sprintf("ns-%d", i%7), fmt.Sprintf("n-%d", i))
		if i%5 == 0 {
			e = tableEntry("", fmt.Sprintf("ns-%d/c-%d", i%7, i))
		}
		entries = append(entries, e)
		tb.insertNew(e)
	}
	if err := tb.check(); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if got := tb.get(e.name); got != e {
			t.Fatalf("get(%s) = %v", e.name, got)
		}
		if got := tb.getKey(e.name.String()); got != e {
			t.Fatalf("getKey(%s) = %v", e.name, got)
		}
	}
	for i, e := range entries {
		if i%30 != 0 {
			tb.delete(e)
		}
	}
	if err := tb.check(); err != nil {
		t.Fatal(err)
	}
	var found []string
	for i, e := range entries {
		if tb.get(e.name) != nil {
			found = append(found, fmt.Sprint(i))
		}
	}
	var want []string
	for i := 0; i < len(entries); i += 30 {
		want = append(want, fmt.Sprint(i))
	}
	if diff := cmp.Diff(want, found); diff != "" {
		t.Errorf("entries left (-want +got):\n%s", diff)
	}
	if len(tb.slots) > 128 {
		t.Errorf("%d slots kept for %d entries", len(tb.slots), tb.count)
	}
}

func TestNameTableKeysAreComparedWhole(t *testing.T) {
	tb := newNameTable[*corev1.Pod](0, maphash.MakeSeed())
	cluster, namespaced := tableEntry("", "a"), tableEntry("ns", "a")
	tb.insertNew(cluster)
	tb.insertNew(namespaced)
	for key, want := range map[string]*entry[*corev1.Pod]{
		"a": cluster, "ns/a": namespaced, "/a": nil, "ns/": nil, "ns": nil, "ns/a/": nil, "nsx/a": nil, "": nil,
	} {
		if got := tb.getKey(key); got != want {
			t.Errorf("getKey(%q) = %v, want %v", key, got, want)
		}
	}
}

func TestNameTableLongNames(t *testing.T) {
	tb := newNameTable[*corev1.Pod](4, maphash.MakeSeed())
	long := tableEntry(strings.Repeat("n", 63), strings.Repeat("x", 253))
	tb.insertNew(long)
	key := long.name.String()
	if tb.get(long.name) != long || tb.getKey(key) != long {
		t.Error("long name not found")
	}
	tb.delete(long)
	if tb.get(long.name) != nil || tb.count != 0 {
		t.Error("long name not deleted")
	}
}
