package informer

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var _ ReflectorStore[*corev1.Pod] = (*DeltaFIFO[*corev1.Pod])(nil)

// fifoPod returns a pod in namespace "ns"; rv tells versions apart.
func fifoPod(name, rv string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, ResourceVersion: rv}}
}

// fifoKnown is a fixed set of known objects. GetByKey fails with err when
// it is set; listedOnly keys are listed but cannot be got.
type fifoKnown struct {
	pods       []*corev1.Pod
	listedOnly []string
	err        error
}

func (k fifoKnown) ListKeys() []string {
	keys := make([]string, 0, len(k.pods)+len(k.listedOnly))
	for _, p := range k.pods {
		keys = append(keys, KeyOf(p))
	}
	return append(keys, k.listedOnly...)
}

func (k fifoKnown) GetByKey(key string) (*corev1.Pod, bool, error) {
	if k.err != nil {
		return nil, false, k.err
	}
	for _, p := range k.pods {
		if KeyOf(p) == key {
			return p, true, nil
		}
	}
	return nil, false, nil
}

// fifoPopped is what one Pop handed to its process func.
type fifoPopped struct {
	Deltas  Deltas[*corev1.Pod]
	Initial bool
}

// fifoPop pops one key, failing the test if none comes soon, and checks
// that Pop returned what it gave process.
func fifoPop(t *testing.T, f *DeltaFIFO[*corev1.Pod]) fifoPopped {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got fifoPopped
	returned, err := f.Pop(ctx, func(d Deltas[*corev1.Pod], initial bool) error {
		got = fifoPopped{Deltas: d, Initial: initial}
		return nil
	})
	if err != nil {
		t.Fatalf("Pop: %v", err)
	}
	if diff := cmp.Diff(got.Deltas, returned); diff != "" {
		t.Fatalf("Pop returned other deltas than it processed (-processed +returned):\n%s", diff)
	}
	return got
}

// fifoDrain pops until the queue is empty.
func fifoDrain(t *testing.T, f *DeltaFIFO[*corev1.Pod]) []fifoPopped {
	t.Helper()
	var all []fifoPopped
	for len(f.ListKeys()) > 0 {
		all = append(all, fifoPop(t, f))
	}
	return all
}

// fifoDrainDeltas pops until the queue is empty and returns the Deltas.
func fifoDrainDeltas(t *testing.T, f *DeltaFIFO[*corev1.Pod]) []Deltas[*corev1.Pod] {
	t.Helper()
	var all []Deltas[*corev1.Pod]
	for _, p := range fifoDrain(t, f) {
		all = append(all, p.Deltas)
	}
	return all
}

// fifoExpectNoLeak fails the test if it leaves more goroutines running
// than it started with.
func fifoExpectNoLeak(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > before; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Errorf("goroutines leaked: %d running, %d before the test", runtime.NumGoroutine(), before)
				return
			}
		}
	})
}

func fifoMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// fsu is a final-state-unknown deletion record of p.
func fifoFSU(p *corev1.Pod) Delta[*corev1.Pod] {
	return Delta[*corev1.Pod]{Type: Deleted, Object: p, FinalStateUnknown: true}
}

func fifoDelta(t DeltaType, p *corev1.Pod) Delta[*corev1.Pod] {
	return Delta[*corev1.Pod]{Type: t, Object: p}
}

func TestDeltaFIFOConcurrentProducersKeepTheirOrder(t *testing.T) {
	fifoExpectNoLeak(t)
	f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{})
	const amount = 500
	done := make(chan struct{}, 2)
	for _, producer := range []string{"a", "b"} {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range amount {
				if err := f.Add(fifoPod(producer+strconv.Itoa(i), strconv.Itoa(i))); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	next := map[string]int{}
	for range 2 * amount {
		d := fifoPop(t, f).Deltas
		if len(d) != 1 {
			t.Fatalf("each key is added once, got %d deltas", len(d))
		}
		p := d.Newest().Object
		producer, want := p.Name[:1], strconv.Itoa(next[p.Name[:1]])
		if p.ResourceVersion != want {
			t.Fatalf("producer %s: popped version %s, want %s", producer, p.ResourceVersion, want)
		}
		next[producer]++
	}
	<-done
	<-done
}

func TestDeltaFIFOAppendsDeltasPerKey(t *testing.T) {
	f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{})
	fifoMust(t, f.Add(fifoPod("foo", "10")))
	fifoMust(t, f.Update(fifoPod("foo", "12")))
	fifoMust(t, f.Delete(fifoPod("foo", "15")))

	if diff := cmp.Diff([]*corev1.Pod{fifoPod("foo", "15")}, f.List()); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ns/foo"}, f.ListKeys()); diff != "" {
		t.Errorf("ListKeys (-want +got):\n%s", diff)
	}
	want := Deltas[*corev1.Pod]{fifoDelta(Added, fifoPod("foo", "10")), fifoDelta(Updated, fifoPod("foo", "12")), fifoDelta(Deleted, fifoPod("foo", "15"))}
	got, ok, err := f.Get(fifoPod("foo", ""))
	fifoMust(t, err)
	if diff := cmp.Diff(want, got); !ok || diff != "" {
		t.Errorf("Get: exists %v (-want +got):\n%s", ok, diff)
	}
	if diff := cmp.Diff([]Deltas[*corev1.Pod]{want}, fifoDrainDeltas(t, f)); diff != "" {
		t.Errorf("popped (-want +got):\n%s", diff)
	}
	if _, ok := f.GetByKey("ns/foo"); ok {
		t.Error("popped key still queued")
	}
}

func TestDeltaFIFOGetReturnsACopy(t *testing.T) {
	f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{})
	fifoMust(t, f.Add(fifoPod("foo", "1")))
	got, _ := f.GetByKey("ns/foo")
	got[0].Type = Deleted
	again, _ := f.GetByKey("ns/foo")
	if diff := cmp.Diff(Deltas[*corev1.Pod]{fifoDelta(Added, fifoPod("foo", "1"))}, again); diff != "" {
		t.Errorf("queued deltas changed through a returned copy (-want +got):\n%s", diff)
	}
}

func TestDeltaFIFOKeyKeepsItsPlaceInLine(t *testing.T) {
	f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{})
	fifoMust(t, f.Add(fifoPod("foo", "10")))
	fifoMust(t, f.Add(fifoPod("bar", "1")))
	fifoMust(t, f.Add(fifoPod("foo", "11")))
	fifoMust(t, f.Add(fifoPod("foo", "13")))
	fifoMust(t, f.Add(fifoPod("zab", "30")))
	first := fifoPop(t, f).Deltas
	fifoMust(t, f.Add(fifoPod("foo", "14"))) // foo was popped: it goes to the back
	want := []Deltas[*corev1.Pod]{
		{fifoDelta(Added, fifoPod("foo", "10")), fifoDelta(Added, fifoPod("foo", "11")), fifoDelta(Added, fifoPod("foo", "13"))},
		{fifoDelta(Added, fifoPod("bar", "1"))},
		{fifoDelta(Added, fifoPod("zab", "30"))},
		{fifoDelta(Added, fifoPod("foo", "14"))},
	}
	if diff := cmp.Diff(want, append([]Deltas[*corev1.Pod]{first}, fifoDrainDeltas(t, f)...)); diff != "" {
		t.Errorf("popped (-want +got):\n%s", diff)
	}
}

func TestDeltaFIFODeleteOfAnUnknownKeyIsIgnored(t *testing.T) {
	tests := []struct {
		name  string
		known KeyListerGetter[*corev1.Pod]
		want  []Deltas[*corev1.Pod]
	}{{
		name: "no known objects",
		want: []Deltas[*corev1.Pod]{
			{fifoDelta(Added, fifoPod("foo", "10"))},
			{fifoDelta(Updated, fifoPod("bar", "15"))},
			{fifoDelta(Added, fifoPod("qux", "17")), fifoDelta(Deleted, fifoPod("qux", "18"))},
		},
	}, {
		name:  "baz is known",
		known: fifoKnown{pods: []*corev1.Pod{fifoPod("foo", "5"), fifoPod("bar", "6"), fifoPod("baz", "7")}},
		want: []Deltas[*corev1.Pod]{
			{fifoDelta(Added, fifoPod("foo", "10"))},
			{fifoDelta(Updated, fifoPod("bar", "15"))},
			{fifoDelta(Added, fifoPod("qux", "17")), fifoDelta(Deleted, fifoPod("qux", "18"))},
			{fifoDelta(Deleted, fifoPod("baz", "20"))},
		},
	}, {
		name:  "known objects fail: the deletion is kept",
		known: fifoKnown{err: errors.New("store unavailable")},
		want: []Deltas[*corev1.Pod]{
			{fifoDelta(Added, fifoPod("foo", "10"))},
			{fifoDelta(Updated, fifoPod("bar", "15"))},
			{fifoDelta(Added, fifoPod("qux", "17")), fifoDelta(Deleted, fifoPod("qux", "18"))},
			{fifoDelta(Deleted, fifoPod("baz", "20"))},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{KnownObjects: tt.known})
			fifoMust(t, f.Add(fifoPod("foo", "10")))
			fifoMust(t, f.Update(fifoPod("bar", "15")))
			fifoMust(t, f.Add(fifoPod("qux", "17")))
			fifoMust(t, f.Delete(fifoPod("qux", "18")))
			fifoMust(t, f.Delete(fifoPod("baz", "20")))
			if diff := cmp.Diff(tt.want, fifoDrainDeltas(t, f)); diff != "" {
				t.Errorf("popped (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeltaFIFODeduplicatesTrailingDeletions(t *testing.T) {
	foo := func(rv string) *corev1.Pod { return fifoPod("foo", rv) }
	tests := []struct {
		name string
		ops  func(f *DeltaFIFO[*corev1.Pod]) error
		want Deltas[*corev1.Pod]
	}{{
		name: "two watched deletions keep the older",
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Add(foo("1")), f.Delete(foo("2")), f.Delete(foo("3")))
		},
		want: Deltas[*corev1.Pod]{fifoDelta(Added, foo("1")), fifoDelta(Deleted, foo("2"))},
	}, {
		name: "a relist deletion after a watched one is dropped",
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Add(foo("1")), f.Delete(foo("2")), f.Replace(nil, "5"))
		},
		want: Deltas[*corev1.Pod]{fifoDelta(Added, foo("1")), fifoDelta(Deleted, foo("2"))},
	}, {
		name: "a watched deletion replaces a relist one",
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Add(foo("1")), f.Replace(nil, "5"), f.Delete(foo("3")))
		},
		want: Deltas[*corev1.Pod]{fifoDelta(Added, foo("1")), fifoDelta(Deleted, foo("3"))},
	}, {
		name: "deletions apart are kept",
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Add(foo("1")), f.Delete(foo("2")), f.Add(foo("3")), f.Delete(foo("4")))
		},
		want: Deltas[*corev1.Pod]{fifoDelta(Added, foo("1")), fifoDelta(Deleted, foo("2")), fifoDelta(Added, foo("3")), fifoDelta(Deleted, foo("4"))},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{})
			fifoMust(t, tt.ops(f))
			if diff := cmp.Diff([]Deltas[*corev1.Pod]{tt.want}, fifoDrainDeltas(t, f)); diff != "" {
				t.Errorf("popped (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeltaFIFOReplaceDeletesKeysOnlyInTheQueue(t *testing.T) {
	obj, objV2 := fifoPod("foo", "2"), fifoPod("foo", "3")
	tests := []struct {
		name         string
		emitReplaced bool
		ops          func(f *DeltaFIFO[*corev1.Pod]) error
		want         Deltas[*corev1.Pod]
	}{{
		name: "added object",
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Add(obj), f.Replace(nil, "0"))
		},
		want: Deltas[*corev1.Pod]{fifoDelta(Added, obj), fifoFSU(obj)},
	}, {
		name:         "replaced object gets a single deletion",
		emitReplaced: true,
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Add(obj), f.Replace([]*corev1.Pod{obj}, "0"), f.Replace(nil, "0"))
		},
		want: Deltas[*corev1.Pod]{fifoDelta(Added, obj), fifoDelta(Replaced, obj), fifoFSU(obj)},
	}, {
		name: "deleted object gets no second deletion",
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Add(obj), f.Delete(obj), f.Replace(nil, "0"))
		},
		want: Deltas[*corev1.Pod]{fifoDelta(Added, obj), fifoDelta(Deleted, obj)},
	}, {
		name: "synced object gets a single deletion",
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Add(obj), f.Replace([]*corev1.Pod{obj}, "0"), f.Replace([]*corev1.Pod{obj}, "0"), f.Replace(nil, "0"))
		},
		want: Deltas[*corev1.Pod]{fifoDelta(Added, obj), fifoDelta(Sync, obj), fifoDelta(Sync, obj), fifoFSU(obj)},
	}, {
		name: "several relists delete once",
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Add(obj), f.Replace(nil, "0"), f.Replace(nil, "1"))
		},
		want: Deltas[*corev1.Pod]{fifoDelta(Added, obj), fifoFSU(obj)},
	}, {
		name: "recreated object is deleted with its newest state",
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Add(obj), f.Delete(obj), f.Add(objV2), f.Replace(nil, "0"))
		},
		want: Deltas[*corev1.Pod]{fifoDelta(Added, obj), fifoDelta(Deleted, obj), fifoDelta(Added, objV2), fifoFSU(objV2)},
	}}
	for _, tt := range tests {
		for _, known := range []KeyListerGetter[*corev1.Pod]{nil, fifoKnown{}} {
			t.Run(fmt.Sprintf("%s/known objects %v", tt.name, known != nil), func(t *testing.T) {
				f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{KnownObjects: known, EmitDeltaTypeReplaced: tt.emitReplaced})
				fifoMust(t, tt.ops(f))
				if diff := cmp.Diff([]Deltas[*corev1.Pod]{tt.want}, fifoDrainDeltas(t, f)); diff != "" {
					t.Errorf("popped (-want +got):\n%s", diff)
				}
			})
		}
	}
}
