package informer

import (
	"context"
	"errors"
	"net"
	"os"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubetyped/informer/informertest"
)

func TestReflectorDropsBadWatchEvents(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
	h.lw.SetList("7")
	h.start()
	nameless := NewPod("ns", "", "8")
	status := &metav1.Status{Status: metav1.StatusFailure, Code: 500}
	for _, ev := range []watch.Event{
		{Type: watch.Added, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}}},
		{Type: watch.Added},
		{Type: watch.Added, Object: (*corev1.Pod)(nil)},
		{Type: watch.Added, Object: nameless},
		{Type: watch.Modified, Object: status},
		{Type: watch.Bookmark, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9"}}},
		{Type: watch.Bookmark},
		{Type: "WEIRD", Object: NewPod("ns", "weird", "10")},
		{Type: watch.Deleted, Object: nameless},
		{Type: watch.Added, Object: NewPod("ns", "ok", "11")},
	} {
		h.must(h.lw.Send(h.ctx, ev))
	}
	diffOrFail(t, "store calls", []storeCall{
		{Op: "replace", Keys: []string{}, RV: "7"},
		{Op: "add", Keys: []string{"ns/ok"}, RV: "11"},
	}, h.store.waitFor(t, 2))
	h.stop()
	diffOrFail(t, "stats", ReflectorStats{WrongTypeEvents: 3, NilObjectEvents: 3, NamelessEvents: 2, UnknownTypeEvents: 1}, h.r.Stats())
	diffOrFail(t, "error logs", []string{
		"Dropping a watch event with an object of an unexpected type",
		"Dropping a watch event without an object",
		"Dropping a watch event with a nil object",
		"Dropping a watch event whose object has no name",
		"Dropping a watch event with an object of an unexpected type",
		"Dropping a watch event with an object of an unexpected type",
		"Dropping a watch event without an object",
		"Dropping a watch event of unknown type",
		"Dropping a watch event whose object has no name",
	}, h.errorLogs())
	// Still the first watch: bad events do not end it.
	diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 500, ""), watchCall("7")}, h.calls(2))
	if rv := h.r.LastSyncResourceVersion(); rv != "11" {
		t.Errorf("LastSyncResourceVersion = %q, want 11 (dropped events carry no progress)", rv)
	}
}

func TestReflectorWatchErrorEventsRelist(t *testing.T) {
	for name, fail := range map[string]func(h *reflectorHarness) error{
		"error event without a status": func(h *reflectorHarness) error {
			return h.lw.Send(h.ctx, watch.Event{Type: watch.Error, Object: NewPod("ns", "x", "9")})
		},
		"error event without an object": func(h *reflectorHarness) error {
			return h.lw.Send(h.ctx, watch.Event{Type: watch.Error})
		},
		"decode error": func(h *reflectorHarness) error {
			return h.lw.FailWatch(h.ctx, errors.New("invalid character '}'"))
		},
		"internal error status": func(h *reflectorHarness) error {
			return h.lw.FailWatch(h.ctx, apierrors.NewInternalError(errors.New("etcd down")))
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
			h.lw.SetList("7")
			h.start()
			h.must(h.lw.Add(h.ctx, NewPod("ns", "a", "8")))
			h.must(fail(h))
			h.skipBackoff()
			h.store.waitFor(t, 3)
			diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 500, ""), watchCall("7"), listCall("8", 0, ""), watchCall("7")}, h.calls(4))
			h.stop()
			diffOrFail(t, "stats", ReflectorStats{ErrorEvents: 1}, h.r.Stats())
			h.noHandledErrors()
		})
	}
}

func TestReflectorResync(t *testing.T) {
	answers := make(chan bool)
	h := newReflectorHarness(t, ReflectorOptions{
		DisableWatchList: true,
		ResyncPeriod:     30 * time.Second,
		ShouldResync:     func() bool { return <-answers },
	})
	h.lw.SetList("7")
	h.start()
	h.calls(2)
	resyncDue := func(answer bool) {
		h.waitForTimers(1)
		h.clock.Step(30 * time.Second)
		select {
		case answers <- answer:
		case <-h.ctx.Done():
			t.Fatal("ShouldResync not consulted")
		}
	}
	resyncDue(true)
	resyncDue(false)
	h.must(h.lw.Add(h.ctx, NewPod("ns", "a", "8")))
	resyncDue(true)
	diffOrFail(t, "store calls", []storeCall{
		{Op: "replace", Keys: []string{}, RV: "7"},
		{Op: "resync"},
		{Op: "add", Keys: []string{"ns/a"}, RV: "8"},
		{Op: "resync"},
	}, h.store.waitFor(t, 4))

	// A failed resync ends the watch: back off, relist.
	h.store.failNext("resync", errors.New("resync failed"))
	resyncDue(true)
	h.store.waitFor(t, 5)
	h.skipBackoff()
	h.store.waitFor(t, 6)
	diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 500, ""), watchCall("7"), listCall("8", 0, ""), watchCall("7")}, h.calls(4))
}

func TestReflectorResyncWhileBackingOff(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{
		DisableWatchList: true,
		ResyncPeriod:     time.Second,
		Backoff:          &wait.Backoff{Duration: 10 * time.Second},
	})
	h.lw.SetList("7")
	h.lw.FailNextWatch(apierrors.NewTooManyRequests("slow down", 1))
	h.start()
	h.calls(2)
	h.waitForTimers(2) // resync and backoff
	h.clock.Step(time.Second)
	diffOrFail(t, "store calls", []storeCall{{Op: "replace", Keys: []string{}, RV: "7"}, {Op: "resync"}}, h.store.waitFor(t, 2))
	h.waitForTimers(2)
	h.clock.Step(9 * time.Second)
	diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 500, ""), watchCall("7"), watchCall("7")}, h.calls(3))
}

func TestReflectorExpectedGVK(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	object := func(kind schema.GroupVersionKind, name, rv string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(kind)
		u.SetNamespace("ns")
		u.SetName(name)
		u.SetResourceVersion(rv)
		return u
	}
	// Without an expected kind, only a Table is dropped (as in client-go).
	for _, tc := range []struct {
		expected *schema.GroupVersionKind
		want     []storeCall
		dropped  uint64
	}{
		{&gvk, []storeCall{{Op: "replace", Keys: []string{}, RV: "7"}, {Op: "add", Keys: []string{"ns/widget"}, RV: "10"}}, 2},
		{nil, []storeCall{
			{Op: "replace", Keys: []string{}, RV: "7"},
			{Op: "add", Keys: []string{"ns/gadget"}, RV: "8"},
			{Op: "add", Keys: []string{"ns/widget"}, RV: "10"},
		}, 1},
	} {
		t.Cleanup(ExpectNoGoroutineLeak(t))
		lw := informertest.NewFakeListerWatcher[*unstructured.Unstructured]()
		lw.SetList("7")
		store := newRecordingStore[*unstructured.Unstructured]()
		r := NewReflector[*unstructured.Unstructured](lw, store, ReflectorOptions{
			DisableWatchList: true,
			ExpectedGVK:      tc.expected,
			Clock:            clocktesting.NewFakeClock(time.Unix(0, 0)),
		})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.Run(ctx)
		}()
		table := metav1.SchemeGroupVersion.WithKind("Table")
		for _, obj := range []*unstructured.Unstructured{
			object(gvk.GroupVersion().WithKind("Gadget"), "gadget", "8"),
			object(table, "table", "9"),
			object(gvk, "widget", "10"),
		} {
			if err := lw.Add(ctx, obj); err != nil {
				t.Fatal(err)
			}
		}
		diffOrFail(t, "store calls", tc.want, store.waitFor(t, len(tc.want)))
		diffOrFail(t, "stats", ReflectorStats{WrongTypeEvents: tc.dropped}, r.Stats())
		cancel()
		<-done
	}
}

func TestReflectorKeepsTypedObjectsWhateverTheirKind(t *testing.T) {
	// client-go only checks the kind of unstructured objects.
	h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
	h.lw.SetList("7")
	h.start()
	pod := NewPod("ns", "p", "8")
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "Table"}
	h.must(h.lw.Add(h.ctx, pod))
	diffOrFail(t, "store calls", []storeCall{
		{Op: "replace", Keys: []string{}, RV: "7"},
		{Op: "add", Keys: []string{"ns/p"}, RV: "8"},
	}, h.store.waitFor(t, 2))
}

func TestReflectorNormalWatchCloseRewatchesWithoutRelist(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
	h.lw.SetList("7")
	h.start()
	h.must(h.lw.Add(h.ctx, NewPod("ns", "a", "8")))
	h.must(h.lw.CloseWatch(h.ctx))
	h.must(h.lw.Bookmark(h.ctx, "9"))
	// A watch with only bookmarks is normal once it lasted a second (see
	// TestReflectorBookmarkOnlyShortWatchesBackOff).
	h.clock.Step(time.Second)
	h.must(h.lw.CloseWatch(h.ctx))
	h.must(h.lw.Delete(h.ctx, NewPod("ns", "a", "10")))
	diffOrFail(t, "store calls", []storeCall{
		{Op: "replace", Keys: []string{}, RV: "7"},
		{Op: "add", Keys: []string{"ns/a"}, RV: "8"},
		{Op: "bookmark", RV: "9"},
		{Op: "delete", Keys: []string{"ns/a"}, RV: "10"},
	}, h.store.waitFor(t, 4))
	diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 500, ""), watchCall("7"), watchCall("8"), watchCall("9")}, h.calls(4))
	if h.clock.HasWaiters() {
		t.Error("a normal watch close started a backoff")
	}
}

func TestReflectorVeryShortWatchRelists(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
	h.lw.SetList("7")
	h.start()
	// Ended at once without any event: suspicious, so back off and relist.
	h.must(h.lw.CloseWatch(h.ctx))
	h.skipBackoff()
	diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 500, ""), watchCall("7"), listCall("7", 0, ""), watchCall("7")}, h.calls(4))
	h.noHandledErrors()
}

func TestReflectorBookmarkOnlyShortWatchesBackOff(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
	h.lw.SetList("7")
	h.start()
	// A server that sends a bookmark and closes each watch at once: each
	// such watch is a very short watch, followed by a backoff and a relist
	// from the bookmark's resource version, never by an immediate
	// re-watch. The fake clock stands still, so the backoffs only end when
	// the test steps it: the number of watches is exactly the number of
	// steps plus one.
	const rounds = 5
	var want []informertest.FakeCall
	want = append(want, listCall("0", 500, ""), watchCall("7"))
	for round := range rounds {
		rv := strconv.Itoa(8 + round)
		h.calls(len(want))
		h.must(h.lw.Bookmark(h.ctx, rv))
		h.must(h.lw.CloseWatch(h.ctx))
		h.waitForTimers(1)
		if n := len(h.lw.Calls()); n != len(want) {
			t.Fatalf("round %d: %d calls before the backoff ended, want %d", round, n, len(want))
		}
		h.clock.Step(time.Minute)
		want = append(want, listCall(rv, 0, ""), watchCall("7")) // the fake lists at "7"
	}
	diffOrFail(t, "calls", want, h.calls(len(want)))
	h.noHandledErrors()
}

func TestReflectorWatchCallErrors(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	for name, err := range map[string]error{
		"too many requests":  apierrors.NewTooManyRequests("slow down", 1),
		"connection refused": refused,
	} {
		t.Run(name+" is retried without relist", func(t *testing.T) {
			h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
			h.lw.SetList("7")
			h.lw.FailNextWatch(err, err)
			h.start()
			h.calls(2)
			h.skipBackoff()
			h.calls(3)
			h.skipBackoff()
			h.must(h.lw.Add(h.ctx, NewPod("ns", "a", "8")))
			diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 500, ""), watchCall("7"), watchCall("7"), watchCall("7")}, h.calls(4))
			h.noHandledErrors()
		})
	}
	t.Run("other errors go to the handler and relist", func(t *testing.T) {
		h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
		h.lw.SetList("7")
		forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("no"))
		h.lw.FailNextWatch(forbidden)
		h.start()
		if got := h.handledError(); !errors.Is(got, forbidden) {
			t.Fatalf("handled error = %v, want %v", got, forbidden)
		}
		h.skipBackoff()
		diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 500, ""), watchCall("7"), listCall("7", 0, ""), watchCall("7")}, h.calls(4))
	})
}

func TestReflectorTooManyRequestsDuringWatchRewatches(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
	h.lw.SetList("7")
	h.start()
	h.must(h.lw.Add(h.ctx, NewPod("ns", "a", "8")))
	h.must(h.lw.FailWatch(h.ctx, apierrors.NewTooManyRequests("slow down", 1)))
	h.skipBackoff()
	h.must(h.lw.Add(h.ctx, NewPod("ns", "b", "9")))
	diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 500, ""), watchCall("7"), watchCall("8")}, h.calls(3))
	diffOrFail(t, "store calls", []storeCall{
		{Op: "replace", Keys: []string{}, RV: "7"},
		{Op: "add", Keys: []string{"ns/a"}, RV: "8"},
		{Op: "add", Keys: []string{"ns/b"}, RV: "9"},
	}, h.store.waitFor(t, 3))
	diffOrFail(t, "stats", ReflectorStats{ErrorEvents: 1}, h.r.Stats())
}

func TestReflectorResyncFailingWhileBackingOffRelists(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{
		DisableWatchList: true,
		ResyncPeriod:     time.Second,
		Backoff:          &wait.Backoff{Duration: 10 * time.Second},
	})
	h.lw.SetList("7")
	h.lw.FailNextWatch(apierrors.NewTooManyRequests("slow down", 1))
	h.store.failNext("resync", errors.New("resync failed"))
	h.start()
	h.calls(2)
	h.waitForTimers(2) // resync and backoff
	h.clock.Step(time.Second)
	h.store.waitFor(t, 2)
	h.waitForLog("Warning: watch ended with error")
	h.skipBackoff()
	diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 500, ""), watchCall("7"), listCall("7", 0, ""), watchCall("7")}, h.calls(4))
}
