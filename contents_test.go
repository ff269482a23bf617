package informer

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// checkInvariants verifies every structure of s against its slab: the name
// table, the two-way positions between entries and posting lists, that
// every list is the one its value maps to, that no empty list is kept, label
// counts, and that each entry is on exactly the lists its object belongs to
// (recomputing the index functions and reading the labels of the indexed
// keys).
func (s *Indexer[T]) checkInvariants() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c := s.c
	if err := c.checkNames(); err != nil {
		return err
	}
	if len(c.buckets) != len(s.plan.indexes) {
		return fmt.Errorf("%d bucket columns for %d indexes", len(c.buckets), len(s.plan.indexes))
	}
	if len(c.kinds) != len(s.plan.kinds) || (len(c.kinds) > 0 && &c.kinds[0] != &s.plan.kinds[0]) {
		return fmt.Errorf("contents file with %d kinds, the plan has %d", len(c.kinds), len(s.plan.kinds))
	}
	if len(c.labels) != len(c.labelKeys) {
		return fmt.Errorf("%d label keys in the map, %d in order", len(c.labels), len(c.labelKeys))
	}
	columns := map[string]*listColumn{"namespaces": &c.ns}
	for _, li := range c.labelKeys {
		if c.labels[li.key] != li {
			return fmt.Errorf("label key %q is misfiled", li.key)
		}
		columns["label "+li.key] = &li.listColumn
	}
	funcs := 0
	for i, col := range c.buckets {
		if s.plan.indexes[i].byNamespace {
			if col != &c.ns {
				return fmt.Errorf("index %d by namespace is not served by the namespace lists", i)
			}
			continue
		}
		kind, ok := c.kinds[s.plan.indexes[i].kind].(*funcKind[T])
		if !ok || kind.name != s.plan.indexes[i].name || c.funcs[kind.value] != col {
			return fmt.Errorf("index %d is served by kind %d, %T", i, s.plan.indexes[i].kind, c.kinds[s.plan.indexes[i].kind])
		}
		columns["index "+s.plan.indexes[i].name] = col
		funcs++
	}
	if funcs != len(c.funcs) {
		return fmt.Errorf("%d function columns for %d function indexes", len(c.funcs), funcs)
	}
	for name, col := range columns {
		if err := col.check(len(c.objs)); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	for id, obj := range c.objs {
		name := NameOf(obj)
		want := map[string][]string{"namespaces": {name.Namespace}}
		for _, li := range c.labelKeys {
			if v, ok := obj.GetLabels()[li.key]; ok {
				want["label "+li.key] = []string{v}
			}
		}
		for _, ix := range s.plan.indexes {
			values, err := ix.fn(obj)
			if err != nil {
				return fmt.Errorf("index %q of stored %s: %w", ix.name, name, err)
			}
			if ix.byNamespace {
				if diff := cmp.Diff([]string{name.Namespace}, values); diff != "" {
					return fmt.Errorf("index %q by namespace of stored %s (-want +got):\n%s", ix.name, name, diff)
				}
				continue // filed under its namespace's list, in want already
			}
			var distinct []string
			for j, v := range values {
				if !slices.Contains(values[:j], v) {
					distinct = append(distinct, v)
				}
			}
			if distinct != nil {
				want["index "+ix.name] = distinct
			}
		}
		for colName, col := range columns {
			var got []string
			if l := col.list[id]; l >= 0 {
				got = append(got, col.lists[l].value)
			}
			for _, m := range col.extra[int32(id)] {
				got = append(got, col.lists[m.list].value)
			}
			slices.Sort(got)
			w := slices.Sorted(slices.Values(want[colName]))
			if diff := cmp.Diff(w, got); diff != "" {
				return fmt.Errorf("entry %s in %s (-want +got):\n%s", name, colName, diff)
			}
		}
	}
	return nil
}

// checkNames verifies that the name table counts the entries of the slab,
// stays at most 3/4 full and finds every entry from its home slot under
// the hash its name has.
func (c *contents[T]) checkNames() error {
	t := &c.names
	if len(c.hashes) != len(c.objs) {
		return fmt.Errorf("%d hashes for %d entries", len(c.hashes), len(c.objs))
	}
	n := 0
	for _, sl := range t.slots {
		if sl.id == 0 {
			continue
		}
		n++
		if int(sl.id) > len(c.objs) {
			return fmt.Errorf("a slot names entry %d of %d", sl.id-1, len(c.objs))
		}
	}
	if n != t.count || n != len(c.objs) || n*4 > len(t.slots)*3 {
		return fmt.Errorf("%d slots used, %d counted, %d entries, %d slots", n, t.count, len(c.objs), len(t.slots))
	}
	if len(c.entryNames) != len(c.objs) {
		return fmt.Errorf("%d names for %d entries", len(c.entryNames), len(c.objs))
	}
	for id, obj := range c.objs {
		if c.entryNames[id] != NameOf(obj) {
			return fmt.Errorf("entry %d (%s) is named %s", id, NameOf(obj), c.entryNames[id])
		}
		hash := hashObjectName(t.seed, NameOf(obj))
		if c.hashes[id] != slotHash(hash) {
			return fmt.Errorf("entry %s has a stale hash", NameOf(obj))
		}
		if got := findName(t, c.entryNames, hash, NameOf(obj)); got != int32(id) {
			return fmt.Errorf("entry %d (%s) is found as %d", id, NameOf(obj), got)
		}
	}
	return nil
}

// check verifies a column of entries entries: its lengths, the two-way
// positions between its lists and its entries, that no empty list is kept
// and that the count is the number of memberships.
func (col *listColumn) check(entries int) error {
	if len(col.list) != entries || len(col.pos) != entries {
		return fmt.Errorf("columns of %d and %d for %d entries", len(col.list), len(col.pos), entries)
	}
	memberships := 0
	for l := range col.lists {
		p := &col.lists[l]
		if slices.Contains(col.free, int32(l)) {
			if p.ids != nil || p.value != "" {
				return fmt.Errorf("dropped list %d keeps %d items (value %q)", l, len(p.ids), p.value)
			}
			continue
		}
		if got, ok := col.byValue[p.value]; !ok || got != int32(l) {
			return fmt.Errorf("list %d of value %q is found as %d", l, p.value, got)
		}
		if len(p.ids) == 0 {
			return fmt.Errorf("empty list kept (value %q)", p.value)
		}
		for pos, id := range p.ids {
			ok := col.list[id] == int32(l) && col.pos[id] == int32(pos)
			for _, m := range col.extra[id] {
				ok = ok || m == membership{int32(l), int32(pos)}
			}
			if !ok {
				return fmt.Errorf("item %d of list %q, entry %d, does not point back", pos, p.value, id)
			}
		}
		memberships += len(p.ids)
	}
	if len(col.byValue)+len(col.free) != len(col.lists) {
		return fmt.Errorf("%d values and %d free lists for %d lists", len(col.byValue), len(col.free), len(col.lists))
	}
	held := 0
	for id := range entries {
		if col.list[id] >= 0 {
			held++
		} else if len(col.extra[int32(id)]) > 0 {
			return fmt.Errorf("entry %d has extra lists but no first one", id)
		}
		held += len(col.extra[int32(id)])
	}
	if held != memberships || col.count != memberships {
		return fmt.Errorf("entries hold %d memberships, lists %d, counted %d", held, memberships, col.count)
	}
	return nil
}

func mustCheck[T Object](t *testing.T, s *Indexer[T]) {
	t.Helper()
	if err := s.checkInvariants(); err != nil {
		t.Fatalf("invariants broken: %v", err)
	}
}

func TestPostingsSwapDeleteKeepsPositions(t *testing.T) {
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"byNode": byNode})
	for i := range 10 {
		if err := s.Add(NewPod("ns", fmt.Sprintf("p%d", i), "1", PodLabels(map[string]string{"app": "a"}), PodNode("n1"))); err != nil {
			t.Fatal(err)
		}
	}
	mustCheck(t, s)
	// Remove from the middle, the front and the back of the lists.
	for _, name := range []string{"p4", "p0", "p9", "p5"} {
		if _, existed, _ := s.remove(ObjectName{Namespace: "ns", Name: name}); !existed {
			t.Fatalf("remove(%s) found nothing", name)
		}
		mustCheck(t, s)
	}
	got, _ := s.ByIndex("byNode", "n1")
	if diff := cmp.Diff([]string{"ns/p1", "ns/p2", "ns/p3", "ns/p6", "ns/p7", "ns/p8"}, keysOf(got)); diff != "" {
		t.Errorf("ByIndex after removals (-want +got):\n%s", diff)
	}
}

func TestPostingsShrinkAfterMassRemoval(t *testing.T) {
	s := NewIndexer[*corev1.Pod](nil)
	for i := range 1000 {
		if err := s.Add(NewPod("ns", fmt.Sprintf("p%d", i), "1", PodLabels(map[string]string{"app": "a"}))); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 990 {
		s.remove(ObjectName{Namespace: "ns", Name: fmt.Sprintf("p%d", i)})
	}
	mustCheck(t, s)
	s.mu.RLock()
	capacities := map[string]int{"slab": cap(s.c.objs), "namespace list": cap(s.c.ns.lists[s.c.ns.byValue["ns"]].ids)}
	s.mu.RUnlock()
	for what, capacity := range capacities {
		if capacity > 100 {
			t.Errorf("the %s holding 10 objects kept capacity %d", what, capacity)
		}
	}
	if diff := cmp.Diff(10, len(s.selectLabels("", nil))); diff != "" {
		t.Errorf("Select after shrinking (-want +got):\n%s", diff)
	}
}

func TestPostingsManyMemberships(t *testing.T) {
	many := map[string]string{}
	for i := range 16 {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"byNode": byNode})
	for i := range 3 {
		if err := s.Add(NewPod("ns", fmt.Sprintf("p%d", i), "1", PodLabels(many), PodNode("n"))); err != nil {
			t.Fatal(err)
		}
	}
	// Index every key, so that each object is on 18 lists.
	if got := s.selectLabels("", mustParse(t, "k0,k1,k2,k3,k4,k5,k6,k7,k8,k9,k10,k11,k12,k13,k14,k15")); len(got) != 3 {
		t.Fatalf("selected %d objects, want 3", len(got))
	}
	mustCheck(t, s)
	if err := s.Update(NewPod("ns", "p1", "2", PodLabels(map[string]string{"k3": "w"}), PodNode("m"))); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, s)
}

func TestPostingsLabelsMutatedInPlaceStayExact(t *testing.T) {
	s := NewIndexer[*corev1.Pod](nil)
	cached := NewPod("ns", "p", "1", PodLabels(map[string]string{"app": "a"}))
	mustAdd(t, s, cached)
	// A program that breaks the rules: it changes the cached object's labels
	// and stores a new object, then stores the changed one itself.
	cached.Labels["app"] = "b"
	cached.Labels["extra"] = "x"
	if err := s.Update(NewPod("ns", "p", "2", PodLabels(map[string]string{"tier": "t"}))); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, s)
	if err := s.Update(cached); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, s)
	cached.Labels["app"] = "c"
	if err := s.Update(cached); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, s)
	if diff := cmp.Diff([]string{"ns/p"}, keysOf(s.selectLabels("", mustParse(t, "app=c,extra=x")))); diff != "" {
		t.Errorf("Select after in-place changes (-want +got):\n%s", diff)
	}
}

// TestContentsNamesAreTheStoredObjects checks that the names the contents
// keep beside the slab are the stored object's own strings after an update,
// so that they keep no string of a replaced object alive.
func TestContentsNamesAreTheStoredObjects(t *testing.T) {
	s := NewIndexer[*corev1.Pod](nil)
	// The strings are built at run time so that each object has its own.
	ns, name := strings.Repeat("n", 3), strings.Repeat("p", 3)
	if err := s.Add(NewPod(strings.Clone(ns), strings.Clone(name), "1")); err != nil {
		t.Fatal(err)
	}
	updated := NewPod(strings.Clone(ns), strings.Clone(name), "2")
	if err := s.Update(updated); err != nil {
		t.Fatal(err)
	}
	mustCheck(t, s)
	stored := s.c.entryNames[0]
	if unsafe.StringData(stored.Name) != unsafe.StringData(updated.Name) || unsafe.StringData(stored.Namespace) != unsafe.StringData(updated.Namespace) {
		t.Error("the entry's name holds the replaced object's strings")
	}
}
