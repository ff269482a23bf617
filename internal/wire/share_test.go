package wire

import (
	"maps"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
	"unsafe"
	"weak"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/randfill"

	"github.com/kubetyped/informer/internal/prodpods"
	"github.com/kubetyped/informer/internal/testkit"
)

// decodedProdPods returns n production-like pods (internal/prodpods), each
// decoded anew from its protobuf encoding, as a list or watch decodes
// them.
func decodedProdPods(t testing.TB, n int) []*corev1.Pod {
	t.Helper()
	encoded := encodedProdPods(t, n)
	out := make([]*corev1.Pod, len(encoded))
	for i, data := range encoded {
		out[i] = &corev1.Pod{}
		if err := out[i].Unmarshal(data); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// encodedProdPods returns the protobuf encodings of n production-like
// pods.
func encodedProdPods(t testing.TB, n int) [][]byte {
	t.Helper()
	pods := prodpods.New(n)
	out := make([][]byte, len(pods))
	for i := range pods {
		data, err := pods[i].Marshal()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = data
	}
	return out
}

// internAll deduplicates pods in place, in order.
func internAll(table *InternTable, pods []*corev1.Pod) {
	intern := InternFuncFor[*corev1.Pod]()
	for _, p := range pods {
		InternObject(table, intern, p)
	}
}

// TestShareChangesNoValueOfProdPods deduplicates the production-like pods,
// decoded from protobuf, and compares each with its plain decode.
func TestShareChangesNoValueOfProdPods(t *testing.T) {
	table := newBareInternTable()
	plain := decodedProdPods(t, 400)
	for i, p := range plain {
		if diff := testkit.DiffLarge(p, internedCopy(table, p)); diff != "" {
			t.Fatalf("pod %d changed by deduplication (-plain +deduplicated):\n%s", i, diff)
		}
	}
}

// TestShareChangesNoValueOfRandomPods deduplicates random pods three times
// over (a sub-object is shared from its second sighting on), and between
// them variants of each that differ only in lists and maps being nil or
// empty, which their encodings do not tell apart: every copy must keep its
// own value.
func TestShareChangesNoValueOfRandomPods(t *testing.T) {
	table := newBareInternTable()
	f := randfill.NewWithSeed(15).NilChance(0.2).NumElements(0, 3)
	r := rand.New(rand.NewPCG(15, 0))
	for i := range 100 {
		var pod corev1.Pod
		f.Fill(&pod)
		variant := pod.DeepCopy()
		flipEmpty(reflect.ValueOf(variant).Elem(), r)
		for round, p := range []*corev1.Pod{&pod, &pod, variant, &pod, variant} {
			if diff := testkit.DiffLarge(p, internedCopy(table, p)); diff != "" {
				t.Fatalf("pod %d, round %d: changed by deduplication (-plain +deduplicated):\n%s", i, round, diff)
			}
		}
	}
}

// flipEmpty turns, at random, nil lists and maps in v into empty ones and
// empty ones into nil, in place, recursively.
func flipEmpty(v reflect.Value, r *rand.Rand) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			flipEmpty(v.Elem(), r)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				flipEmpty(v.Field(i), r)
			}
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 { // bytes: not in what is shared
			return
		}
		switch {
		case v.IsNil() && r.IntN(2) == 0:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
		case !v.IsNil() && v.Len() == 0 && r.IntN(2) == 0:
			v.SetZero()
		}
		for i := range v.Len() {
			flipEmpty(v.Index(i), r)
		}
	case reflect.Map:
		switch {
		case v.IsNil() && r.IntN(2) == 0:
			v.Set(reflect.MakeMap(v.Type()))
		case !v.IsNil() && v.Len() == 0 && r.IntN(2) == 0:
			v.SetZero()
		}
	}
}

// TestShareShares checks that replicas of one Deployment end up sharing
// their template's sub-objects, but for the first one.
func TestShareShares(t *testing.T) {
	table := newBareInternTable()
	// Five replicas of the first Deployment: the filter of values seen
	// once may forget a first sighting; comparing the last two makes that
	// harmless.
	pods := decodedProdPods(t, 5)
	internAll(table, pods)
	a, b := pods[3], pods[4]
	checkSharedSubObjects(t, a, b)
	mp := func(m map[string]string) unsafe.Pointer { return unsafe.Pointer(mapPointer(m)) }
	// The first replica made the first sighting: it keeps its own.
	if mp(pods[0].Labels) == mp(a.Labels) {
		t.Error("the first replica's labels are shared: want them kept, as for strings")
	}
}

// checkSharedSubObjects checks that two replicas of one Deployment share
// their template's sub-objects.
func checkSharedSubObjects(t *testing.T, a, b *corev1.Pod) {
	t.Helper()
	same := func(what string, x, y unsafe.Pointer) {
		t.Helper()
		if x == nil || x != y {
			t.Errorf("%s not shared (%p, %p)", what, x, y)
		}
	}
	mp := func(m map[string]string) unsafe.Pointer { return unsafe.Pointer(mapPointer(m)) }
	rl := func(m corev1.ResourceList) unsafe.Pointer { return unsafe.Pointer(mapPointer(m)) }
	same("labels", mp(a.Labels), mp(b.Labels))
	same("annotations", mp(a.Annotations), mp(b.Annotations))
	same("owner references", unsafe.Pointer(unsafe.SliceData(a.OwnerReferences)), unsafe.Pointer(unsafe.SliceData(b.OwnerReferences)))
	same("tolerations", unsafe.Pointer(unsafe.SliceData(a.Spec.Tolerations)), unsafe.Pointer(unsafe.SliceData(b.Spec.Tolerations)))
	same("pod security context", unsafe.Pointer(a.Spec.SecurityContext), unsafe.Pointer(b.Spec.SecurityContext))
	for v := range a.Spec.Volumes {
		va, vb := &a.Spec.Volumes[v].VolumeSource, &b.Spec.Volumes[v].VolumeSource
		switch {
		case va.ConfigMap != nil:
			same("config map volume", unsafe.Pointer(va.ConfigMap), unsafe.Pointer(vb.ConfigMap))
		case va.Projected != nil:
			same("projected volume", unsafe.Pointer(va.Projected), unsafe.Pointer(vb.Projected))
		default:
			same("empty dir volume", unsafe.Pointer(va.EmptyDir), unsafe.Pointer(vb.EmptyDir))
		}
	}
	for c := range a.Spec.Containers {
		ca, cb := &a.Spec.Containers[c], &b.Spec.Containers[c]
		same("args", unsafe.Pointer(unsafe.SliceData(ca.Args)), unsafe.Pointer(unsafe.SliceData(cb.Args)))
		same("env", unsafe.Pointer(unsafe.SliceData(ca.Env)), unsafe.Pointer(unsafe.SliceData(cb.Env)))
		same("ports", unsafe.Pointer(unsafe.SliceData(ca.Ports)), unsafe.Pointer(unsafe.SliceData(cb.Ports)))
		same("limits", rl(ca.Resources.Limits), rl(cb.Resources.Limits))
		same("requests", rl(ca.Resources.Requests), rl(cb.Resources.Requests))
		same("readiness probe", unsafe.Pointer(ca.ReadinessProbe), unsafe.Pointer(cb.ReadinessProbe))
		same("security context", unsafe.Pointer(ca.SecurityContext), unsafe.Pointer(cb.SecurityContext))
		if cap(ca.Env) != len(ca.Env) {
			t.Errorf("shared env has capacity %d beyond its length %d: an append would write into it", cap(ca.Env), len(ca.Env))
		}
	}
}

// TestShareDoesNotWriteSharedObjects deduplicates fresh decodes of the same
// pods, twice, while other goroutines read the pods deduplicated before, as
// handlers read cached objects while the reflector deduplicates new ones:
// under the race detector, any write into a value shared with the cached
// pods would be reported. (Deduplicating the cached pods themselves again
// may write to them: a value evicted from the seen filter is shared only
// on a later sighting, and the informer never deduplicates an object it
// has cached, see docs/semantics.md.)
func TestShareDoesNotWriteSharedObjects(t *testing.T) {
	table := newBareInternTable()
	cached := decodedProdPods(t, 60)
	internAll(table, cached)
	snapshot := make([]*corev1.Pod, len(cached))
	for i, p := range cached {
		snapshot[i] = p.DeepCopy()
	}
	fresh := [][]*corev1.Pod{decodedProdPods(t, 60), decodedProdPods(t, 60)}
	var readers sync.WaitGroup
	for range 2 {
		readers.Go(func() {
			for i, p := range cached {
				if diff := testkit.DiffLarge(snapshot[i], p); diff != "" {
					t.Errorf("pod %d changed:\n%s", i, diff)
				}
			}
		})
	}
	for _, pods := range fresh {
		internAll(table, pods)
	}
	readers.Wait()
	for i, p := range fresh[1] {
		if diff := testkit.DiffLarge(snapshot[i], p); diff != "" {
			t.Errorf("fresh pod %d differs from its first decode (-first +fresh):\n%s", i, diff)
		}
	}
}

// TestShareTableShrinks shares the sub-objects of many pods, lets the pods
// go and checks that a sweep leaves the table empty.
func TestShareTableShrinks(t *testing.T) {
	table := newBareInternTable()
	pods := decodedProdPods(t, 2000)
	internAll(table, pods)
	checkSharesShrink(t, table, &table.shared, pods)
}

// checkSharesShrink checks that shares, sets of table's, hold sub-objects
// of pods, then lets the pods go (the caller must not use them after) and
// waits for the sets to forget every sub-object, swept through put.
func checkSharesShrink(t *testing.T, table *InternTable, shares *podShares, pods []*corev1.Pod) {
	t.Helper()
	if n := len(shares.env.slots) + len(shares.stringMaps.slots); n < 50 {
		t.Fatalf("table holds %d env lists and string maps, want at least 50", n)
	}
	runtime.KeepAlive(pods)
	// Sub-objects only: short strings may share a tiny allocation with a
	// live object and outlive their own (see weak.Pointer and
	// TestInternTableShrinks); every shared sub-object holds pointers, so
	// it is never a tiny allocation.
	sets := shares.sets()
	eventuallyForgets(t, table, "sub-object", sets, func() bool {
		for _, set := range sets {
			if !set.sweepThroughPut() {
				return false
			}
		}
		return true
	})
}

// shareSetForTest is a shareSet of any type, for the tests.
type shareSetForTest interface {
	hashes() []uint64
	holds(h uint64) bool
	sweepThroughPut() bool
}

func (s *shareSet[T]) hashes() []uint64 { return slices.Collect(maps.Keys(s.slots)) }

func (s *shareSet[T]) holds(h uint64) bool {
	_, ok := s.slots[h]
	return ok
}

// sweepThroughPut puts values used by nothing into s until put sweeps it,
// as insertions sweep a set in production, and reports whether it did
// within the insertions the sweep rule allows (shareSet.put).
func (s *shareSet[T]) sweepThroughPut() bool {
	for h := range uint64(len(s.slots) + minSweepInserts) {
		if s.put(h+1, shareSlot[T]{p: weak.Make(unusedValue[T]())}) {
			return true
		}
	}
	return false
}

// unusedValue returns a new value for a set of T: a map's runtime object
// for a set of maps (whose T, mapObject, has no size: a weak pointer needs
// an allocation).
func unusedValue[T any]() *T {
	if _, ok := any((*T)(nil)).(*mapObject); ok {
		return (*T)(unsafe.Pointer(mapPointer(map[int]int{0: 0})))
	}
	return new(T)
}

// sets returns every set of s.
func (s *podShares) sets() []shareSetForTest {
	v := reflect.ValueOf(s).Elem()
	out := make([]shareSetForTest, v.NumField())
	for i := range out {
		f := v.Field(i)
		out[i] = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Interface().(shareSetForTest)
	}
	return out
}

// eventuallyForgets waits until none of sets holds a slot it holds now: the
// caller lets go of the objects using their values, and sweep makes each
// set sweep through put, as insertions do in production, reporting false
// if one did not.
func eventuallyForgets(t *testing.T, table *InternTable, what string, sets []shareSetForTest, sweep func() bool) {
	t.Helper()
	held := make([][]uint64, len(sets))
	for i, set := range sets {
		held[i] = set.hashes()
	}
	testkit.Eventually(t, "the table to forget every "+what, func() bool {
		runtime.GC()
		table.mu.Lock()
		defer table.mu.Unlock()
		if !sweep() {
			t.Errorf("a set of %ss was not swept within the insertions its rule allows", what)
			return true
		}
		for i, set := range sets {
			for _, h := range held[i] {
				if set.holds(h) {
					return false
				}
			}
		}
		return true
	})
}

// BenchmarkDeduplicate decodes production-like pods from protobuf, as a
// list or watch does, with and without deduplicating them afterwards: the
// difference is what deduplication costs per event. With it, dedup-ns/op
// is the time of the deduplication pass alone, which a loaded machine
// makes less noisy than the difference of two timings.
func BenchmarkDeduplicate(b *testing.B) {
	encoded := encodedProdPods(b, 3000)
	for _, dedup := range []bool{false, true} {
		b.Run(map[bool]string{false: "off", true: "on"}[dedup], func(b *testing.B) {
			table := NewInternTable() // with its sweeps after garbage collections, as an informer's
			intern := InternFuncFor[*corev1.Pod]()
			// The cache: each pod decoded replaces the previous one of
			// its name, so the table sees what a cache holds.
			cache := make([]*corev1.Pod, len(encoded))
			var pass time.Duration
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				p := &corev1.Pod{}
				if err := p.Unmarshal(encoded[i]); err != nil {
					b.Fatal(err)
				}
				if dedup {
					start := time.Now()
					InternObject(table, intern, p)
					pass += time.Since(start)
				}
				cache[i] = p
				i = (i + 1) % len(encoded)
			}
			if dedup {
				b.ReportMetric(float64(pass.Nanoseconds())/float64(b.N), "dedup-ns/op")
			}
		})
	}
}

// churnValue is a value of TestShareSetBoundedUnderChurn: larger than the
// tiny allocations that may outlive their own (see weak.Pointer).
type churnValue struct{ b [48]byte }

// TestShareSetBoundedUnderChurn puts values into a share set through put
// alone, as churn does: live values at any time, each dying a while after
// it is put, the garbage collector running now and then. The set must keep
// every live value and stay within about twice what is live (what the last
// sweep found live and as many insertions since); once nothing is live, it
// must hold no more than minSweepInserts and a collection's lag, its map
// rebuilt.
func TestShareSetBoundedUnderChurn(t *testing.T) {
	const (
		live     = 3 * minSweepInserts / 2
		gcEvery  = 256 // insertions between collections: values dead but not yet collected look live
		inserts  = 8 * live
		maxSlots = 2*(live+gcEvery) + 1
	)
	var set shareSet[churnValue]
	window := make([]*churnValue, live)
	hashes := make([]uint64, live)
	most := 0
	for i := range inserts {
		if i%gcEvery == 0 {
			runtime.GC()
		}
		v := &churnValue{}
		window[i%live], hashes[i%live] = v, uint64(i)
		set.put(uint64(i), shareSlot[churnValue]{p: weak.Make(v)})
		most = max(most, len(set.slots))
	}
	if most > maxSlots {
		t.Errorf("the set held up to %d slots for %d live values, want at most %d", most, live, maxSlots)
	}
	for i, h := range hashes {
		if _, got := set.live(h); got != window[i] {
			t.Fatalf("live value %d (hash %d): the set returns %p, want %p", i, h, got, window[i])
		}
	}

	// Nothing live: each value dies as soon as it is put.
	clear(window)
	for i := range 4 * live {
		if i%gcEvery == 0 {
			runtime.GC()
		}
		set.put(uint64(inserts+i), shareSlot[churnValue]{p: weak.Make(&churnValue{})})
	}
	if n, want := len(set.slots), minSweepInserts+2*gcEvery; n > want || set.peak > want {
		t.Errorf("with nothing live, the set holds %d slots (peak since its map was built: %d), want at most %d", n, set.peak, want)
	}
}
