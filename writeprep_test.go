package informer

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// prepare prepares storing (store true) or deleting obj in s, as the
// queue does.
func prepare(s *Indexer[*corev1.Pod], obj *corev1.Pod, store bool) (p writePrep, v prepValues) {
	s.preparer().prepare(obj, store, &p, &v)
	return p, v
}

// preparedWrite stores (store true) or deletes obj in s the way the
// informer does: prepared without the lock, its memory kept in an arena as
// the queue keeps it when withPairs (the labels copied as pairs if
// p.copyPairs), then applied under beginWrites.
func preparedWrite(s *Indexer[*corev1.Pod], obj *corev1.Pod, store, withPairs bool) (old *corev1.Pod, oldRV string, existed bool, err error) {
	p, v := prepare(s, obj, store)
	if withPairs {
		var arena prepArena // as the queue keeps it
		arena.keep(&p, &v)
	} else if p.indexCount >= 0 {
		p.values = v.slice()
	}
	if store && p.indexCount != s.publishedCount() {
		s.refreshPrep(obj, &p) // as the informer does before taking the lock
	}
	s.beginWrites()
	defer s.endWrites()
	if !store {
		s.deletePrepared(&p)
		return nil, "", false, nil
	}
	return s.putPrepared(obj, &p)
}

// hasLabel reports whether the prepared object carries label key=value.
func (p *writePrep) hasLabel(key, value string) bool {
	v, ok := p.label(key)
	return ok && v == value
}

// indexerView renders everything an Indexer answers, for comparing two.
func indexerView(t *testing.T, s *Indexer[*corev1.Pod]) map[string][]string {
	t.Helper()
	mustCheck(t, s)
	view := map[string][]string{"all": versionsOf(s.List()), "rv": {s.LastStoreSyncResourceVersion()}}
	for value, keys := range indexContent(t, s, "byNode") {
		view["byNode="+value] = keys
	}
	for _, sel := range []string{"app=a", "app in (a,b),tier!=x", "tier", "!app"} {
		view["select "+sel] = keysOf(s.selectLabels("", mustParse(t, sel)))
	}
	return view
}

func TestPreparedWritesMatchPlainWrites(t *testing.T) {
	many := map[string]string{}
	for i := range 2 * maxScannedPairs {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	labelSets := []map[string]string{
		nil, {"app": "a"}, {"app": "b", "tier": "x"}, {"tier": "y"}, many,
		{"app": "a", "tier": "x", "k1": "v"},
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	plain := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"byNode": byNode})
	prepared := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"byNode": byNode})
	for i := range 2000 {
		pod := NewPod("ns", fmt.Sprintf("p%d", rnd.IntN(30)), fmt.Sprint(i), PodLabels(labelSets[rnd.IntN(len(labelSets))]), PodNode(fmt.Sprintf("n%d", rnd.IntN(3))))
		store, withPairs := rnd.IntN(4) != 0, rnd.IntN(2) == 0
		var wantOld *corev1.Pod
		var wantExisted bool
		if store {
			var err error
			if wantOld, wantExisted, err = plain.upsert(pod); err != nil {
				t.Fatal(err)
			}
		} else if err := plain.Delete(pod); err != nil {
			t.Fatal(err)
		}
		old, oldRV, existed, err := preparedWrite(prepared, pod, store, withPairs)
		if err != nil {
			t.Fatal(err)
		}
		if old != wantOld || existed != wantExisted || (existed && oldRV != old.ResourceVersion) {
			t.Fatalf("write %d: put returned (%v, %q, %v), want (%v, %v)", i, old, oldRV, existed, wantOld, wantExisted)
		}
		if i%100 == 0 {
			if diff := cmp.Diff(indexerView(t, plain), indexerView(t, prepared)); diff != "" {
				t.Fatalf("after write %d (-plain +prepared):\n%s", i, diff)
			}
		}
	}
}

func TestPutPreparedIndexesWhatWasAddedSince(t *testing.T) {
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"byNode": byNode})
	pod := NewPod("ns", "a", "1", PodNode("n1"))
	p, v := prepare(s, pod, true)
	p.values = v.slice()
	if err := s.AddIndexers(map[string]IndexFunc[*corev1.Pod]{"byName": func(p *corev1.Pod) ([]string, error) {
		return []string{p.Name}, nil
	}}); err != nil {
		t.Fatal(err)
	}
	// Index functions never run under the lock: the stale values are
	// refused, and computed again without the lock.
	s.beginWrites()
	_, _, _, err := s.putPrepared(pod, &p)
	s.endWrites()
	if err != errStalePrep {
		t.Fatalf("putPrepared with stale values: got %v, want %v", err, errStalePrep)
	}
	s.refreshPrep(pod, &p)
	s.beginWrites()
	_, _, _, err = s.putPrepared(pod, &p)
	s.endWrites()
	if err != nil {
		t.Fatal(err)
	}
	mustCheck(t, s)
	for _, index := range []string{"byNode", "byName"} {
		got, err := s.Index(index, pod)
		if diff := cmp.Diff([]string{"ns/a"}, keysOf(got)); err != nil || diff != "" {
			t.Errorf("Index(%s): err %v (-want +got):\n%s", index, err, diff)
		}
	}
}

func TestPutPreparedReportsAFailingIndexFunction(t *testing.T) {
	errBad := errors.New("bad pod")
	s := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"strict": func(p *corev1.Pod) ([]string, error) {
		if p.Spec.NodeName == "" {
			return nil, errBad
		}
		return []string{p.Spec.NodeName}, nil
	}})
	_, _, _, err := preparedWrite(s, NewPod("ns", "a", "1"), true, true)
	if !errors.Is(err, errBad) {
		t.Fatalf("putPrepared error = %v, want %v", err, errBad)
	}
	if diff := cmp.Diff([]string{}, versionsOf(s.List())); diff != "" {
		t.Errorf("a failed write changed the store (-want +got):\n%s", diff)
	}
	mustCheck(t, s)
}

func TestWritePrepHasLabel(t *testing.T) {
	many := map[string]string{}
	for i := range maxScannedPairs + 1 {
		many[fmt.Sprintf("k%d", i)] = fmt.Sprint(i)
	}
	for _, labels := range []map[string]string{{"k0": "0", "k1": "1"}, many} {
		for _, p := range []writePrep{{labels: labels}, {labels: labels, pairs: appendLabelPairs(nil, labels)}} {
			got := []bool{p.hasLabel("k0", "0"), p.hasLabel("k1", "1"), p.hasLabel("k0", "1"), p.hasLabel("x", "0")}
			if diff := cmp.Diff([]bool{true, true, false, false}, got); diff != "" {
				t.Errorf("hasLabel with %d labels, pairs %v (-want +got):\n%s", len(labels), p.pairs != nil, diff)
			}
			if v, ok := p.label("k1"); v != "1" || !ok {
				t.Errorf("label(k1) = %q, %v, want 1, true", v, ok)
			}
		}
	}
}
