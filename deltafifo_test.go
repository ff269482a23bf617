package informer

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
)

var _ ReflectorStore[*corev1.Pod] = (*DeltaFIFO[*corev1.Pod])(nil)

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

// fifoOp is one operation on a queue under test.
type fifoOp = func(f *DeltaFIFO[*corev1.Pod]) error

// fifoPopped is what one Pop handed to its process func.
type fifoPopped struct {
	Deltas  []Delta[*corev1.Pod]
	Initial bool
}

// fifoPop pops one key, failing the test if none comes soon, and checks
// that Pop returned what it gave process.
func fifoPop(t *testing.T, f *DeltaFIFO[*corev1.Pod]) fifoPopped {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), plTimeout)
	defer cancel()
	var got fifoPopped
	returned, err := f.Pop(ctx, func(d []Delta[*corev1.Pod], initial bool) error {
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
func fifoDrainDeltas(t *testing.T, f *DeltaFIFO[*corev1.Pod]) [][]Delta[*corev1.Pod] {
	t.Helper()
	var all [][]Delta[*corev1.Pod]
	for _, p := range fifoDrain(t, f) {
		all = append(all, p.Deltas)
	}
	return all
}

// fifoLogger returns a logger writing to t and a func returning what it
// has logged so far.
func fifoLogger(t *testing.T) (*klog.Logger, func() string) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	return &logger, logger.GetSink().(ktesting.Underlier).GetBuffer().String
}

// fifoCheckLog fails the test unless the log contains want, or is empty
// when want is empty.
func fifoCheckLog(t *testing.T, log, want string) {
	t.Helper()
	if (want == "" && log != "") || !strings.Contains(log, want) {
		t.Errorf("log %q, want it to contain %q", log, want)
	}
}

// fifoWaitForBlockedPops returns once n goroutines wait in DeltaFIFO.Pop,
// so that a test exercises the wake-up of waiting Pops.
func fifoWaitForBlockedPops(t *testing.T, n int) {
	t.Helper()
	buf := make([]byte, 1<<20)
	Eventually(t, fmt.Sprintf("%d goroutines blocked in Pop", n), func() bool {
		stacks := string(buf[:runtime.Stack(buf, true)])
		return strings.Count(stacks, "sync.(*Cond).Wait") >= n && strings.Count(stacks, "DeltaFIFO[...]).Pop(") >= n
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
	return Delta[*corev1.Pod]{Type: DeltaDeleted, Object: p, FinalStateUnknown: true}
}

func fifoDelta(t DeltaType, p *corev1.Pod) Delta[*corev1.Pod] {
	return Delta[*corev1.Pod]{Type: t, Object: p}
}

func TestDeltaFIFOConcurrentProducersKeepTheirOrder(t *testing.T) {
	t.Cleanup(ExpectNoGoroutineLeak(t))
	f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{})
	const amount = 500
	done := make(chan struct{}, 2)
	for _, producer := range []string{"a", "b"} {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range amount {
				if err := f.Add(NewPod("ns", producer+strconv.Itoa(i), strconv.Itoa(i))); err != nil {
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
		p := newestDelta(d).Object
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
	fifoMust(t, f.Add(NewPod("ns", "foo", "10")))
	fifoMust(t, f.Update(NewPod("ns", "foo", "12")))
	fifoMust(t, f.Delete(NewPod("ns", "foo", "15")))

	if diff := cmp.Diff([]*corev1.Pod{NewPod("ns", "foo", "15")}, f.List()); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ns/foo"}, f.ListKeys()); diff != "" {
		t.Errorf("ListKeys (-want +got):\n%s", diff)
	}
	want := []Delta[*corev1.Pod]{fifoDelta(DeltaAdded, NewPod("ns", "foo", "10")), fifoDelta(DeltaUpdated, NewPod("ns", "foo", "12")), fifoDelta(DeltaDeleted, NewPod("ns", "foo", "15"))}
	got, ok, err := f.Get(NewPod("ns", "foo", ""))
	fifoMust(t, err)
	if diff := cmp.Diff(want, got); !ok || diff != "" {
		t.Errorf("Get: exists %v (-want +got):\n%s", ok, diff)
	}
	if diff := cmp.Diff([][]Delta[*corev1.Pod]{want}, fifoDrainDeltas(t, f)); diff != "" {
		t.Errorf("popped (-want +got):\n%s", diff)
	}
	if _, ok := f.GetByKey("ns/foo"); ok {
		t.Error("popped key still queued")
	}
}

func TestDeltaFIFOGetReturnsACopy(t *testing.T) {
	f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{})
	fifoMust(t, f.Add(NewPod("ns", "foo", "1")))
	got, _ := f.GetByKey("ns/foo")
	got[0].Type = DeltaDeleted
	again, _ := f.GetByKey("ns/foo")
	if diff := cmp.Diff([]Delta[*corev1.Pod]{fifoDelta(DeltaAdded, NewPod("ns", "foo", "1"))}, again); diff != "" {
		t.Errorf("queued deltas changed through a returned copy (-want +got):\n%s", diff)
	}
}

func TestDeltaFIFOKeyKeepsItsPlaceInLine(t *testing.T) {
	f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{})
	fifoMust(t, f.Add(NewPod("ns", "foo", "10")))
	fifoMust(t, f.Add(NewPod("ns", "bar", "1")))
	fifoMust(t, f.Add(NewPod("ns", "foo", "11")))
	fifoMust(t, f.Add(NewPod("ns", "foo", "13")))
	fifoMust(t, f.Add(NewPod("ns", "zab", "30")))
	first := fifoPop(t, f).Deltas
	fifoMust(t, f.Add(NewPod("ns", "foo", "14"))) // foo was popped: it goes to the back
	want := [][]Delta[*corev1.Pod]{
		{fifoDelta(DeltaAdded, NewPod("ns", "foo", "10")), fifoDelta(DeltaAdded, NewPod("ns", "foo", "11")), fifoDelta(DeltaAdded, NewPod("ns", "foo", "13"))},
		{fifoDelta(DeltaAdded, NewPod("ns", "bar", "1"))},
		{fifoDelta(DeltaAdded, NewPod("ns", "zab", "30"))},
		{fifoDelta(DeltaAdded, NewPod("ns", "foo", "14"))},
	}
	if diff := cmp.Diff(want, append([][]Delta[*corev1.Pod]{first}, fifoDrainDeltas(t, f)...)); diff != "" {
		t.Errorf("popped (-want +got):\n%s", diff)
	}
}

func TestDeltaFIFODeleteOfAnUnknownKeyIsIgnored(t *testing.T) {
	tests := []struct {
		name    string
		known   KeyListerGetter[*corev1.Pod]
		want    [][]Delta[*corev1.Pod]
		wantLog string
	}{{
		name: "no known objects",
		want: [][]Delta[*corev1.Pod]{
			{fifoDelta(DeltaAdded, NewPod("ns", "foo", "10"))},
			{fifoDelta(DeltaUpdated, NewPod("ns", "bar", "15"))},
			{fifoDelta(DeltaAdded, NewPod("ns", "qux", "17")), fifoDelta(DeltaDeleted, NewPod("ns", "qux", "18"))},
		},
	}, {
		name:  "baz is known",
		known: fifoKnown{pods: []*corev1.Pod{NewPod("ns", "foo", "5"), NewPod("ns", "bar", "6"), NewPod("ns", "baz", "7")}},
		want: [][]Delta[*corev1.Pod]{
			{fifoDelta(DeltaAdded, NewPod("ns", "foo", "10"))},
			{fifoDelta(DeltaUpdated, NewPod("ns", "bar", "15"))},
			{fifoDelta(DeltaAdded, NewPod("ns", "qux", "17")), fifoDelta(DeltaDeleted, NewPod("ns", "qux", "18"))},
			{fifoDelta(DeltaDeleted, NewPod("ns", "baz", "20"))},
		},
	}, {
		name:    "known objects fail: the deletion is kept",
		known:   fifoKnown{err: errors.New("store unavailable")},
		wantLog: "Looking up a known object failed; queuing its deletion anyway",
		want: [][]Delta[*corev1.Pod]{
			{fifoDelta(DeltaAdded, NewPod("ns", "foo", "10"))},
			{fifoDelta(DeltaUpdated, NewPod("ns", "bar", "15"))},
			{fifoDelta(DeltaAdded, NewPod("ns", "qux", "17")), fifoDelta(DeltaDeleted, NewPod("ns", "qux", "18"))},
			{fifoDelta(DeltaDeleted, NewPod("ns", "baz", "20"))},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logger, log := fifoLogger(t)
			f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{KnownObjects: tt.known, Logger: logger})
			fifoMust(t, f.Add(NewPod("ns", "foo", "10")))
			fifoMust(t, f.Update(NewPod("ns", "bar", "15")))
			fifoMust(t, f.Add(NewPod("ns", "qux", "17")))
			fifoMust(t, f.Delete(NewPod("ns", "qux", "18")))
			fifoMust(t, f.Delete(NewPod("ns", "baz", "20")))
			if diff := cmp.Diff(tt.want, fifoDrainDeltas(t, f)); diff != "" {
				t.Errorf("popped (-want +got):\n%s", diff)
			}
			fifoCheckLog(t, log(), tt.wantLog)
		})
	}
}

func TestDeltaFIFODeduplicatesTrailingDeletions(t *testing.T) {
	foo := func(rv string) *corev1.Pod { return NewPod("ns", "foo", rv) }
	tests := []struct {
		name string
		ops  fifoOp
		want []Delta[*corev1.Pod]
	}{{
		name: "two watched deletions keep the older",
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Add(foo("1")), f.Delete(foo("2")), f.Delete(foo("3")))
		},
		want: []Delta[*corev1.Pod]{fifoDelta(DeltaAdded, foo("1")), fifoDelta(DeltaDeleted, foo("2"))},
	}, {
		name: "a relist deletion after a watched one is dropped",
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Add(foo("1")), f.Delete(foo("2")), f.Replace(nil, "5"))
		},
		want: []Delta[*corev1.Pod]{fifoDelta(DeltaAdded, foo("1")), fifoDelta(DeltaDeleted, foo("2"))},
	}, {
		name: "a watched deletion replaces a relist one",
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Add(foo("1")), f.Replace(nil, "5"), f.Delete(foo("3")))
		},
		want: []Delta[*corev1.Pod]{fifoDelta(DeltaAdded, foo("1")), fifoDelta(DeltaDeleted, foo("3"))},
	}, {
		name: "deletions apart are kept",
		ops: func(f *DeltaFIFO[*corev1.Pod]) error {
			return errors.Join(f.Add(foo("1")), f.Delete(foo("2")), f.Add(foo("3")), f.Delete(foo("4")))
		},
		want: []Delta[*corev1.Pod]{fifoDelta(DeltaAdded, foo("1")), fifoDelta(DeltaDeleted, foo("2")), fifoDelta(DeltaAdded, foo("3")), fifoDelta(DeltaDeleted, foo("4"))},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{})
			fifoMust(t, tt.ops(f))
			if diff := cmp.Diff([][]Delta[*corev1.Pod]{tt.want}, fifoDrainDeltas(t, f)); diff != "" {
				t.Errorf("popped (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeltaFIFOPopAfterClose(t *testing.T) {
	t.Cleanup(ExpectNoGoroutineLeak(t))
	f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{})
	const waiters = 10
	errs := make(chan error, waiters)
	for range waiters {
		go func() {
			_, err := f.Pop(context.Background(), nil)
			errs <- err
		}()
	}
	fifoWaitForBlockedPops(t, waiters)
	f.Close()
	for range waiters {
		if err := <-errs; !errors.Is(err, ErrFIFOClosed) {
			t.Errorf("waiting Pop after Close: got %v, want ErrFIFOClosed", err)
		}
	}
	if !f.IsClosed() {
		t.Error("IsClosed() = false after Close")
	}

	// A closed queue still accepts writes and hands out what it holds.
	fifoMust(t, f.Add(NewPod("ns", "foo", "1")))
	if diff := cmp.Diff([][]Delta[*corev1.Pod]{{fifoDelta(DeltaAdded, NewPod("ns", "foo", "1"))}}, fifoDrainDeltas(t, f)); diff != "" {
		t.Errorf("popped after Close (-want +got):\n%s", diff)
	}
	if _, err := f.Pop(context.Background(), nil); !errors.Is(err, ErrFIFOClosed) {
		t.Errorf("Pop of an empty closed queue: got %v, want ErrFIFOClosed", err)
	}
}

func TestDeltaFIFOPopStopsWithItsContext(t *testing.T) {
	t.Cleanup(ExpectNoGoroutineLeak(t))
	f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{})
	fifoMust(t, f.Add(NewPod("ns", "foo", "1")))

	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Pop(done, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Pop with a done context: got %v, want context.Canceled", err)
	}
	if diff := cmp.Diff([]string{"ns/foo"}, f.ListKeys()); diff != "" {
		t.Errorf("Pop with a done context removed a key (-want +got):\n%s", diff)
	}
	fifoDrain(t, f)

	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error)
	go func() {
		_, err := f.Pop(ctx, nil)
		result <- err
	}()
	fifoWaitForBlockedPops(t, 1)
	cancel()
	select {
	case err := <-result:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("waiting Pop whose context ends: got %v, want context.Canceled", err)
		}
	case <-time.After(plTimeout):
		t.Fatal("a waiting Pop did not return when its context ended")
	}
}

func TestDeltaFIFOProcessErrorAndRequeue(t *testing.T) {
	f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{})
	fifoMust(t, f.Add(NewPod("ns", "foo", "1")))
	fifoMust(t, f.Add(NewPod("ns", "bar", "1")))
	failure := errors.New("handler failed")
	popped, err := f.Pop(context.Background(), func([]Delta[*corev1.Pod], bool) error { return failure })
	if !errors.Is(err, failure) {
		t.Fatalf("Pop: got %v, want the process error", err)
	}
	want := []Delta[*corev1.Pod]{fifoDelta(DeltaAdded, NewPod("ns", "foo", "1"))}
	if diff := cmp.Diff(want, popped); diff != "" {
		t.Errorf("Pop returned (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ns/bar"}, f.ListKeys()); diff != "" {
		t.Errorf("a failed pop is not requeued by itself (-want +got):\n%s", diff)
	}

	fifoMust(t, f.AddIfNotPresent(popped))
	if diff := cmp.Diff([]string{"ns/bar", "ns/foo"}, f.ListKeys()); diff != "" {
		t.Errorf("AddIfNotPresent queues at the back (-want +got):\n%s", diff)
	}
	// The key is queued now: older deltas cannot overwrite it.
	fifoMust(t, f.AddIfNotPresent([]Delta[*corev1.Pod]{fifoDelta(DeltaAdded, NewPod("ns", "foo", "0"))}))
	wantAll := [][]Delta[*corev1.Pod]{{fifoDelta(DeltaAdded, NewPod("ns", "bar", "1"))}, want}
	if diff := cmp.Diff(wantAll, fifoDrainDeltas(t, f)); diff != "" {
		t.Errorf("popped (-want +got):\n%s", diff)
	}
}

func TestDeltaFIFOTransformsEachObjectOnce(t *testing.T) {
	// The transform counts its calls on the object; a final-state-unknown
	// record or a second call would show as a count other than 1.
	transform := func(p *corev1.Pod) (*corev1.Pod, error) {
		n, _ := strconv.Atoi(p.Annotations["transforms"])
		p.Annotations = map[string]string{"transforms": strconv.Itoa(n + 1)}
		return p, nil
	}
	transformed := func(name, rv string) *corev1.Pod {
		p := NewPod("ns", name, rv)
		p.Annotations = map[string]string{"transforms": "1"}
		return p
	}
	known := fifoKnown{pods: []*corev1.Pod{transformed("old", "1")}}
	f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{Transform: transform, KnownObjects: known})
	fifoMust(t, f.Add(NewPod("ns", "foo", "10")))
	fifoMust(t, f.Add(NewPod("ns", "bar", "11")))
	fifoMust(t, f.Update(NewPod("ns", "foo", "12")))
	fifoMust(t, f.Delete(NewPod("ns", "foo", "15")))
	fifoMust(t, f.Replace([]*corev1.Pod{NewPod("ns", "baz", "1")}, ""))
	fifoMust(t, f.Add(NewPod("ns", "bar", "16")))
	fifoMust(t, f.Replace(nil, ""))
	fifoMust(t, f.Resync())
	want := [][]Delta[*corev1.Pod]{
		{fifoDelta(DeltaAdded, transformed("foo", "10")), fifoDelta(DeltaUpdated, transformed("foo", "12")), fifoDelta(DeltaDeleted, transformed("foo", "15"))},
		{fifoDelta(DeltaAdded, transformed("bar", "11")), fifoFSU(transformed("bar", "11")), fifoDelta(DeltaAdded, transformed("bar", "16")), fifoFSU(transformed("bar", "16"))},
		{fifoDelta(DeltaSync, transformed("baz", "1")), fifoFSU(transformed("baz", "1"))},
		{fifoFSU(transformed("old", "1"))},
	}
	if diff := cmp.Diff(want, fifoDrainDeltas(t, f)); diff != "" {
		t.Errorf("popped (-want +got):\n%s", diff)
	}
	fifoMust(t, f.Resync())
	if diff := cmp.Diff([][]Delta[*corev1.Pod]{{fifoDelta(DeltaSync, transformed("old", "1"))}}, fifoDrainDeltas(t, f)); diff != "" {
		t.Errorf("resync (-want +got):\n%s", diff)
	}
}

func TestDeltaFIFOTransformErrors(t *testing.T) {
	failure := errors.New("cannot transform")
	transform := func(p *corev1.Pod) (*corev1.Pod, error) {
		switch p.Name {
		case "bad":
			return nil, failure
		case "lost":
			return nil, nil
		}
		return p, nil
	}
	f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{Transform: transform})
	if err := f.Add(NewPod("ns", "bad", "1")); !errors.Is(err, failure) {
		t.Errorf("Add: got %v, want the transform's error", err)
	}
	if err := f.Update(NewPod("ns", "lost", "1")); !errors.Is(err, errFIFONilObject) {
		t.Errorf("Update: got %v, want an error about a nil object", err)
	}
	// Replace is all or nothing.
	if err := f.Replace([]*corev1.Pod{NewPod("ns", "good", "1"), NewPod("ns", "bad", "1")}, "1"); !errors.Is(err, failure) {
		t.Errorf("Replace: got %v, want the transform's error", err)
	}
	if keys := f.ListKeys(); len(keys) != 0 {
		t.Errorf("failed writes queued %v", keys)
	}
	if f.HasSynced() {
		t.Error("a failed Replace counted as the first list")
	}
}

func TestDeltaFIFORejectsObjectsWithoutAKey(t *testing.T) {
	unnamed := NewPod("ns", "", "1")
	f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{})
	_, _, getErr := f.Get(unnamed)
	checks := []struct {
		op   string
		err  error
		want error
	}{
		{"Add nil", f.Add(nil), errFIFONilObject},
		{"Add unnamed", f.Add(unnamed), errFIFOUnnamedObject},
		{"Update unnamed", f.Update(unnamed), errFIFOUnnamedObject},
		{"Delete nil", f.Delete(nil), errFIFONilObject},
		{"Delete unnamed", f.Delete(unnamed), errFIFOUnnamedObject},
		{"Replace with an unnamed item", f.Replace([]*corev1.Pod{NewPod("ns", "ok", "1"), unnamed}, "1"), errFIFOUnnamedObject},
		{"AddIfNotPresent empty", f.AddIfNotPresent(nil), errFIFOEmptyDeltas},
		{"AddIfNotPresent unnamed", f.AddIfNotPresent([]Delta[*corev1.Pod]{fifoDelta(DeltaAdded, unnamed)}), errFIFOUnnamedObject},
		{"Get unnamed", getErr, errFIFOUnnamedObject},
	}
	for _, c := range checks {
		if !errors.Is(c.err, c.want) {
			t.Errorf("%s: got %v, want %v", c.op, c.err, c.want)
		}
	}
	if keys := f.ListKeys(); len(keys) != 0 {
		t.Errorf("rejected objects were queued: %v", keys)
	}
}

func TestDeltaFIFOBookmarkQueuesNothing(t *testing.T) {
	f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{})
	fifoMust(t, f.Bookmark("42"))
	if keys := f.ListKeys(); len(keys) != 0 || f.HasSynced() {
		t.Errorf("Bookmark queued %v or synced the queue (%v)", keys, f.HasSynced())
	}
}

// TestDeltaFIFOWithAnIndexer runs the classic informer loop: the consumer
// applies each pop to the Indexer the queue uses as known objects.
func TestDeltaFIFOWithAnIndexer(t *testing.T) {
	store := NewIndexer[*corev1.Pod](nil)
	f := NewDeltaFIFO(DeltaFIFOOptions[*corev1.Pod]{KnownObjects: store, EmitDeltaTypeReplaced: true})
	apply := func(deltas []Delta[*corev1.Pod], _ bool) error {
		for _, d := range deltas {
			if d.Type == DeltaDeleted {
				if err := store.Delete(d.Object); err != nil {
					return err
				}
			} else if err := store.Update(d.Object); err != nil {
				return err
			}
		}
		return nil
	}
	popAll := func() [][]Delta[*corev1.Pod] {
		var all [][]Delta[*corev1.Pod]
		for len(f.ListKeys()) > 0 {
			d, err := f.Pop(context.Background(), apply)
			fifoMust(t, err)
			all = append(all, d)
		}
		return all
	}

	fifoMust(t, f.Replace([]*corev1.Pod{NewPod("ns", "a", "1"), NewPod("ns", "b", "1"), NewPod("ns", "c", "1")}, "1"))
	popAll()
	fifoMust(t, f.Delete(NewPod("ns", "a", "2")))
	fifoMust(t, f.Delete(NewPod("ns", "unknown", "2")))
	fifoMust(t, f.Update(NewPod("ns", "b", "3")))
	fifoMust(t, f.Replace([]*corev1.Pod{NewPod("ns", "b", "4")}, "4"))
	fifoMust(t, f.Resync())
	want := [][]Delta[*corev1.Pod]{
		{fifoDelta(DeltaDeleted, NewPod("ns", "a", "2"))},
		{fifoDelta(DeltaUpdated, NewPod("ns", "b", "3")), fifoDelta(DeltaReplaced, NewPod("ns", "b", "4"))},
		{fifoFSU(NewPod("ns", "c", "1"))},
	}
	if diff := cmp.Diff(want, popAll()); diff != "" {
		t.Errorf("popped (-want +got):\n%s", diff)
	}
	fifoMust(t, f.Resync())
	if diff := cmp.Diff([][]Delta[*corev1.Pod]{{fifoDelta(DeltaSync, NewPod("ns", "b", "4"))}}, popAll()); diff != "" {
		t.Errorf("resync (-want +got):\n%s", diff)
	}
}
