package informertest

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubetyped/informer/internal/listwatch"
)

// object is informer.Object: a pointer to a Kubernetes API type. It is
// spelled out because this package must not import the informer package,
// whose own tests use it.
type object interface {
	comparable
	metav1.Object
	runtime.Object
}

// FakeCall is one request received by a [FakeListerWatcher].
type FakeCall struct {
	// Verb is "list" or "watch".
	Verb string
	// Options are the options the request was made with.
	Options metav1.ListOptions
}

// FakeListerWatcher is a scripted, in-memory informer.ListerWatcher for tests and
// benchmarks. It serves a list set with SetList, fails calls on demand,
// delivers the events pushed with Send (and its typed helpers) to the open
// watch, and records every call.
//
// All methods are safe for concurrent use. Its watches start no goroutine.
// Events pushed while no watch is open wait for the next watch; an event
// accepted by a watch that its consumer then stops without reading it is
// lost, as with a real API server.
//
// A watch with SendInitialEvents=true (a streaming list) is first fed an Added
// event per listed object and the bookmark that ends the initial events,
// unless SetManualInitialEvents(true) was called.
type FakeListerWatcher[T object] struct {
	mu              sync.Mutex
	items           []T
	resourceVersion string
	paginate        bool
	watchBuffer     int
	manualInitial   bool
	watchListOff    bool
	listErrs        []error
	watchErrs       []error
	calls           []FakeCall
	current         *fakeWatch // the most recent watch, nil once it has ended
	// changed is closed and replaced whenever calls or current change, so
	// that waiters can block without polling.
	changed chan struct{}
}

// NewFakeListerWatcher returns a FakeListerWatcher with an empty list at
// resource version "".
func NewFakeListerWatcher[T object]() *FakeListerWatcher[T] {
	return &FakeListerWatcher[T]{changed: make(chan struct{})}
}

// SetList sets what List returns (and what a streaming list sends): items
// at resourceVersion. The fake keeps the slice; the items are shared with
// the consumer and must not be modified afterwards.
func (f *FakeListerWatcher[T]) SetList(resourceVersion string, items ...T) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.items = items
	f.resourceVersion = resourceVersion
}

// SetPagination makes List honour ListOptions.Limit when enabled: it then
// returns pages of at most Limit items with continue tokens. A continue
// token issued before the list changed (SetList with another resource
// version) or not issued by this fake fails with "410 Gone" (expired).
// Disabled by default: List returns everything at once, like the API
// server's watch cache.
func (f *FakeListerWatcher[T]) SetPagination(enabled bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.paginate = enabled
}

// SetWatchBuffer gives watches opened from now on a result channel with room
// for n events, so that Send does not wait for the consumer to take each
// event (benchmarks). Default 0: Send returns once the consumer has received
// the event.
func (f *FakeListerWatcher[T]) SetWatchBuffer(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watchBuffer = n
}

// SetManualInitialEvents, when manual is true, stops the fake from feeding
// the initial events of a streaming list itself: the test sends them.
func (f *FakeListerWatcher[T]) SetManualInitialEvents(manual bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.manualInitial = manual
}

// SetDisableWatchList sets what IsWatchListSemanticsUnSupported reports: with
// true, the fake declares streaming lists unsupported, as
// informer.ClientOptions.DisableWatchList does for a client, and a reflector
// lists instead.
func (f *FakeListerWatcher[T]) SetDisableWatchList(unsupported bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watchListOff = unsupported
}

// IsWatchListSemanticsUnSupported tells a reflector whether this lister
// watcher declares streaming lists unsupported (see SetDisableWatchList).
// It is the method client-go looks for.
func (f *FakeListerWatcher[T]) IsWatchListSemanticsUnSupported() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.watchListOff
}

// FailNextList scripts the outcome of the next len(errs) List calls, in
// order: each fails with its error, or proceeds normally if it is nil.
func (f *FakeListerWatcher[T]) FailNextList(errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listErrs = append(f.listErrs, errs...)
}

// FailNextWatch scripts the outcome of the next len(errs) Watch calls, in
// order: each fails with its error, or proceeds normally if it is nil.
func (f *FakeListerWatcher[T]) FailNextWatch(errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watchErrs = append(f.watchErrs, errs...)
}

// Calls returns a copy of every call received so far, in order.
func (f *FakeListerWatcher[T]) Calls() []FakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]FakeCall(nil), f.calls...)
}

// WaitForCalls blocks until at least n calls were received and returns them
// (as Calls does), or returns ctx's error.
func (f *FakeListerWatcher[T]) WaitForCalls(ctx context.Context, n int) ([]FakeCall, error) {
	for {
		f.mu.Lock()
		if len(f.calls) >= n {
			calls := append([]FakeCall(nil), f.calls...)
			f.mu.Unlock()
			return calls, nil
		}
		changed := f.changed
		f.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %d calls: %w", n, ctx.Err())
		}
	}
}

// notifyLocked wakes every waiter. f.mu must be held.
func (f *FakeListerWatcher[T]) notifyLocked() {
	close(f.changed)
	f.changed = make(chan struct{})
}

// List implements informer.ListerWatcher. It records the call, then returns the
// next scripted error, ctx's error, or (a page of) the list.
func (f *FakeListerWatcher[T]) List(ctx context.Context, options metav1.ListOptions) (*listwatch.ListResult[T], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, FakeCall{Verb: "list", Options: options})
	f.notifyLocked()
	if len(f.listErrs) > 0 {
		err := f.listErrs[0]
		f.listErrs = f.listErrs[1:]
		if err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	start := 0
	if options.Continue != "" {
		offset, ok := f.parseContinueLocked(options.Continue)
		if !ok {
			return nil, apierrors.NewResourceExpired("the provided continue parameter is too old")
		}
		start = offset
	}
	end := len(f.items)
	if f.paginate && options.Limit > 0 && int64(end-start) > options.Limit {
		end = start + int(options.Limit)
	}
	result := &listwatch.ListResult[T]{
		Items:           copies(f.items[start:end]),
		ResourceVersion: f.resourceVersion,
	}
	if end < len(f.items) {
		result.Continue = fmt.Sprintf("fake:%s:%d", f.resourceVersion, end)
	}
	return result, nil
}

// parseContinueLocked returns the offset a continue token stands for, and
// false if the token is unknown or belongs to a list that was replaced.
func (f *FakeListerWatcher[T]) parseContinueLocked(token string) (int, bool) {
	rest, ok := strings.CutPrefix(token, "fake:")
	if !ok {
		return 0, false
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 || rest[:i] != f.resourceVersion {
		return 0, false
	}
	offset, err := strconv.Atoi(rest[i+1:])
	if err != nil || offset < 0 || offset > len(f.items) {
		return 0, false
	}
	return offset, true
}

// Watch implements informer.ListerWatcher. It records the call, then returns the
// next scripted error, ctx's error, or a new watch that becomes the open
// one. The previous watch is left to its consumer, which is expected to
// have stopped it.
func (f *FakeListerWatcher[T]) Watch(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, FakeCall{Verb: "watch", Options: options})
	f.notifyLocked()
	if len(f.watchErrs) > 0 {
		err := f.watchErrs[0]
		f.watchErrs = f.watchErrs[1:]
		if err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var initial []watch.Event
	if options.SendInitialEvents != nil && *options.SendInitialEvents && !f.manualInitial {
		initial = make([]watch.Event, 0, len(f.items)+1)
		for _, item := range copies(f.items) {
			initial = append(initial, watch.Event{Type: watch.Added, Object: item})
		}
		end := newFakeBookmark[T](f.resourceVersion)
		end.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		initial = append(initial, watch.Event{Type: watch.Bookmark, Object: end})
	}
	w := &fakeWatch{
		result: make(chan watch.Event, len(initial)+f.watchBuffer),
		done:   make(chan struct{}),
	}
	for _, ev := range initial {
		w.result <- ev
	}
	w.onEnd = func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.current == w {
			f.current = nil
			f.notifyLocked()
		}
	}
	f.current = w
	return w, nil
}

// Send delivers ev to the open watch, waiting for one to be opened if
// necessary. It returns once the watch accepted the event (see
// SetWatchBuffer), or ctx's error. Any event may be sent, including ones a
// reflector must reject (wrong object type, nil object).
func (f *FakeListerWatcher[T]) Send(ctx context.Context, ev watch.Event) error {
	if ev.Object != nil && !isNilPointer(ev.Object) {
		ev.Object = ev.Object.DeepCopyObject()
	}
	_, err := f.sendToOpenWatch(ctx, ev)
	return err
}

// Add sends an Added event for obj (see Send).
func (f *FakeListerWatcher[T]) Add(ctx context.Context, obj T) error {
	return f.Send(ctx, watch.Event{Type: watch.Added, Object: obj})
}

// Modify sends a Modified event for obj (see Send).
func (f *FakeListerWatcher[T]) Modify(ctx context.Context, obj T) error {
	return f.Send(ctx, watch.Event{Type: watch.Modified, Object: obj})
}

// Delete sends a Deleted event carrying obj's last state (see Send).
func (f *FakeListerWatcher[T]) Delete(ctx context.Context, obj T) error {
	return f.Send(ctx, watch.Event{Type: watch.Deleted, Object: obj})
}

// Bookmark sends a Bookmark event at resourceVersion: an empty T carrying
// only the resource version, as the API server does (see Send).
func (f *FakeListerWatcher[T]) Bookmark(ctx context.Context, resourceVersion string) error {
	return f.Send(ctx, watch.Event{Type: watch.Bookmark, Object: newFakeBookmark[T](resourceVersion)})
}

// EndInitialEvents sends the bookmark that ends the initial events of a
// streaming list (annotated k8s.io/initial-events-end: "true").
func (f *FakeListerWatcher[T]) EndInitialEvents(ctx context.Context, resourceVersion string) error {
	obj := newFakeBookmark[T](resourceVersion)
	obj.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
	return f.Send(ctx, watch.Event{Type: watch.Bookmark, Object: obj})
}

// Error sends an Error event carrying status (see Send).
func (f *FakeListerWatcher[T]) Error(ctx context.Context, status *metav1.Status) error {
	return f.Send(ctx, watch.Event{Type: watch.Error, Object: status})
}

// CloseWatch ends the open watch normally (its result channel is closed),
// waiting for one to be opened if necessary.
func (f *FakeListerWatcher[T]) CloseWatch(ctx context.Context) error {
	for {
		w, changed := f.openWatch()
		if w != nil {
			w.end()
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("waiting for a watch to close: %w", ctx.Err())
		}
	}
}

// FailWatch ends the open watch with err, as client-go's watch decoder does:
// an Error event carrying err's status (for an API error such as
// apierrors.NewResourceExpired) or, for any other error, the status a client
// reports when it cannot decode the stream; then the watch is closed.
func (f *FakeListerWatcher[T]) FailWatch(ctx context.Context, err error) error {
	var status runtime.Object
	if apiStatus, ok := err.(apierrors.APIStatus); ok {
		s := apiStatus.Status()
		status = &s
	} else {
		status = apierrors.NewClientErrorReporter(500, "GET", "ClientWatchDecoding").
			AsObject(fmt.Errorf("unable to decode an event from the watch stream: %w", err))
	}
	w, sendErr := f.sendToOpenWatch(ctx, watch.Event{Type: watch.Error, Object: status})
	if sendErr != nil {
		return sendErr
	}
	w.end()
	return nil
}

// openWatch returns the open watch (nil if none) and the channel closed at
// the next change.
// Watching reports whether a watch is open: one that Send would deliver to
// without waiting for a Watch call.
func (f *FakeListerWatcher[T]) Watching() bool {
	w, _ := f.openWatch()
	return w != nil
}

func (f *FakeListerWatcher[T]) openWatch() (*fakeWatch, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.current, f.changed
}

// sendToOpenWatch delivers ev to the open watch, moving on to the next watch
// when the open one ends before accepting it. It returns the watch that
// accepted ev.
func (f *FakeListerWatcher[T]) sendToOpenWatch(ctx context.Context, ev watch.Event) (*fakeWatch, error) {
	for {
		w, changed := f.openWatch()
		if w != nil {
			accepted, err := w.send(ctx, ev)
			if err != nil {
				return nil, fmt.Errorf("sending %s event: %w", ev.Type, err)
			}
			if accepted {
				return w, nil
			}
			continue // w ended meanwhile; its onEnd has cleared f.current
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for a watch to send a %s event: %w", ev.Type, ctx.Err())
		}
	}
}

// newFakeBookmark returns a new empty T with only its resource version set.
// T is a pointer type; reflection is acceptable here because this is test
// support, not the event path.
func newFakeBookmark[T object](resourceVersion string) T {
	var zero T
	obj := reflect.New(reflect.TypeOf(zero).Elem()).Interface().(T)
	obj.SetResourceVersion(resourceVersion)
	return obj
}

// copies returns deep copies of items. The fake hands out copies, as a
// decoding ListerWatcher hands out fresh objects: an informer owns what it
// receives (it interns the objects' strings in place), so a test may keep
// reading the objects it gave the fake.
func copies[T object](items []T) []T {
	var zero T
	out := make([]T, len(items))
	for i, item := range items {
		if item != zero {
			out[i] = item.DeepCopyObject().(T)
		}
	}
	return out
}

// isNilPointer reports whether obj is a typed nil pointer, which a test may
// send to check that the reflector drops it.
func isNilPointer(obj runtime.Object) bool {
	v := reflect.ValueOf(obj)
	return v.Kind() == reflect.Pointer && v.IsNil()
}
