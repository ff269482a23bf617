package informer

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"k8s.io/klog/v2/ktesting"

	"github.com/kubetyped/informer/informertest"
)

// shardServer is an in-memory API server for one resource that serves
// lists and any number of watches as a server with the ShardedListAndWatch
// gate does: it parses the shard selector, filters with apimachinery's own
// matcher and echoes the selector in the list's shardInfo. With gateOff it
// ignores selectors, as a server without the gate does. It does not serve
// streaming lists.
type shardServer struct {
	mu       sync.Mutex
	gateOff  bool
	rv       int
	objs     map[string]*corev1.Pod
	history  []watch.Event // every change, in order
	watchers map[*serverWatch]struct{}
	calls    []shardCall
}

// shardCall is one request the server received.
type shardCall struct {
	Verb, Selector, ResourceVersion string
}

type serverWatch struct {
	sel    sharding.Selector
	ch     chan watch.Event
	server *shardServer
	closed bool // guarded by server.mu
}

func (w *serverWatch) ResultChan() <-chan watch.Event { return w.ch }
func (w *serverWatch) Stop() {
	w.server.mu.Lock()
	defer w.server.mu.Unlock()
	w.closeLocked()
}
func (w *serverWatch) closeLocked() {
	if !w.closed {
		w.closed = true
		close(w.ch)
		delete(w.server.watchers, w)
	}
}

func newShardServer() *shardServer {
	return &shardServer{objs: map[string]*corev1.Pod{}, watchers: map[*serverWatch]struct{}{}}
}

var shardRangeRE = regexp.MustCompile(`^shardRange\((object\.metadata\.(?:uid|namespace)), '(0x[0-9a-f]{16,17})', '(0x[0-9a-f]{16,17})'\)$`)

// parseShardSelector parses what shardSelector writes, strictly.
func parseShardSelector(s string) (sharding.Selector, error) {
	var reqs []sharding.ShardRangeRequirement
	for part := range strings.SplitSeq(s, " || ") {
		m := shardRangeRE.FindStringSubmatch(part)
		if m == nil || !sharding.HexLess(m[2], m[3]) {
			return nil, fmt.Errorf("invalid shard selector: %q", part)
		}
		reqs = append(reqs, sharding.ShardRangeRequirement{Key: m[1], Start: m[2], End: m[3]})
	}
	return sharding.NewSelector(reqs...), nil
}

// selectorLocked records a call and returns its parsed selector, nil for
// none.
func (s *shardServer) selectorLocked(verb string, options metav1.ListOptions) (sharding.Selector, error) {
	s.calls = append(s.calls, shardCall{verb, options.ShardSelector, options.ResourceVersion})
	if s.gateOff || options.ShardSelector == "" {
		return nil, nil
	}
	return parseShardSelector(options.ShardSelector)
}

func shardMatches(sel sharding.Selector, p *corev1.Pod) bool {
	if sel == nil {
		return true
	}
	ok, err := sel.Matches(p)
	return err == nil && ok
}

func (s *shardServer) List(_ context.Context, options metav1.ListOptions) (*ListResult[*corev1.Pod], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sel, err := s.selectorLocked("list", options)
	if err != nil {
		return nil, err
	}
	res := &ListResult[*corev1.Pod]{ResourceVersion: fmt.Sprint(s.rv)}
	for _, p := range s.objs {
		if shardMatches(sel, p) {
			// Each response holds objects of its own, as a decoding
			// client's: an informer interns what it receives in place.
			res.Items = append(res.Items, p.DeepCopy())
		}
	}
	if sel != nil {
		res.ShardSelector = sel.String()
	}
	return res, nil
}

func (s *shardServer) Watch(_ context.Context, options metav1.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sel, err := s.selectorLocked("watch", options)
	if err != nil {
		return nil, err
	}
	w := &serverWatch{sel: sel, ch: make(chan watch.Event, 100000), server: s}
	from, _ := strconv.Atoi(options.ResourceVersion)
	for _, ev := range s.history {
		if p := ev.Object.(*corev1.Pod); plRV(p) > from && shardMatches(sel, p) {
			w.ch <- watch.Event{Type: ev.Type, Object: p.DeepCopy()}
		}
	}
	s.watchers[w] = struct{}{}
	return w, nil
}

// IsWatchListSemanticsUnSupported: the server lists, it does not stream.
func (s *shardServer) IsWatchListSemanticsUnSupported() bool { return true }

// apply records a change of p (a copy is stored) and sends it to the
// watches whose selector it matches.
func (s *shardServer) apply(typ watch.EventType, p *corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rv++
	p = p.DeepCopy()
	p.ResourceVersion = fmt.Sprint(s.rv)
	if typ == watch.Deleted {
		delete(s.objs, KeyOf(p))
	} else {
		s.objs[KeyOf(p)] = p
	}
	ev := watch.Event{Type: typ, Object: p}
	s.history = append(s.history, ev)
	for w := range s.watchers {
		if shardMatches(w.sel, p) {
			w.ch <- watch.Event{Type: ev.Type, Object: p.DeepCopy()}
		}
	}
}

// keys returns the keys of every object, sorted.
func (s *shardServer) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for k := range s.objs {
		keys = append(keys, k)
	}
	return plSorted(keys)
}

// objects returns every object.
func (s *shardServer) objects() []*corev1.Pod {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*corev1.Pod
	for _, p := range s.objs {
		out = append(out, p)
	}
	return out
}

// requests returns the calls received so far.
func (s *shardServer) requests() []shardCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// shardPod is a pod with a UID drawn from rng.
func shardPod(rng *rand.Rand, i int) *corev1.Pod {
	return NewPod(fmt.Sprintf("ns-%d", i%7), fmt.Sprintf("p%d", i), "1", func(p *corev1.Pod) {
		p.UID = types.UID(fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint64()&0xffffffffffff))
	})
}

func TestShardHashIsTheServersFNV1a(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 1000 {
		s := string(shardPod(rng, i).UID)
		if i%10 == 0 {
			s = fmt.Sprintf("ns-%d", i)
		}
		want := fnv.New64a()
		want.Write([]byte(s))
		if got := shardHash(s); got != want.Sum64() || fmt.Sprintf("%016x", got) != sharding.HashField(s) {
			t.Fatalf("shardHash(%q) = %016x, want %016x (hash/fnv) and %s (apimachinery)", s, got, want.Sum64(), sharding.HashField(s))
		}
	}
}

func TestShardSelectorIsTheServersSyntax(t *testing.T) {
	for _, tc := range []struct {
		shard Shard
		want  string
	}{
		{Shard{Index: 0, Count: 1}, "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')"},
		{Shard{Index: 1, Count: 2}, "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')"},
		{Shard{Index: 1, Count: 3, By: ShardByNamespace}, "shardRange(object.metadata.namespace, '0x5555555555555555', '0xaaaaaaaaaaaaaaaa')"},
		{Shard{Index: 3, Count: 4}, "shardRange(object.metadata.uid, '0xc000000000000000', '0x10000000000000000')"},
	} {
		got := shardSelector(tc.shard.key(), []hashRange{tc.shard.staticRange()})
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%+v: selector (-want +got):\n%s", tc.shard, diff)
		}
		if sel, err := parseShardSelector(got); err != nil || sel.String() != got {
			t.Errorf("%+v: the server's form of %q is %v (%v)", tc.shard, got, sel, err)
		}
	}
}

func TestShardOptionsAreValidated(t *testing.T) {
	for _, tc := range []struct {
		shard Shard
		want  string
	}{
		{Shard{}, "Count ≥ 1"},
		{Shard{Index: 3, Count: 3}, "0 ≤ Index < Count"},
		{Shard{Index: -1, Count: 3}, "0 ≤ Index < Count"},
		{Shard{Count: 2, By: "metadata.uid"}, `unsupported key "metadata.uid"`},
		{Shard{Count: 2, Group: &ShardGroup{}}, "either Group or Index and Count"},
	} {
		_, err := NewInformer[*corev1.Pod](informertest.NewFakeListerWatcher[*corev1.Pod](), InformerOptions[*corev1.Pod]{Shard: &tc.shard})
		if err == nil || !strings.Contains(err.Error(), "InformerOptions.Shard") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one about InformerOptions.Shard saying %q", tc.shard, err, tc.want)
		}
	}
}

// runShards runs one informer per static shard of count over server and
// waits for them to sync.
func runShards(t *testing.T, server ListerWatcher[*corev1.Pod], count int, filterOnClient bool) []*Informer[*corev1.Pod] {
	t.Helper()
	var infs []*Informer[*corev1.Pod]
	for i := range count {
		inf, err := NewInformer(server, InformerOptions[*corev1.Pod]{Name: fmt.Sprintf("shard-%d", i), Shard: &Shard{Index: i, Count: count, FilterOnClient: filterOnClient}})
		plMust(t, err)
		infs = append(infs, inf)
	}
	runAll(t, infs...)
	for _, inf := range infs {
		Eventually(t, inf.cfg.Name+" synced", inf.HasSynced)
	}
	return infs
}

// runAll runs the informers until the test ends, then stops them all and
// checks that their goroutines are gone. It returns a function that runs
// more informers the same way.
func runAll[T Object](t *testing.T, infs ...*Informer[T]) (runMore func(...*Informer[T])) {
	checkGoroutines := ExpectNoGoroutineLeak(t)
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	runMore = func(infs ...*Informer[T]) {
		for _, inf := range infs {
			wg.Go(func() { inf.Run(ctx) })
		}
	}
	runMore(infs...)
	t.Cleanup(func() {
		cancel()
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(plTimeout): // a failure guard, not a timing assertion
			t.Fatalf("Run did not return after its context was cancelled:\n%s", strings.Join(plPipelineGoroutines(), "\n\n"))
		}
		checkGoroutines()
	})
	return runMore
}

// checkPartition checks that the informers' caches are disjoint, that each
// holds only objects of its shard by apimachinery's matcher, and that
// together they hold want.
func checkPartition(t *testing.T, infs []*Informer[*corev1.Pod], want []string) {
	t.Helper()
	var union []string
	for i, inf := range infs {
		sel, err := parseShardSelector(shardSelector(ShardByUID, []hashRange{(&Shard{Index: i, Count: len(infs)}).staticRange()}))
		plMust(t, err)
		for _, p := range inf.indexer.List() {
			if ok, _ := sel.Matches(p); !ok {
				t.Errorf("shard %d holds %s, outside its range", i, KeyOf(p))
			}
			union = append(union, KeyOf(p))
		}
	}
	if diff := cmp.Diff(plSorted(want), plSorted(union)); diff != "" {
		t.Errorf("union of the shards (-want +got):\n%s", diff)
	}
}

func TestStaticShardsPartitionListsAndWatches(t *testing.T) {
	for _, filterOnClient := range []bool{false, true} {
		t.Run(fmt.Sprintf("filterOnClient=%v", filterOnClient), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			server := newShardServer()
			server.gateOff = filterOnClient
			var pods []*corev1.Pod
			var keys []string
			for i := range 300 {
				pods = append(pods, shardPod(rng, i))
				keys = append(keys, KeyOf(pods[i]))
			}
			for _, p := range pods {
				server.apply(watch.Added, p)
			}
			infs := runShards(t, server, 3, filterOnClient)
			checkPartition(t, infs, keys)

			for i := 300; i < 330; i++ {
				p := shardPod(rng, i)
				server.apply(watch.Added, p)
				keys = append(keys, KeyOf(p))
			}
			Eventually(t, "the watched pods cached", func() bool {
				n := 0
				for _, inf := range infs {
					n += len(inf.indexer.List())
				}
				return n == len(keys)
			})
			checkPartition(t, infs, keys)
		})
	}
}

func TestShardOnAServerWithoutTheGateFailsNamingIt(t *testing.T) {
	server := newShardServer()
	server.gateOff = true
	server.apply(watch.Added, NewPod("ns", "a", "1"))
	inf, err := NewInformer[*corev1.Pod](server, InformerOptions[*corev1.Pod]{Shard: &Shard{Index: 0, Count: 2}})
	plMust(t, err)
	t.Cleanup(plRun(t, inf))
	Eventually(t, "a list error", func() bool { return inf.lastError() != nil })
	err = inf.lastError()
	if !errors.Is(err, errShardingNotEnabled) || !strings.Contains(err.Error(), "ShardedListAndWatch") {
		t.Errorf("error %v, want one naming the ShardedListAndWatch gate", err)
	}
	if inf.HasSynced() || len(inf.indexer.List()) != 0 {
		t.Errorf("the informer synced or cached objects from a server that ignores its shard")
	}
}

// TestShardFilterOnClientOverAStreamingList runs a shard filtered on the
// client over a fake that ignores selectors, echoes none (as lists of
// metadata do) and streams its initial list: the informer tells it ignores
// selectors by its answer to an invalid one, and the streaming list's
// closing bookmark passes the filter.
func TestShardFilterOnClientOverAStreamingList(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	lw := informertest.NewFakeListerWatcher[*corev1.Pod]()
	var pods []*corev1.Pod
	for i := range 60 {
		pods = append(pods, shardPod(rng, i))
	}
	lw.SetList("10", pods...)
	shard := &Shard{Index: 1, Count: 3, FilterOnClient: true} // not the shard of hash(""), a bookmark's UID
	inf, err := NewInformer[*corev1.Pod](lw, InformerOptions[*corev1.Pod]{Shard: shard})
	plMust(t, err)
	runAll(t, inf)
	Eventually(t, "synced", inf.HasSynced)
	var want []string
	for _, p := range pods {
		if shard.staticRange().contains(shardHash(string(p.UID))) {
			want = append(want, KeyOf(p))
		}
	}
	if diff := cmp.Diff(plSorted(want), plSorted(inf.indexer.ListKeys())); diff != "" {
		t.Errorf("cached (-want +got):\n%s", diff)
	}
	var selectors []string
	for _, c := range lw.Calls() {
		selectors = append(selectors, c.Verb+" "+c.Options.ShardSelector)
	}
	sel := shardSelector(ShardByUID, []hashRange{shard.staticRange()})
	if diff := cmp.Diff([]string{"list " + sel, "list " + invalidShardSelector, "watch " + sel}, selectors); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

// namespaceSets are realistic sets of namespace names, for
// TestNamespaceShardSpread.
func namespaceSets() []struct {
	name string
	ns   []string
} {
	seq := func(prefix string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = prefix + strconv.Itoa(i)
		}
		return out
	}
	var teams []string
	for c := 'a'; c <= 'z'; c++ {
		for _, env := range []string{"prod", "staging", "dev"} {
			teams = append(teams, fmt.Sprintf("team-%c-%s", c, env))
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	uuid := func() string {
		return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint32()&0xffff, rng.Uint64()&0xffffffffffff)
	}
	tenants := make([]string, 100)
	for i := range tenants {
		tenants[i] = "tenant-" + uuid()
	}
	uids := make([]string, 10000)
	for i := range uids {
		uids[i] = uuid()
	}
	return []struct {
		name string
		ns   []string
	}{
		{"`ns-0` … `ns-6`", seq("ns-", 7)},
		{"`ns-0` … `ns-99`", seq("ns-", 100)},
		{"`app-1` … `app-30`", seq("app-", 31)[1:]},
		{"`team-a-prod` … `team-z-dev` (78)", teams},
		{"16 platform namespaces (`default`, `kube-system`, `monitoring`, …)", []string{"default", "kube-system", "kube-public", "kube-node-lease",
			"monitoring", "logging", "ingress-nginx", "cert-manager", "argocd", "istio-system", "gatekeeper-system", "flux-system",
			"velero", "external-dns", "kyverno", "vault"}},
		{"100 `tenant-<uuid>`", tenants},
		{"for comparison: 10,000 UIDs (`ShardByUID`)", uids},
	}
}

// shardCounts counts values per static shard of count.
func shardCounts(values []string, count int) []int {
	counts := make([]int, count)
	for _, v := range values {
		h := shardHash(v)
		for i := range count {
			if (&Shard{Index: i, Count: count}).staticRange().contains(h) {
				counts[i]++
			}
		}
	}
	return counts
}

// TestNamespaceShardSpread measures how namespaces spread over static
// shards by the server's 64-bit FNV-1a hash; with -v it prints the table
// of docs/sharding.md. Names that differ only in their last bytes hash to
// values that differ mostly in the low bits, so they fall in one range.
func TestNamespaceShardSpread(t *testing.T) {
	var table strings.Builder
	table.WriteString("| namespaces | 3 shards | max / mean | 5 shards | max / mean |\n|---|---|---|---|---|\n")
	for _, set := range namespaceSets() {
		fmt.Fprintf(&table, "| %s |", set.name)
		for _, count := range []int{3, 5} {
			counts := shardCounts(set.ns, count)
			ratio := float64(slices.Max(counts)) * float64(count) / float64(len(set.ns))
			fmt.Fprintf(&table, " %s | %.2f |", strings.Trim(strings.Join(strings.Fields(fmt.Sprint(counts)), "/"), "[]"), ratio)
		}
		table.WriteString("\n")
	}
	t.Logf("namespaces per shard, each namespace counted once:\n%s", table.String())
	// The case: 7 namespaces of 300 pods each, one shard of 3.
	if diff := cmp.Diff([]int{7, 0, 0}, shardCounts(namespaceSets()[0].ns, 3)); diff != "" {
		t.Errorf("ns-0 … ns-6 over 3 shards (-want +got):\n%s", diff)
	}
}
