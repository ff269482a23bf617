package informer

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
)

// ownership counts, per object, the informers that hold it, from their
// notifications: +1 on add, -1 on delete; and the moves each one saw.
type ownership struct {
	mu     sync.Mutex
	count  map[string]int
	moved  map[string][]string // by informer: keys of moved deletions
	update map[string]int      // by informer: updates seen
}

func newOwnership() *ownership {
	return &ownership{count: map[string]int{}, moved: map[string][]string{}, update: map[string]int{}}
}

func (o *ownership) handler(name string) ResourceEventHandlerFuncs[*corev1.Pod] {
	return ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, _ bool) {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.count[KeyOf(p)]++
		},
		UpdateFunc: func(_, _ *corev1.Pod) {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.update[name]++
		},
		DeleteFunc: func(d DeletedObject[*corev1.Pod]) {
			o.mu.Lock()
			defer o.mu.Unlock()
			o.count[d.Name.String()]--
			if d.Moved {
				o.moved[name] = append(o.moved[name], d.Name.String())
			}
		},
	}
}

// owners returns the number of holders of each key that has any.
func (o *ownership) owners() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string]int{}
	for k, n := range o.count {
		if n != 0 {
			out[k] = n
		}
	}
	return out
}

// member is one replica in a dynamic shard test: its group (whose view the
// test sets) and its informer.
type member struct {
	group *ShardGroup
	inf   *Informer[*corev1.Pod]
}

func newMember(t *testing.T, server *shardServer, own *ownership, identity string) member {
	g, err := NewShardGroup(fake.NewClientset().CoordinationV1(), ShardGroupOptions{Name: "ctl", Namespace: "ns", Identity: identity})
	plMust(t, err)
	inf, err := NewInformer[*corev1.Pod](server, InformerOptions[*corev1.Pod]{Name: identity, Shard: &Shard{Group: g}})
	plMust(t, err)
	_, err = inf.AddEventHandler(own.handler(identity))
	plMust(t, err)
	return member{g, inf}
}

// expectOwned waits until each member caches exactly the objects its slots
// hold among keys, and checks that every key has one owner.
func expectOwned(t *testing.T, server *shardServer, own *ownership, members []member, names []string) {
	t.Helper()
	for _, m := range members {
		owned := ownedSlots(names, m.group.Identity())
		var want []string
		for _, p := range server.objects() {
			if owned.containsHash(shardHash(string(p.UID))) {
				want = append(want, KeyOf(p))
			}
		}
		want = plSorted(want)
		Eventually(t, m.group.Identity()+" holding its slots", func() bool {
			return m.inf.HasSynced() && slices.Equal(want, plSorted(m.inf.indexer.ListKeys()))
		})
	}
	want := map[string]int{}
	for _, k := range server.keys() {
		want[k] = 1
	}
	Eventually(t, "every object owned once", func() bool { return cmp.Equal(want, own.owners()) })
}

func TestDynamicShardsWidenAndNarrowWithoutRelistingKeptRanges(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	server := newShardServer()
	for i := range 600 {
		server.apply(watch.Added, shardPod(rng, i))
	}
	own := newOwnership()
	a, b, c := newMember(t, server, own, "a"), newMember(t, server, own, "b"), newMember(t, server, own, "c")
	names := []string{"a", "b", "c"}
	for _, m := range []member{a, b, c} {
		m.group.publish(names)
	}
	runMore := runAll(t, a.inf, b.inf, c.inf)
	expectOwned(t, server, own, []member{a, b, c}, names)

	// c leaves: a and b widen, each with one more list+watch.
	names = []string{"a", "b"}
	a.group.publish(names)
	b.group.publish(names)
	c.group.publish(nil)
	expectOwned(t, server, own, []member{a, b}, names)
	if n := len(c.inf.indexer.ListKeys()); n != 0 {
		t.Errorf("c, out of the group, still holds %d objects", n)
	}
	for _, m := range []member{a, b} {
		if got := m.inf.Stats().ShardWatches; got != 2 {
			t.Errorf("%s runs %d range watches, want 2", m.group.Identity(), got)
		}
	}
	for i := 600; i < 650; i++ { // events reach the new owners
		server.apply(watch.Added, shardPod(rng, i))
	}
	expectOwned(t, server, own, []member{a, b}, names)

	// d joins: a and b narrow, by dropping objects (moved) and watching on.
	listsBefore := countCalls(server.requests(), "list")
	d := newMember(t, server, own, "d")
	names = []string{"a", "b", "d"}
	for _, m := range []member{a, b, d} {
		m.group.publish(names)
	}
	runMore(d.inf)
	expectOwned(t, server, own, []member{a, b, d}, names)
	// Only d listed: its probe and its list.
	if got := countCalls(server.requests(), "list") - listsBefore; got != 2 {
		t.Errorf("%d lists after d joined, want d's 2 (probe and list)", got)
	}
	own.mu.Lock()
	defer own.mu.Unlock()
	if own.update["a"]+own.update["b"] != 0 {
		t.Errorf("a and b were notified of %d updates: a range was relisted", own.update["a"]+own.update["b"])
	}
	dHolds := plSorted(d.inf.indexer.ListKeys())
	if diff := cmp.Diff(dHolds, plSorted(slices.Concat(own.moved["a"], own.moved["b"]))); diff != "" {
		t.Errorf("the objects a and b moved are not those d holds (-d +moved):\n%s", diff)
	}
}

func countCalls(calls []shardCall, verb string) int {
	n := 0
	for _, c := range calls {
		if c.Verb == verb {
			n++
		}
	}
	return n
}

func TestDynamicShardWithNoSlotsIsSynced(t *testing.T) {
	server := newShardServer()
	server.apply(watch.Added, NewPod("ns", "a", "1"))
	m := newMember(t, server, newOwnership(), "x")
	m.group.publish([]string{"y"}) // x is not a member
	runAll(t, m.inf)
	Eventually(t, "synced", m.inf.HasSynced)
	if n := len(m.inf.indexer.ListKeys()); n != 0 {
		t.Errorf("holds %d objects, want none", n)
	}
	if fmt.Sprint(server.requests()) != "[]" {
		t.Errorf("requests %v, want none", server.requests())
	}
}

func TestDynamicShardRefusesConsistencyCheck(t *testing.T) {
	server := newShardServer()
	m := newMember(t, server, newOwnership(), "x")
	m.group.publish([]string{"x"})
	runAll(t, m.inf)
	Eventually(t, "synced", m.inf.HasSynced)
	if _, err := m.inf.CheckConsistency(t.Context()); !errors.Is(err, errDynamicShard) {
		t.Errorf("CheckConsistency: %v, want %v", err, errDynamicShard)
	}
}

// A transform may call back into the informer: while it runs, inside the
// range store, the shard must still follow its group (it once held the
// shard's lock across the transform, so a group change queued behind it
// and blocked the Stats call the transform made).
func TestDynamicShardTransformDoesNotHoldTheShard(t *testing.T) {
	server := newShardServer()
	g, err := NewShardGroup(fake.NewClientset().CoordinationV1(), ShardGroupOptions{Name: "ctl", Namespace: "ns", Identity: "x"})
	plMust(t, err)
	entered, release := make(chan struct{}), make(chan struct{})
	var inf *Informer[*corev1.Pod]
	inf, err = NewInformer[*corev1.Pod](server, InformerOptions[*corev1.Pod]{Name: "x", Shard: &Shard{Group: g},
		Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
			if p.Name == "block" {
				close(entered)
				<-release
				_ = inf.Stats()
			}
			return p, nil
		}})
	plMust(t, err)
	g.publish([]string{"x"})
	runAll(t, inf)
	Eventually(t, "synced", inf.HasSynced)
	server.apply(watch.Added, NewPod("ns", "block", "2"))
	<-entered
	// The transform is blocked: the group changes under it.
	g.publish([]string{"x", "y"})
	want := ownedSlots([]string{"x", "y"}, "x")
	Eventually(t, "the narrowing applied", func() bool {
		d := inf.source.(*dynamicShard[*corev1.Pod])
		if !d.mu.TryRLock() {
			return false
		}
		defer d.mu.RUnlock()
		return d.owned == want
	})
	// Its Stats call returns: else the informer's Run, which runAll waits
	// for, would not.
	close(release)
}
