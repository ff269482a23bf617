package informer

import (
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
)

func noteAdd(p *corev1.Pod, initial bool) notification[*corev1.Pod] {
	return notification[*corev1.Pod]{kind: notifyAdd, obj: p, initial: initial}
}
func noteUpdate(old, p *corev1.Pod) notification[*corev1.Pod] {
	return notification[*corev1.Pod]{kind: notifyUpdate, old: old, obj: p,
		resync: old.ResourceVersion == p.ResourceVersion}
}
func noteDelete(p *corev1.Pod, fsu bool) notification[*corev1.Pod] {
	return notification[*corev1.Pod]{kind: notifyDelete, obj: p, finalStateUnknown: fsu}
}

// startTestListener starts l with a test logger and stops it at the end of
// the test, checking that its goroutine exits.
func startTestListener(t *testing.T, l *listener[*corev1.Pod]) {
	t.Helper()
	var wg sync.WaitGroup
	logger, _ := ktesting.NewTestContext(t)
	l.start(&wg, logger, nil)
	t.Cleanup(func() {
		l.shutdown()
		wg.Wait()
		select {
		case <-l.finished:
		default:
			t.Error("listener not finished after its goroutine exited")
		}
	})
}

func synced() bool { return true }

// enqueueAll hands notes to l as the dispatcher does.
func enqueueAll(l *listener[*corev1.Pod], notes []notification[*corev1.Pod]) {
	l.enqueue(notes, summarize(notes))
}

func TestListenerDeliversInOrderAcrossBatches(t *testing.T) {
	rec := newPLRecorder()
	l := newListener[*corev1.Pod](rec, "rec", HandlerOptions{}, synced)
	var notes []notification[*corev1.Pod]
	var want []plEvent
	for i := range 3 * deliveryBatch {
		p := NewPod("ns", "p"+strconv.Itoa(i%7), strconv.Itoa(i))
		notes = append(notes, noteAdd(p, false))
		want = append(want, plAdd(KeyOf(p), p.ResourceVersion, false))
	}
	enqueueAll(l, notes[:100])
	startTestListener(t, l)
	enqueueAll(l, notes[100:])
	rec.expect(t, want...)
	Eventually(t, "delivered counter", func() bool { return l.stats().Delivered == int64(len(want)) })
	if diff := cmp.Diff(HandlerStats{Delivered: int64(len(want))}, l.stats()); diff != "" {
		t.Fatalf("stats (-want +got):\n%s", diff)
	}
}

func TestListenerGetsResyncUpdatesOnlyWhenDue(t *testing.T) {
	rec := newPLRecorder()
	l := newListener[*corev1.Pod](rec, "rec", HandlerOptions{}, synced)
	a1, a2 := NewPod("ns", "a", "1"), NewPod("ns", "a", "2")
	l.resync.due.Store(false)
	enqueueAll(l, []notification[*corev1.Pod]{noteUpdate(a1, a1), noteUpdate(a1, a2)})
	l.resync.due.Store(true)
	enqueueAll(l, []notification[*corev1.Pod]{noteUpdate(a2, a2)})
	startTestListener(t, l)
	rec.expect(t, plUpdate("ns/a", "1", "2"), plUpdate("ns/a", "2", "2"))
}

func TestListenerRecoversPanicsAndStillSyncs(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	rec := newPLRecorder()
	rec.hook = func(e plEvent) {
		if e.Key == "ns/boom" {
			panic("fake panic")
		}
	}
	l := newListener[*corev1.Pod](rec, "panicky", HandlerOptions{Logger: &logger}, synced)
	enqueueAll(l, []notification[*corev1.Pod]{
		noteAdd(NewPod("ns", "a", "1"), true),
		noteAdd(NewPod("ns", "boom", "2"), true),
		noteAdd(NewPod("ns", "b", "3"), true),
		noteDelete(NewPod("ns", "boom", "4"), false),
		noteAdd(NewPod("ns", "c", "5"), false),
	})
	if l.hasSynced() {
		t.Fatal("synced before the initial adds were delivered")
	}
	startTestListener(t, l)
	rec.expect(t, plAdd("ns/a", "1", true), plAdd("ns/b", "3", true), plAdd("ns/c", "5", false))
	Eventually(t, "listener synced", l.hasSynced)
	Eventually(t, "all delivered", func() bool { return l.stats().Delivered == 5 })
	if diff := cmp.Diff(HandlerStats{Delivered: 5, Panics: 2}, l.stats()); diff != "" {
		t.Fatalf("stats (-want +got):\n%s", diff)
	}
	var panics []string
	for _, entry := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		if entry.Message != "Event handler panicked" {
			continue
		}
		kv := map[string]any{}
		for i := 0; i+1 < len(entry.ParameterKVList); i += 2 {
			kv[entry.ParameterKVList[i].(string)] = entry.ParameterKVList[i+1]
		}
		panics = append(panics, kv["handler"].(string)+" "+kv["notification"].(string)+" "+entry.Err.Error())
	}
	// The second panic comes within panicLogInterval of the first: it is
	// counted, not logged.
	if diff := cmp.Diff([]string{"panicky add fake panic"}, panics); diff != "" {
		t.Fatalf("panic logs (-want +got):\n%s", diff)
	}
}

// panicLogLine is what TestListenerRateLimitsPanicLogs compares of a log
// line about panics.
type panicLogLine struct {
	Message  string
	Panics   int64 // the "panics" value; 1 for the first line, which has none
	HasStack bool
}

// TestListenerRateLimitsPanicLogs checks that a handler panicking on every
// notification writes its first panic with a stack and then one line per
// panicLogInterval with the count since the last line, the rest when it
// stops, while HandlerStats.Panics counts every panic.
func TestListenerRateLimitsPanicLogs(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(0)))
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rec := newPLRecorder()
	rec.hook = func(plEvent) { panic("fake panic") }
	l := newListener[*corev1.Pod](rec, "storm", HandlerOptions{Logger: &logger}, synced)
	l.panics.clock = clk
	var wg sync.WaitGroup
	l.start(&wg, logger, nil)
	const rounds, perRound = 3, 300
	for round := range rounds {
		notes := make([]notification[*corev1.Pod], perRound)
		for i := range notes {
			notes[i] = noteAdd(NewPod("ns", "p"+strconv.Itoa(round*perRound+i), "1"), false)
		}
		enqueueAll(l, notes)
		want := int64((round + 1) * perRound)
		Eventually(t, "round delivered", func() bool { return l.stats().Delivered == want })
		clk.Step(panicLogInterval)
	}
	l.shutdown()
	wg.Wait()
	if diff := cmp.Diff(HandlerStats{Delivered: rounds * perRound, Panics: rounds * perRound}, l.stats()); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	var got []panicLogLine
	for _, entry := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		line := panicLogLine{Message: entry.Message, Panics: 1}
		for i := 0; i+1 < len(entry.ParameterKVList); i += 2 {
			switch entry.ParameterKVList[i] {
			case "panics":
				line.Panics = entry.ParameterKVList[i+1].(int64)
			case "stack":
				line.HasStack = true
			}
		}
		got = append(got, line)
	}
	want := []panicLogLine{
		{Message: "Event handler panicked", Panics: 1, HasStack: true},
		{Message: "Event handler keeps panicking", Panics: perRound},
		{Message: "Event handler keeps panicking", Panics: perRound},
		{Message: "Event handler panicked more times before it stopped", Panics: perRound - 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log lines (-want +got):\n%s", diff)
	}
}

func TestListenerCrashOnPanicPropagatesThePanic(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig())
	rec := newPLRecorder()
	rec.hook = func(plEvent) { panic("fake panic") }
	l := newListener[*corev1.Pod](rec, "crashing", HandlerOptions{CrashOnPanic: true, Logger: &logger}, synced)
	l.logger = logger
	var got any
	func() {
		defer func() { got = recover() }()
		l.deliverAll([]notification[*corev1.Pod]{noteAdd(NewPod("ns", "a", "1"), false)})
	}()
	if got != "fake panic" {
		t.Fatalf("recovered %v, want the handler's panic", got)
	}
	if l.stats().Panics != 1 {
		t.Fatalf("panics = %d, want 1", l.stats().Panics)
	}
}

func TestListenerBlockPolicyWaitsForRoomAndLosesNothing(t *testing.T) {
	release := make(chan struct{})
	rec := newPLRecorder()
	rec.hook = func(plEvent) { <-release }
	l := newListener[*corev1.Pod](rec, "slow", HandlerOptions{MaxPending: 2, Overflow: OverflowBlock}, synced)
	startTestListener(t, l)
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(releaseAll)
	var notes []notification[*corev1.Pod]
	var want []plEvent
	for i := range 10 {
		p := NewPod("ns", "a", strconv.Itoa(i))
		notes = append(notes, noteAdd(p, false))
		want = append(want, plAdd("ns/a", p.ResourceVersion, false))
	}
	enqueued := make(chan struct{})
	go func() {
		defer close(enqueued)
		enqueueAll(l, notes)
	}()
	select {
	case <-enqueued:
		t.Fatal("enqueue of 10 notifications returned while the handler holds them back with MaxPending 2")
	case <-time.After(50 * time.Millisecond):
	}
	if pending := l.stats().Pending; pending > 2 {
		t.Fatalf("pending = %d, want at most MaxPending (2)", pending)
	}
	releaseAll()
	<-enqueued
	rec.expect(t, want...)
}

func TestListenerShutdownReleasesABlockedDispatcher(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	rec := newPLRecorder()
	rec.hook = func(plEvent) { <-release }
	l := newListener[*corev1.Pod](rec, "stuck", HandlerOptions{MaxPending: 1}, synced)
	var wg sync.WaitGroup
	l.start(&wg, klog.Background(), nil)
	enqueued := make(chan struct{})
	go func() {
		defer close(enqueued)
		for i := range 5 {
			enqueueAll(l, []notification[*corev1.Pod]{noteAdd(NewPod("ns", "a", strconv.Itoa(i)), false)})
		}
	}()
	// The handler holds the first notification: the enqueue of the second
	// waits for room.
	Eventually(t, "an enqueue waiting for room", l.buf.roomWanted.Load)
	l.shutdown()
	select {
	case <-enqueued:
	case <-time.After(plTimeout):
		t.Fatal("shutdown did not release the blocked enqueue")
	}
	release <- struct{}{} // let the handler call in progress return
	wg.Wait()
	// The handler call in progress returned; nothing else was delivered and
	// nothing is left pending.
	if diff := cmp.Diff(HandlerStats{Delivered: 1}, l.stats()); diff != "" {
		t.Fatalf("stats after shutdown (-want +got):\n%s", diff)
	}
}

func TestListenerCoalescePolicy(t *testing.T) {
	pod := func(name, rv string) *corev1.Pod { return NewPod("ns", name, rv) }
	// Two fillers reach MaxPending 2, so every later notification is
	// subject to coalescing.
	fillers := []notification[*corev1.Pod]{noteAdd(pod("f1", "1"), false), noteAdd(pod("f2", "1"), false)}
	fillerEvents := []plEvent{plAdd("ns/f1", "1", false), plAdd("ns/f2", "1", false)}
	tests := []struct {
		name      string
		notes     []notification[*corev1.Pod]
		want      []plEvent
		coalesced int64
	}{{
		name:      "add then updates becomes the latest add",
		notes:     []notification[*corev1.Pod]{noteAdd(pod("a", "1"), true), noteUpdate(pod("a", "1"), pod("a", "2")), noteUpdate(pod("a", "2"), pod("a", "3"))},
		want:      []plEvent{plAdd("ns/a", "3", true)},
		coalesced: 2,
	}, {
		name:      "updates merge from the first old state to the last new state",
		notes:     []notification[*corev1.Pod]{noteUpdate(pod("a", "0"), pod("a", "1")), noteUpdate(pod("a", "1"), pod("a", "2"))},
		want:      []plEvent{plUpdate("ns/a", "0", "2")},
		coalesced: 1,
	}, {
		name:      "add then delete cancel out",
		notes:     []notification[*corev1.Pod]{noteAdd(pod("a", "1"), true), noteDelete(pod("a", "2"), false)},
		want:      nil,
		coalesced: 2,
	}, {
		name:      "update then delete becomes the delete",
		notes:     []notification[*corev1.Pod]{noteUpdate(pod("a", "0"), pod("a", "1")), noteDelete(pod("a", "1"), true)},
		want:      []plEvent{plDelete("ns/a", "1", true)},
		coalesced: 1,
	}, {
		name: "a delete is never merged away",
		notes: []notification[*corev1.Pod]{noteDelete(pod("a", "1"), false), noteAdd(pod("a", "2"), false),
			noteUpdate(pod("a", "2"), pod("a", "3"))},
		want:      []plEvent{plDelete("ns/a", "1", false), plAdd("ns/a", "3", false)},
		coalesced: 1,
	}, {
		name: "a merged notification keeps its position",
		notes: []notification[*corev1.Pod]{noteAdd(pod("a", "1"), false), noteAdd(pod("b", "1"), false),
			noteUpdate(pod("a", "1"), pod("a", "2"))},
		want:      []plEvent{plAdd("ns/a", "2", false), plAdd("ns/b", "1", false)},
		coalesced: 1,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := newPLRecorder()
			l := newListener[*corev1.Pod](rec, "coalescing", HandlerOptions{MaxPending: 2, Overflow: OverflowCoalesce}, synced)
			enqueueAll(l, fillers)
			enqueueAll(l, tc.notes) // nothing is delivered yet: the listener has not started
			wantEvents := append(append([]plEvent(nil), fillerEvents...), tc.want...)
			startTestListener(t, l)
			rec.expect(t, wantEvents...)
			Eventually(t, "listener idle", func() bool { return l.stats().Pending == 0 })
			want := HandlerStats{Delivered: int64(len(wantEvents)), Coalesced: tc.coalesced}
			if diff := cmp.Diff(want, l.stats()); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
			if !l.hasSynced() {
				t.Error("not synced although no initial add is pending")
			}
			l.buf.mu.Lock()
			defer l.buf.mu.Unlock()
			if l.buf.latest != nil {
				t.Error("still coalescing after the listener drained")
			}
		})
	}
}

func TestListenerDropsPendingOnShutdown(t *testing.T) {
	rec := newPLRecorder()
	l := newListener[*corev1.Pod](rec, "never-started", HandlerOptions{}, synced)
	var notes []notification[*corev1.Pod]
	for i := range 10 {
		notes = append(notes, noteAdd(NewPod("ns", "a"+strconv.Itoa(i), "1"), false))
	}
	enqueueAll(l, notes)
	if diff := cmp.Diff(HandlerStats{Pending: 10}, l.stats()); diff != "" {
		t.Fatalf("stats before shutdown (-want +got):\n%s", diff)
	}
	l.shutdown()
	l.finish()
	enqueueAll(l, notes) // ignored: the listener stopped
	if diff := cmp.Diff(HandlerStats{Dropped: 10}, l.stats()); diff != "" {
		t.Fatalf("stats after shutdown (-want +got):\n%s", diff)
	}
	<-l.finished
}

func TestListenerBookmarks(t *testing.T) {
	bookmark := notification[*corev1.Pod]{kind: notifyBookmark, obj: &corev1.Pod{}}
	bookmark.obj.ResourceVersion = "5"
	notes := []notification[*corev1.Pod]{
		noteAdd(NewPod("ns", "f1", "1"), false), noteAdd(NewPod("ns", "f2", "1"), false),
		noteAdd(NewPod("ns", "a", "1"), false), bookmark, noteUpdate(NewPod("ns", "a", "1"), NewPod("ns", "a", "2")),
	}
	for _, tc := range []struct {
		name string
		opts HandlerOptions
		want []string
	}{
		// The bookmark keeps its place; the update is merged into the add
		// before it, so the handler still has every change up to 5.
		{"coalescing", HandlerOptions{MaxPending: 2, Overflow: OverflowCoalesce},
			[]string{"add ns/f1@1", "add ns/f2@1", "add ns/a@2", "bookmark 5"}},
		{"unbounded", HandlerOptions{},
			[]string{"add ns/f1@1", "add ns/f2@1", "add ns/a@1", "bookmark 5", "update ns/a@2"}},
	} {
		for _, withFunc := range []bool{true, false} {
			t.Run(tc.name+"/BookmarkFunc "+strconv.FormatBool(withFunc), func(t *testing.T) {
				var mu sync.Mutex
				var got []string
				record := func(s string) {
					mu.Lock()
					defer mu.Unlock()
					got = append(got, s)
				}
				opts := tc.opts
				want := tc.want
				if withFunc {
					opts.BookmarkFunc = func(rv string) { record("bookmark " + rv) }
				} else {
					want = slices.DeleteFunc(slices.Clone(want), func(s string) bool { return strings.HasPrefix(s, "bookmark") })
				}
				l := newListener[*corev1.Pod](ResourceEventHandlerFuncs[*corev1.Pod]{
					AddFunc:    func(p *corev1.Pod, _ bool) { record("add " + KeyOf(p) + "@" + p.ResourceVersion) },
					UpdateFunc: func(_, p *corev1.Pod) { record("update " + KeyOf(p) + "@" + p.ResourceVersion) },
				}, "bookmarks", opts, synced)
				enqueueAll(l, notes) // nothing is delivered yet: the listener has not started
				startTestListener(t, l)
				Eventually(t, "listener idle", func() bool { return l.stats().Pending == 0 })
				mu.Lock()
				defer mu.Unlock()
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("handler calls (-want +got):\n%s", diff)
				}
				if delivered := l.stats().Delivered; delivered != int64(len(want)) {
					t.Errorf("Delivered = %d, want %d", delivered, len(want))
				}
			})
		}
	}
}
