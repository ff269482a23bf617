package informer

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// checkInvariants verifies every structure of s against its entries: the
// two-way positions between entries and posting lists, that every list is
// the one its index maps the value to, that no empty list is kept, label
// counts, and that each entry is on exactly the lists its object belongs to
// (recomputing the index functions).
func (s *Indexer[T]) checkInvariants() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	c := s.c
	if err := c.entries.check(); err != nil {
		return err
	}
	if c.entries.count != len(c.all.items) {
		return fmt.Errorf("%d entries, %d on the list of all", c.entries.count, len(c.all.items))
	}
	if len(c.buckets) != len(s.plan.indexes) {
		return fmt.Errorf("%d bucket maps for %d indexes", len(c.buckets), len(s.plan.indexes))
	}
	if len(c.kinds) != len(s.plan.kinds) || (len(c.kinds) > 0 && &c.kinds[0] != &s.plan.kinds[0]) {
		return fmt.Errorf("contents file with %d kinds, the plan has %d", len(c.kinds), len(s.plan.kinds))
	}
	lists := []*posting[T]{c.all}
	for ns, p := range c.namespaces {
		if p.owner != ownerNamespace || p.value != ns {
			return fmt.Errorf("namespace list %q has owner %d value %q", ns, p.owner, p.value)
		}
		lists = append(lists, p)
	}
	for key, lk := range c.labels {
		if lk.key != key || len(lk.values) == 0 {
			return fmt.Errorf("label key %q: key %q, %d values", key, lk.key, len(lk.values))
		}
		count := 0
		for v, p := range lk.values {
			if p.owner != ownerLabel || p.value != v || p.label != lk {
				return fmt.Errorf("label list %s=%s is misfiled", key, v)
			}
			count += len(p.items)
			lists = append(lists, p)
		}
		if count != lk.count {
			return fmt.Errorf("label key %q counts %d, lists hold %d", key, lk.count, count)
		}
	}
	for i, buckets := range c.buckets {
		if s.plan.indexes[i].byNamespace {
			// The namespace lists themselves, checked above.
			if len(buckets) != len(c.namespaces) {
				return fmt.Errorf("index %d by namespace has %d values, %d namespaces", i, len(buckets), len(c.namespaces))
			}
			for ns, p := range c.namespaces {
				if buckets[ns] != p {
					return fmt.Errorf("index %d by namespace does not hold namespace %q's list", i, ns)
				}
			}
			continue
		}
		kind, ok := c.kinds[s.plan.indexes[i].kind].(*funcKind[T])
		if !ok || kind.bucket != i || kind.owner != s.plan.indexes[i].kind {
			return fmt.Errorf("index %d is served by kind %d, %T", i, s.plan.indexes[i].kind, c.kinds[s.plan.indexes[i].kind])
		}
		for v, p := range buckets {
			if p.owner != kind.owner || p.value != v {
				return fmt.Errorf("index %d list %q is misfiled", i, v)
			}
			lists = append(lists, p)
		}
	}
	memberships := 0
	for _, p := range lists {
		if len(p.items) == 0 && p != c.all {
			return fmt.Errorf("empty list kept (owner %d, value %q)", p.owner, p.value)
		}
		for pos, it := range p.items {
			m := it.e.members[it.slot]
			if m.p != p || int(m.pos) != pos || m.owner != p.owner || it.obj != it.e.obj {
				return fmt.Errorf("item %d of list (owner %d, value %q) does not match its entry %s", pos, p.owner, p.value, it.e.name)
			}
		}
		memberships += len(p.items)
	}
	total := 0
	for _, it := range c.all.items {
		e, name := it.e, it.e.name
		if NameOf(e.obj) != name || c.entries.get(name) != e {
			return fmt.Errorf("entry %s is stored under %s", NameOf(e.obj), name)
		}
		if e.rv != e.obj.GetResourceVersion() {
			return fmt.Errorf("entry %s keeps resource version %q, its object has %q", name, e.rv, e.obj.GetResourceVersion())
		}
		want := []*posting[T]{c.all, c.namespaces[name.Namespace]}
		for k, v := range e.obj.GetLabels() {
			want = append(want, c.labels[k].values[v])
		}
		for i, ix := range s.plan.indexes {
			values, err := ix.fn(e.obj)
			if err != nil {
				return fmt.Errorf("index %q of stored %s: %w", ix.name, name, err)
			}
			if ix.byNamespace {
				if diff := cmp.Diff([]string{name.Namespace}, values); diff != "" {
					return fmt.Errorf("index %q by namespace of stored %s (-want +got):\n%s", ix.name, name, diff)
				}
				continue // filed under its namespace's list, in want already
			}
			for j, v := range values {
				if !slices.Contains(values[:j], v) {
					want = append(want, c.buckets[i][v])
				}
			}
		}
		var got []*posting[T]
		for _, m := range e.members {
			got = append(got, m.p)
		}
		if !sameListSet(got, want) {
			return fmt.Errorf("entry %s is on %d lists, want %d", name, len(got), len(want))
		}
		total += len(e.members)
	}
	if total != memberships {
		return fmt.Errorf("entries have %d memberships, lists hold %d items", total, memberships)
	}
	return nil
}

func sameListSet[T Object](got, want []*posting[T]) bool {
	if len(got) != len(want) {
		return false
	}
	for _, p := range want {
		if p == nil || !slices.Contains(got, p) {
			return false
		}
	}
	return true
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
	capacity := cap(s.c.labels["app"].values["a"].items)
	s.mu.RUnlock()
	if capacity > 100 {
		t.Errorf("a list holding 10 objects kept capacity %d", capacity)
	}
	if diff := cmp.Diff(10, len(s.selectLabels("", nil))); diff != "" {
		t.Errorf("Select after shrinking (-want +got):\n%s", diff)
	}
}

func TestPostingsManyMembershipsSpillInline(t *testing.T) {
	many := map[string]string{}
	for i := range 2 * inlineMembers {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"byNode": byNode})
	for i := range 3 {
		if err := s.Add(NewPod("ns", fmt.Sprintf("p%d", i), "1", PodLabels(many), PodNode("n"))); err != nil {
			t.Fatal(err)
		}
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
