package informer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/kubetyped/informer/informertest"
)

// storeCall is one call received by a recordingStore.
type storeCall struct {
	Op string
	// Keys are the object's key (Add/Update/Delete) or the listed keys in
	// order (Replace).
	Keys []string
	// RV is the object's resource version (Add/Update/Delete) or the given
	// resource version (Replace/Bookmark).
	RV string
}

// recordingStore is a ReflectorStore that records every call and can be
// told to fail calls.
type recordingStore[T Object] struct {
	mu      sync.Mutex
	calls   []storeCall
	fail    map[string][]error // op -> errors for its next calls
	changed chan struct{}
}

var _ ReflectorStore[*corev1.Pod] = (*recordingStore[*corev1.Pod])(nil)

func newRecordingStore[T Object]() *recordingStore[T] {
	return &recordingStore[T]{fail: map[string][]error{}, changed: make(chan struct{})}
}

// failNext makes the next len(errs) calls of op fail with errs.
func (s *recordingStore[T]) failNext(op string, errs ...error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail[op] = append(s.fail[op], errs...)
}

func (s *recordingStore[T]) record(call storeCall) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, call)
	close(s.changed)
	s.changed = make(chan struct{})
	if errs := s.fail[call.Op]; len(errs) > 0 {
		s.fail[call.Op] = errs[1:]
		return errs[0]
	}
	return nil
}

func (s *recordingStore[T]) Add(obj T) error {
	return s.record(storeCall{Op: "add", Keys: []string{KeyOf(obj)}, RV: obj.GetResourceVersion()})
}

func (s *recordingStore[T]) Update(obj T) error {
	return s.record(storeCall{Op: "update", Keys: []string{KeyOf(obj)}, RV: obj.GetResourceVersion()})
}

func (s *recordingStore[T]) Delete(obj T) error {
	return s.record(storeCall{Op: "delete", Keys: []string{KeyOf(obj)}, RV: obj.GetResourceVersion()})
}

func (s *recordingStore[T]) Replace(list []T, resourceVersion string) error {
	keys := []string{}
	for _, obj := range list {
		keys = append(keys, KeyOf(obj))
	}
	return s.record(storeCall{Op: "replace", Keys: keys, RV: resourceVersion})
}

func (s *recordingStore[T]) Resync() error { return s.record(storeCall{Op: "resync"}) }

func (s *recordingStore[T]) Bookmark(resourceVersion string) error {
	return s.record(storeCall{Op: "bookmark", RV: resourceVersion})
}

// waitFor blocks until the store received at least n calls and returns
// them; it fails the test if ctx ends first.
func (s *recordingStore[T]) waitFor(t *testing.T, n int) []storeCall {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		s.mu.Lock()
		if len(s.calls) >= n {
			calls := append([]storeCall(nil), s.calls...)
			s.mu.Unlock()
			return calls
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			s.mu.Lock()
			defer s.mu.Unlock()
			t.Fatalf("waiting for %d store calls, got %+v", n, s.calls)
		}
	}
}

func (s *recordingStore[T]) snapshot() []storeCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]storeCall(nil), s.calls...)
}

// reflectorHarness runs a Reflector on a informertest.FakeListerWatcher and a recording
// store, with a fake clock.
type reflectorHarness struct {
	t      *testing.T
	ctx    context.Context
	lw     *informertest.FakeListerWatcher[*corev1.Pod]
	store  *recordingStore[*corev1.Pod]
	clock  *clocktesting.FakeClock
	r      *Reflector[*corev1.Pod]
	errs   chan error
	stop   func()
	logger klog.Logger
}

// waitForLog waits until message has been logged.
func (h *reflectorHarness) waitForLog(message string) {
	h.t.Helper()
	for {
		for _, entry := range h.logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
			if entry.Message == message {
				return
			}
		}
		select {
		case <-h.ctx.Done():
			h.t.Fatalf("%q was not logged", message)
		case <-time.After(time.Millisecond):
		}
	}
}

// errorLogs returns the messages logged as errors so far.
func (h *reflectorHarness) errorLogs() []string {
	var messages []string
	for _, entry := range h.logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		if entry.Type == ktesting.LogError {
			messages = append(messages, entry.Message)
		}
	}
	return messages
}

// newReflectorHarness builds the harness; lw is configured by the caller
// before start. Watch errors passed to the error handler are collected.
func newReflectorHarness(t *testing.T, opts ReflectorOptions) *reflectorHarness {
	t.Cleanup(ExpectNoGoroutineLeak(t))
	h := &reflectorHarness{
		t:     t,
		lw:    informertest.NewFakeListerWatcher[*corev1.Pod](),
		store: newRecordingStore[*corev1.Pod](),
		clock: clocktesting.NewFakeClock(time.Unix(1_000_000, 0)),
		errs:  make(chan error, 100),
	}
	// Logs go to the test's log (shown on failure or with -v) and to a
	// buffer that tests inspect.
	h.logger = ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx, cancel := context.WithTimeout(klog.NewContext(context.Background(), h.logger), time.Minute)
	h.ctx = ctx
	t.Cleanup(cancel)
	if opts.Clock == nil {
		opts.Clock = h.clock
	}
	if opts.WatchErrorHandler == nil {
		opts.WatchErrorHandler = func(_ context.Context, err error) { h.errs <- err }
	}
	h.r = NewReflector[*corev1.Pod](h.lw, h.store, opts)
	return h
}

// start runs the reflector until the test ends or stop is called.
func (h *reflectorHarness) start() {
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.r.Run(ctx)
	}()
	h.stop = func() {
		cancel()
		<-done
	}
	h.t.Cleanup(h.stop)
}

// calls waits for n lister-watcher calls and returns them with the random
// watch timeout checked and cleared, so that whole sequences compare.
func (h *reflectorHarness) calls(n int) []informertest.FakeCall {
	h.t.Helper()
	calls, err := h.lw.WaitForCalls(h.ctx, n)
	if err != nil {
		h.t.Fatal(err)
	}
	for i := range calls {
		if calls[i].Verb != "watch" {
			continue
		}
		timeout := calls[i].Options.TimeoutSeconds
		if timeout == nil || *timeout < 300 || *timeout >= 600 {
			h.t.Errorf("call %d: watch timeout %v, want [300s, 600s)", i, timeout)
		}
		calls[i].Options.TimeoutSeconds = nil
	}
	return calls
}

// waitForTimers waits until n timers wait on the fake clock.
func (h *reflectorHarness) waitForTimers(n int) {
	h.t.Helper()
	for h.clock.Waiters() < n {
		select {
		case <-h.ctx.Done():
			h.t.Fatalf("waiting for %d timers, have %d", n, h.clock.Waiters())
		case <-time.After(time.Millisecond):
		}
	}
}

func (h *reflectorHarness) must(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

// skipBackoff lets the pending backoff (at most a jittered 30 s) elapse.
func (h *reflectorHarness) skipBackoff() {
	h.t.Helper()
	h.waitForTimers(1)
	h.clock.Step(time.Minute)
}

// handledError returns the next error passed to the WatchErrorHandler.
func (h *reflectorHarness) handledError() error {
	h.t.Helper()
	select {
	case err := <-h.errs:
		return err
	case <-h.ctx.Done():
		h.t.Fatal("no error reached the WatchErrorHandler")
		return nil
	}
}

// noHandledErrors fails the test if the WatchErrorHandler was called.
func (h *reflectorHarness) noHandledErrors() {
	h.t.Helper()
	select {
	case err := <-h.errs:
		h.t.Errorf("unexpected error passed to the WatchErrorHandler: %v", err)
	default:
	}
}

func listCall(rv string, limit int64, cont string) informertest.FakeCall {
	return informertest.FakeCall{Verb: "list", Options: metav1.ListOptions{ResourceVersion: rv, Limit: limit, Continue: cont}}
}

func watchCall(rv string) informertest.FakeCall {
	return informertest.FakeCall{Verb: "watch", Options: metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true}}
}

func streamCall(rv string) informertest.FakeCall {
	return informertest.FakeCall{Verb: "watch", Options: metav1.ListOptions{
		ResourceVersion:      rv,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		SendInitialEvents:    ptr.To(true),
		AllowWatchBookmarks:  true,
	}}
}

func diffOrFail(t *testing.T, what string, want, got any, opts ...cmp.Option) {
	t.Helper()
	if diff := cmp.Diff(want, got, opts...); diff != "" {
		t.Fatalf("%s (-want +got):\n%s", what, diff)
	}
}

func podKeys(pods ...*corev1.Pod) []string {
	keys := []string{}
	for _, p := range pods {
		keys = append(keys, KeyOf(p))
	}
	return keys
}

func TestReflectorListThenWatch(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
	a, b := NewPod("ns", "a", "10"), NewPod("ns", "b", "11")
	h.lw.SetList("12", a, b)
	h.start()

	h.must(h.lw.Add(h.ctx, NewPod("ns", "c", "13")))
	h.must(h.lw.Modify(h.ctx, NewPod("ns", "a", "14")))
	h.must(h.lw.Delete(h.ctx, NewPod("ns", "b", "15")))
	h.must(h.lw.Bookmark(h.ctx, "16"))

	got := h.store.waitFor(t, 5)
	diffOrFail(t, "store calls", []storeCall{
		{Op: "replace", Keys: podKeys(a, b), RV: "12"},
		{Op: "add", Keys: []string{"ns/c"}, RV: "13"},
		{Op: "update", Keys: []string{"ns/a"}, RV: "14"},
		{Op: "delete", Keys: []string{"ns/b"}, RV: "15"},
		{Op: "bookmark", RV: "16"},
	}, got)
	diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 500, ""), watchCall("12")}, h.calls(2))
	// The reflector records a resource version once the store has taken
	// the event: wait for it.
	Eventually(t, `LastSyncResourceVersion() == "16"`, func() bool { return h.r.LastSyncResourceVersion() == "16" })
	h.stop()
	diffOrFail(t, "stats", ReflectorStats{}, h.r.Stats())
}

func ExampleNewReflector() {
	lw := informertest.NewFakeListerWatcher[*corev1.Pod]()
	lw.SetList("5", NewPod("default", "web", "4"))
	store := newRecordingStore[*corev1.Pod]()
	r := NewReflector[*corev1.Pod](lw, store, ReflectorOptions{Name: "pods"})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.Run(ctx)
	}()
	// The fake serves its list as a streaming list; wait for the store to
	// receive it.
	<-storeChanged(store)
	cancel()
	<-done
	fmt.Println(store.snapshot()[0].Op, store.snapshot()[0].Keys, r.LastSyncResourceVersion())
	// Output: replace [default/web] 5
}

// storeChanged returns a channel closed once the store got a call.
func storeChanged[T Object](s *recordingStore[T]) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.calls) > 0 {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	return s.changed
}

func TestReflectorListErrorGoesToHandlerAndRetriesAfterBackoff(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
	h.lw.SetList("7", NewPod("ns", "a", "1"))
	boom := apierrors.NewInternalError(errors.New("boom"))
	h.lw.FailNextList(boom)
	h.start()
	if err := h.handledError(); !errors.Is(err, boom) {
		t.Fatalf("handled error = %v, want one wrapping %v", err, boom)
	}
	h.skipBackoff()
	diffOrFail(t, "store calls", []storeCall{{Op: "replace", Keys: []string{"ns/a"}, RV: "7"}}, h.store.waitFor(t, 1))
	diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 500, ""), listCall("0", 500, ""), watchCall("7")}, h.calls(3))
}

func TestReflectorStoreErrors(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
	h.lw.SetList("7", NewPod("ns", "a", "1"))
	rejected := errors.New("rejected")
	h.store.failNext("replace", rejected)
	h.store.failNext("add", rejected)
	h.start()
	// A failed Replace fails the cycle; the reflector backs off and lists
	// again.
	if err := h.handledError(); !errors.Is(err, rejected) {
		t.Fatalf("handled error = %v, want %v", err, rejected)
	}
	h.skipBackoff()
	// A failed Add loses that event only (as in client-go); it is counted.
	h.must(h.lw.Add(h.ctx, NewPod("ns", "b", "8")))
	h.must(h.lw.Add(h.ctx, NewPod("ns", "c", "9")))
	diffOrFail(t, "store calls", []storeCall{
		{Op: "replace", Keys: []string{"ns/a"}, RV: "7"},
		{Op: "replace", Keys: []string{"ns/a"}, RV: "7"},
		{Op: "add", Keys: []string{"ns/b"}, RV: "8"},
		{Op: "add", Keys: []string{"ns/c"}, RV: "9"},
	}, h.store.waitFor(t, 4))
	diffOrFail(t, "stats", ReflectorStats{StoreErrors: 1}, h.r.Stats())
	diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 500, ""), listCall("0", 500, ""), watchCall("7")}, h.calls(3))
}

func TestReflectorRunTwiceConcurrently(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
	h.lw.SetList("7")
	h.start()
	h.calls(2)
	h.r.Run(h.ctx) // returns at once: already running
	h.must(h.lw.Add(h.ctx, NewPod("ns", "a", "8")))
	diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 500, ""), watchCall("7")}, h.calls(2))
	if n := len(h.lw.Calls()); n != 2 {
		t.Errorf("the second Run made calls: %d calls in all", n)
	}
}

// nilListerWatcher returns neither results nor errors.
type nilListerWatcher struct{ listed bool }

func (lw *nilListerWatcher) List(context.Context, metav1.ListOptions) (*ListResult[*corev1.Pod], error) {
	if !lw.listed {
		lw.listed = true
		return nil, nil
	}
	return &ListResult[*corev1.Pod]{ResourceVersion: "1"}, nil
}

func (lw *nilListerWatcher) Watch(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return nil, nil
}

func TestReflectorNilResultsAreErrors(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{})
	h.r = NewReflector[*corev1.Pod](&nilListerWatcher{}, h.store, ReflectorOptions{
		Clock:             h.clock,
		WatchErrorHandler: func(_ context.Context, err error) { h.errs <- err },
	})
	h.start()
	if err := h.handledError(); !errors.Is(err, errNilListResult) {
		t.Fatalf("nil list: handled %v, want %v", err, errNilListResult)
	}
	h.skipBackoff()
	// The streaming list falls back to a list, then the watch fails.
	if err := h.handledError(); !errors.Is(err, errNilWatch) {
		t.Fatalf("nil watch: handled %v, want %v", err, errNilWatch)
	}
	diffOrFail(t, "store calls", []storeCall{{Op: "replace", Keys: []string{}, RV: "1"}}, h.store.waitFor(t, 1))
}

func TestDefaultWatchErrorHandler(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true), ktesting.Verbosity(10)))
	ctx := klog.NewContext(t.Context(), logger)
	for _, err := range []error{
		apierrors.NewResourceExpired("too old"),
		io.EOF,
		io.ErrUnexpectedEOF,
		errors.New("boom"),
	} {
		DefaultWatchErrorHandler(ctx, err)
	}
	type entry struct {
		Type      ktesting.LogType
		Verbosity int
		Message   string
	}
	var got []entry
	for _, e := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		got = append(got, entry{e.Type, e.Verbosity, e.Message})
	}
	diffOrFail(t, "log entries", []entry{
		{ktesting.LogInfo, 4, "Watch closed"},
		{ktesting.LogInfo, 1, "Watch closed with unexpected EOF"},
		{ktesting.LogError, 0, "Failed to watch"},
	}, got)
}

// blockingListLW is a FakeListerWatcher whose List calls each signal
// listing when they start and wait for release before answering.
type blockingListLW struct {
	*informertest.FakeListerWatcher[*corev1.Pod]
	listing, release chan struct{}
}

func (b *blockingListLW) List(ctx context.Context, options metav1.ListOptions) (*ListResult[*corev1.Pod], error) {
	b.listing <- struct{}{}
	select {
	case <-b.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return b.FakeListerWatcher.List(ctx, options)
}

func TestRelistRequestedBeforeAListIsServedByIt(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
	h.lw.SetList("1", NewPod("ns", "a", "1"))
	h.r.requestRelist()
	h.start()
	h.store.waitFor(t, 1)
	// Checked before the watch starts, which would act on a pending request.
	if n := len(h.r.relist); n != 0 {
		t.Errorf("%d relist requests pending after the list that served them", n)
	}
	h.must(h.lw.Add(h.ctx, NewPod("ns", "b", "2")))
	diffOrFail(t, "store calls", []storeCall{
		{Op: "replace", Keys: []string{"ns/a"}, RV: "1"},
		{Op: "add", Keys: []string{"ns/b"}, RV: "2"},
	}, h.store.waitFor(t, 2))
	diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 500, ""), watchCall("1")}, h.calls(2))
}

func TestRelistRequestedDuringAListListsOnceMore(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
	h.lw.SetList("1", NewPod("ns", "a", "1"))
	lw := &blockingListLW{FakeListerWatcher: h.lw, listing: make(chan struct{}), release: make(chan struct{})}
	h.r = NewReflector[*corev1.Pod](lw, h.store, ReflectorOptions{Clock: h.clock, DisableWatchList: true})
	h.start()
	<-lw.listing
	// The list in progress may have started before the request: it does not
	// serve it, one more list does.
	h.r.requestRelist()
	lw.release <- struct{}{}
	h.store.waitFor(t, 1)
	h.lw.SetList("2", NewPod("ns", "a", "2"))
	h.waitForTimers(1) // the pause before the next cycle
	h.clock.Step(time.Minute)
	<-lw.listing
	lw.release <- struct{}{}
	h.must(h.lw.Add(h.ctx, NewPod("ns", "b", "3")))
	diffOrFail(t, "store calls", []storeCall{
		{Op: "replace", Keys: []string{"ns/a"}, RV: "1"},
		{Op: "replace", Keys: []string{"ns/a"}, RV: "2"},
		{Op: "add", Keys: []string{"ns/b"}, RV: "3"},
	}, h.store.waitFor(t, 3))
	diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 500, ""), watchCall("1"), listCall("1", 0, ""), watchCall("2")}, h.calls(4))
}

func TestRelistRequestedDuringAStreamingListStreamsOnceMore(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{})
	h.lw.SetManualInitialEvents(true)
	h.start()
	h.waitForTimers(1) // the stream's watchdog: its events are being read
	// The stream goes on to the end of its initial events; then one more.
	h.r.requestRelist()
	h.must(h.lw.Add(h.ctx, NewPod("ns", "a", "1")))
	h.must(h.lw.EndInitialEvents(h.ctx, "2"))
	h.store.waitFor(t, 1)
	h.waitForTimers(1) // the pause before the next cycle
	h.clock.Step(time.Minute)
	h.calls(2)
	h.must(h.lw.Add(h.ctx, NewPod("ns", "a", "3")))
	h.must(h.lw.EndInitialEvents(h.ctx, "3"))
	diffOrFail(t, "store calls", []storeCall{
		{Op: "replace", Keys: []string{"ns/a"}, RV: "2"},
		{Op: "replace", Keys: []string{"ns/a"}, RV: "3"},
	}, h.store.waitFor(t, 2))
	diffOrFail(t, "calls", []informertest.FakeCall{streamCall(""), streamCall("2")}, h.calls(2))
}
