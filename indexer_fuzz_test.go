package informer

import (
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
)

// The fuzz universe is small so that random operations collide: a few
// namespaces, names, label keys and values, nodes and users.
var (
	fuzzNamespaces = []string{"", "n1", "n2"}
	fuzzNames      = []string{"p0", "p1", "p2", "p3", "p4"}
	fuzzKeys       = []string{"a", "b", "c", "zz"} // no object has zz
	fuzzValues     = []string{"1", "2", "3", "boom"}
	fuzzNodes      = []string{"", "x", "y"}
	fuzzUsers      = []string{"u1", "u2", "u3"}
	fuzzOperators  = []selection.Operator{
		selection.Equals, selection.DoubleEquals, selection.NotEquals, selection.In, selection.NotIn,
		selection.Exists, selection.DoesNotExist, selection.GreaterThan, selection.LessThan,
	}
)

var errFuzzIndex = errors.New("c=boom cannot be indexed")

// fuzzFailing fails for pods labelled c=boom, to exercise error paths.
func fuzzFailing(p *corev1.Pod) ([]string, error) {
	if p.Labels["c"] == "boom" {
		return nil, errFuzzIndex
	}
	return []string{p.Labels["a"]}, nil
}

// fuzzBytes hands out the fuzz input one small choice at a time.
type fuzzBytes struct{ data []byte }

func (b *fuzzBytes) next(n int) int {
	if len(b.data) == 0 {
		return 0
	}
	v := int(b.data[0]) % n
	b.data = b.data[1:]
	return v
}

func pick[E any](b *fuzzBytes, from []E) E { return from[b.next(len(from))] }

func (b *fuzzBytes) pod(rv int) *corev1.Pod {
	lbls := map[string]string{}
	for _, k := range fuzzKeys[:3] {
		if v := b.next(len(fuzzValues) + 1); v < len(fuzzValues) {
			lbls[k] = fuzzValues[v]
		}
	}
	if len(lbls) == 0 && b.next(2) == 0 {
		lbls = nil
	}
	p := NewPod(pick(b, fuzzNamespaces), pick(b, fuzzNames), fmt.Sprint(rv), PodLabels(lbls), PodNode(pick(b, fuzzNodes)))
	var users []string
	for range b.next(4) {
		users = append(users, pick(b, fuzzUsers)) // repeats are allowed
	}
	return withUsers(p, strings.Join(users, ","))
}

func (b *fuzzBytes) selector() labels.Selector {
	switch b.next(8) {
	case 0:
		return labels.Everything()
	case 1:
		return labels.Nothing()
	}
	sel := labels.NewSelector()
	for range b.next(4) {
		op := pick(b, fuzzOperators)
		var values []string
		switch op {
		case selection.In, selection.NotIn:
			for range 1 + b.next(3) {
				values = append(values, pick(b, fuzzValues))
			}
		case selection.Equals, selection.DoubleEquals, selection.NotEquals, selection.GreaterThan, selection.LessThan:
			values = []string{pick(b, fuzzValues)}
		}
		r, err := labels.NewRequirement(pick(b, fuzzKeys), op, values)
		if err != nil {
			continue // e.g. gt with a non-integer value
		}
		sel = sel.Add(*r)
	}
	return sel
}

// fuzzModel is the naive model of an Indexer: a map and a resource version.
type fuzzModel struct {
	objects map[ObjectName]*corev1.Pod
	rv      string
	byUser  bool // the byUser index was added
}

func (m *fuzzModel) indexable(p *corev1.Pod) bool { return p.Labels["c"] != "boom" }

// FuzzIndexer drives random Add, Update, Delete, Replace and the informer's
// unexported operations, and random selectors over every operator, checking
// the store, its indexes and Select against a naive model after each step.
func FuzzIndexer(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	f.Add([]byte("replace then select in namespaces"))
	f.Add([]byte{3, 9, 200, 17, 33, 1, 0, 0, 5, 7, 250, 4, 4, 4, 2, 6, 1, 99})
	for seed := range int64(4) {
		long := make([]byte, 2000) // long runs of operations
		rand.New(rand.NewSource(seed)).Read(long)
		f.Add(long)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in := &fuzzBytes{data: data}
		s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"byNode": byNode, "failing": fuzzFailing})
		m := &fuzzModel{objects: map[ObjectName]*corev1.Pod{}}
		for step := 1; len(in.data) > 0 && step < 100; step++ {
			fuzzStep(t, in, s, m, step)
			compareWithModel(t, s, m)
			for range 2 {
				sel, ns := in.selector(), pick(in, fuzzNamespaces)
				var want []*corev1.Pod
				for _, p := range m.objects {
					if (ns == "" || p.Namespace == ns) && sel.Matches(labels.Set(p.Labels)) {
						want = append(want, p)
					}
				}
				if diff := cmp.Diff(versionsOf(want), versionsOf(s.selectLabels(ns, sel))); diff != "" {
					t.Fatalf("step %d: Select(%q, %q) (-model +indexer):\n%s", step, ns, sel, diff)
				}
			}
		}
	})
}

func fuzzStep(t *testing.T, in *fuzzBytes, s *Indexer[*corev1.Pod], m *fuzzModel, step int) {
	fail := func(op string, err error) {
		t.Helper()
		t.Fatalf("step %d: %s: %v", step, op, err)
	}
	checkErr := func(op string, p *corev1.Pod, err error) bool {
		t.Helper()
		if m.indexable(p) != (err == nil) || (err != nil && !errors.Is(err, errFuzzIndex)) {
			fail(op+" of "+KeyOf(p), err)
		}
		return err == nil
	}
	switch in.next(8) {
	case 0, 1: // Add or Update
		p := in.pod(step)
		if checkErr("Add", p, s.Add(p)) {
			m.objects[NameOf(p)], m.rv = p, p.ResourceVersion
		}
	case 2: // upsert of a shallow copy sharing the labels map
		name := ObjectName{Namespace: pick(in, fuzzNamespaces), Name: pick(in, fuzzNames)}
		if old := m.objects[name]; old != nil {
			p := *old
			p.ResourceVersion = fmt.Sprint(step)
			got, existed, err := s.upsert(&p)
			if err != nil || !existed || got != old {
				fail("upsert of a copy", fmt.Errorf("%v, %v, %v", got, existed, err))
			}
			m.objects[name], m.rv = &p, p.ResourceVersion
		}
	case 3: // Delete
		p := in.pod(step)
		if err := s.Delete(p); err != nil {
			fail("Delete", err)
		}
		delete(m.objects, NameOf(p))
		m.rv = p.ResourceVersion
	case 4: // remove
		name := ObjectName{Namespace: pick(in, fuzzNamespaces), Name: pick(in, fuzzNames)}
		got, existed, err := s.remove(name)
		if want := m.objects[name]; err != nil || got != want || existed != (want != nil) {
			fail("remove", fmt.Errorf("%v, %v, %v", got, existed, err))
		}
		delete(m.objects, name)
	case 5, 6: // Replace or replaceAll
		var items []*corev1.Pod
		ok := true
		for range in.next(6) {
			p := in.pod(step)
			items = append(items, p)
			ok = ok && m.indexable(p)
		}
		rv := fmt.Sprintf("list-%d", step)
		var removed, previous []*corev1.Pod
		var err error
		if in.next(2) == 0 {
			err = s.Replace(items, rv)
		} else {
			removed, previous, err = s.replaceAll(items, rv)
		}
		if ok != (err == nil) {
			fail("Replace", err)
		}
		if err != nil {
			return
		}
		fresh := map[ObjectName]*corev1.Pod{}
		for _, p := range items {
			fresh[NameOf(p)] = p
		}
		checkReplaceResults(t, step, m.objects, fresh, items, removed, previous)
		m.objects, m.rv = fresh, rv
	case 7: // AddIndexers: back-fills the first time, conflicts afterwards
		err := s.AddIndexers(map[string]IndexFunc[*corev1.Pod]{"byUser": byUser})
		if m.byUser != (err != nil) {
			fail("AddIndexers", err)
		}
		m.byUser = true
	}
}

// checkReplaceResults checks replaceAll's results (empty for Replace).
func checkReplaceResults(t *testing.T, step int, before, after map[ObjectName]*corev1.Pod, items, removed, previous []*corev1.Pod) {
	t.Helper()
	if removed == nil && previous == nil {
		return
	}
	var wantRemoved []*corev1.Pod
	for name, p := range before {
		if after[name] == nil {
			wantRemoved = append(wantRemoved, p)
		}
	}
	if diff := cmp.Diff(versionsOf(wantRemoved), versionsOf(removed)); diff != "" {
		t.Fatalf("step %d: replaceAll removed (-model +indexer):\n%s", step, diff)
	}
	wantPrevious := make([]*corev1.Pod, len(items))
	for i, p := range items {
		wantPrevious[i] = before[NameOf(p)]
	}
	if previous != nil || slices.ContainsFunc(wantPrevious, func(p *corev1.Pod) bool { return p != nil }) {
		if diff := cmp.Diff(wantPrevious, previous); diff != "" {
			t.Fatalf("step %d: replaceAll previous (-model +indexer):\n%s", step, diff)
		}
	}
}

func compareWithModel(t *testing.T, s *Indexer[*corev1.Pod], m *fuzzModel) {
	t.Helper()
	want := slices.Collect(maps.Values(m.objects))
	if diff := cmp.Diff(versionsOf(want), versionsOf(s.List())); diff != "" {
		t.Fatalf("List (-model +indexer):\n%s", diff)
	}
	if got := s.LastStoreSyncResourceVersion(); got != m.rv {
		t.Fatalf("resource version %q, model %q", got, m.rv)
	}
	for _, ns := range fuzzNamespaces {
		for _, name := range fuzzNames {
			on := ObjectName{Namespace: ns, Name: name}
			got, exists, _ := s.GetByKey(on.String())
			if got != m.objects[on] || exists != (got != nil) {
				t.Fatalf("GetByKey(%s) = %v, %v; model %v", on, got, exists, m.objects[on])
			}
		}
	}
	indexes := map[string][]string{"byNode": fuzzNodes, "failing": fuzzValues}
	if m.byUser {
		indexes["byUser"] = fuzzUsers
	}
	for index, values := range indexes {
		fn := s.GetIndexers()[index]
		wantValues := map[string][]string{}
		for _, p := range m.objects {
			vs, _ := fn(p)
			for j, v := range vs {
				if !slices.Contains(vs[:j], v) {
					wantValues[v] = append(wantValues[v], KeyOf(p))
				}
			}
		}
		for _, v := range append(values, "") {
			keys, err := s.IndexKeys(index, v)
			slices.Sort(wantValues[v])
			if err != nil || !cmp.Equal(append([]string{}, wantValues[v]...), keys) {
				t.Fatalf("IndexKeys(%s, %q) = %v, %v; model %v", index, v, keys, err, wantValues[v])
			}
			objs, _ := s.ByIndex(index, v)
			if diff := cmp.Diff(keys, keysOf(objs)); diff != "" {
				t.Fatalf("ByIndex(%s, %q) (-IndexKeys +ByIndex):\n%s", index, v, diff)
			}
		}
		got := s.ListIndexFuncValues(index)
		slices.Sort(got)
		if diff := cmp.Diff(append([]string{}, slices.Sorted(maps.Keys(wantValues))...), got); diff != "" {
			t.Fatalf("ListIndexFuncValues(%s) (-model +indexer):\n%s", index, diff)
		}
	}
	if err := s.checkInvariants(); err != nil {
		t.Fatal(err)
	}
}
