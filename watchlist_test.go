package informer

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubetyped/informer/informertest"
)

func TestStreamingListThenWatchOnTheSameStream(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{})
	a, b := NewPod("ns", "a", "3"), NewPod("ns", "b", "4")
	h.lw.SetList("5", a, b)
	h.start()
	h.must(h.lw.Add(h.ctx, NewPod("ns", "c", "6")))
	h.must(h.lw.Bookmark(h.ctx, "7"))
	diffOrFail(t, "store calls", []storeCall{
		{Op: "replace", Keys: podKeys(a, b), RV: "5"},
		{Op: "add", Keys: []string{"ns/c"}, RV: "6"},
		{Op: "bookmark", RV: "7"},
	}, h.store.waitFor(t, 3))
	diffOrFail(t, "calls", []informertest.FakeCall{streamCall("")}, h.calls(1))
	// The reflector records a resource version once the store has taken
	// the event: wait for it.
	Eventually(t, `LastSyncResourceVersion() == "7"`, func() bool { return h.r.LastSyncResourceVersion() == "7" })
	// The watch ends normally: re-watch (not stream) from the last version.
	h.must(h.lw.CloseWatch(h.ctx))
	h.must(h.lw.Add(h.ctx, NewPod("ns", "d", "8")))
	diffOrFail(t, "calls", []informertest.FakeCall{streamCall(""), watchCall("7")}, h.calls(2))
}

func TestStreamingListFoldsInitialEvents(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{})
	h.lw.SetManualInitialEvents(true)
	h.start()
	for _, ev := range []watch.Event{
		{Type: watch.Added, Object: NewPod("ns", "a", "1")},
		{Type: watch.Added, Object: NewPod("ns", "b", "2")},
		{Type: watch.Modified, Object: NewPod("ns", "a", "3")},
		{Type: watch.Added, Object: NewPod("ns", "c", "4")},
		{Type: watch.Deleted, Object: NewPod("ns", "c", "5")},
		{Type: watch.Bookmark, Object: NewPod("", "", "5")}, // a plain bookmark is not the end
		{Type: watch.Added, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "wrong"}}},
	} {
		h.must(h.lw.Send(h.ctx, ev))
	}
	h.must(h.lw.EndInitialEvents(h.ctx, "6"))
	h.must(h.lw.Delete(h.ctx, NewPod("ns", "b", "7")))
	// One Replace with each object's latest state, in order of appearance;
	// no bookmark reaches the store before it.
	diffOrFail(t, "store calls", []storeCall{
		{Op: "replace", Keys: []string{"ns/a", "ns/b"}, RV: "6"},
		{Op: "delete", Keys: []string{"ns/b"}, RV: "7"},
	}, h.store.waitFor(t, 2))
	h.stop()
	diffOrFail(t, "stats", ReflectorStats{WrongTypeEvents: 1}, h.r.Stats())
	diffOrFail(t, "calls", []informertest.FakeCall{streamCall("")}, h.calls(1))
}

func TestStreamingListRestartsCleanlyBeforeTheEnd(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{})
	h.lw.SetManualInitialEvents(true)
	h.start()
	h.must(h.lw.Add(h.ctx, NewPod("ns", "a", "1")))
	h.must(h.lw.Add(h.ctx, NewPod("ns", "gone", "2")))
	h.must(h.lw.CloseWatch(h.ctx))
	// The second stream starts from scratch: "gone" is not in it.
	h.must(h.lw.Add(h.ctx, NewPod("ns", "a", "1")))
	h.must(h.lw.EndInitialEvents(h.ctx, "3"))
	diffOrFail(t, "store calls", []storeCall{{Op: "replace", Keys: []string{"ns/a"}, RV: "3"}}, h.store.waitFor(t, 1))
	diffOrFail(t, "calls", []informertest.FakeCall{streamCall(""), streamCall("")}, h.calls(2))
	if h.clock.HasWaiters() {
		t.Error("restarting a stream backed off")
	}
}

func TestStreamingListWarnsWithoutProgress(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{})
	h.lw.SetManualInitialEvents(true)
	h.start()
	h.calls(1)
	h.waitForTimers(1)
	h.clock.Step(10 * time.Second)
	h.waitForLog("Warning: streaming list has not received any event yet")
	h.must(h.lw.Add(h.ctx, NewPod("ns", "a", "1")))
	// Once the next event is taken, the first one has been processed (at
	// the current fake time); the dropped event does not count as progress.
	h.must(h.lw.Send(h.ctx, watch.Event{Type: watch.Added, Object: &corev1.ConfigMap{}}))
	h.waitForTimers(1)
	h.clock.Step(10 * time.Second)
	h.waitForLog("Warning: streaming list has not received the end of its initial events")
	h.must(h.lw.EndInitialEvents(h.ctx, "2"))
	diffOrFail(t, "store calls", []storeCall{{Op: "replace", Keys: []string{"ns/a"}, RV: "2"}}, h.store.waitFor(t, 1))
	if h.clock.HasWaiters() {
		t.Error("the warning ticker outlived the streaming list")
	}
}

func TestStreamingListFallsBackToList(t *testing.T) {
	for name, fail := range map[string]func(h *reflectorHarness){
		"server rejects the request": func(h *reflectorHarness) {
			h.lw.FailNextWatch(apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "", nil))
		},
		"any other error": func(h *reflectorHarness) {
			h.lw.FailNextWatch(errors.New("unsupported"))
		},
		"stream ends at once without events": func(h *reflectorHarness) {
			h.lw.SetManualInitialEvents(true)
			go func() { _ = h.lw.CloseWatch(h.ctx) }()
		},
		"decode error in the stream": func(h *reflectorHarness) {
			h.lw.SetManualInitialEvents(true)
			go func() { _ = h.lw.FailWatch(h.ctx, errors.New("garbage")) }()
		},
		"store rejects the result": func(h *reflectorHarness) {
			h.store.failNext("replace", errors.New("rejected"))
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := newReflectorHarness(t, ReflectorOptions{})
			a := NewPod("ns", "a", "1")
			h.lw.SetList("5", a)
			fail(h)
			h.start()
			calls := h.calls(3)
			diffOrFail(t, "calls", []informertest.FakeCall{streamCall(""), listCall("0", 500, ""), watchCall("5")}, calls)
			h.must(h.lw.Add(h.ctx, NewPod("ns", "b", "6")))
			got := h.store.waitFor(t, 2)
			if got[len(got)-1].Op != "add" {
				got = h.store.waitFor(t, 3) // after the rejected Replace
			}
			diffOrFail(t, "last store calls", []storeCall{
				{Op: "replace", Keys: []string{"ns/a"}, RV: "5"},
				{Op: "add", Keys: []string{"ns/b"}, RV: "6"},
			}, got[len(got)-2:])
			h.noHandledErrors()
		})
	}
}

func TestStreamingListRetries(t *testing.T) {
	t.Run("too many requests: back off, stream again", func(t *testing.T) {
		h := newReflectorHarness(t, ReflectorOptions{})
		h.lw.SetList("5")
		h.lw.FailNextWatch(apierrors.NewTooManyRequests("slow down", 1))
		h.start()
		h.calls(1)
		h.skipBackoff()
		h.store.waitFor(t, 1)
		diffOrFail(t, "calls", []informertest.FakeCall{streamCall(""), streamCall("")}, h.calls(2))
	})
	t.Run("expired: stream the latest state", func(t *testing.T) {
		h := newReflectorHarness(t, ReflectorOptions{})
		h.lw.SetList("5")
		h.start()
		h.store.waitFor(t, 1)
		h.must(h.lw.Add(h.ctx, NewPod("ns", "a", "6")))
		// The watch expires; the new stream at "6" is refused as expired, so
		// the reflector streams the latest state.
		h.lw.FailNextWatch(apierrors.NewResourceExpired("too old"))
		h.must(h.lw.FailWatch(h.ctx, apierrors.NewResourceExpired("too old")))
		h.skipBackoff()
		h.store.waitFor(t, 3)
		diffOrFail(t, "calls", []informertest.FakeCall{streamCall(""), streamCall("6"), streamCall("")}, h.calls(3))
	})
}

func TestStreamingListDisabled(t *testing.T) {
	t.Run("by option", func(t *testing.T) {
		h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
		h.lw.SetList("5")
		h.start()
		diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 500, ""), watchCall("5")}, h.calls(2))
	})
	t.Run("declared unsupported by the lister-watcher", func(t *testing.T) {
		h := newReflectorHarness(t, ReflectorOptions{})
		h.lw.SetDisableWatchList(true)
		h.r = NewReflector[*corev1.Pod](h.lw, h.store, ReflectorOptions{Clock: h.clock})
		h.lw.SetList("5")
		h.start()
		diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 500, ""), watchCall("5")}, h.calls(2))
	})
}

func TestInitialObjects(t *testing.T) {
	c := newInitialObjects[*corev1.Pod](nil)
	a1, a2, b, c1 := NewPod("ns", "a", "1"), NewPod("ns", "a", "2"), NewPod("ns", "b", "3"), NewPod("ns", "c", "4")
	for _, step := range []func() error{
		func() error { return c.Add(a1) },
		func() error { return c.Add(b) },
		func() error { return c.Update(a2) },
		func() error { return c.Delete(b) },
		func() error { return c.Add(c1) },
		func() error { return c.Add(b) },
		func() error { return c.Bookmark("9") },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	diffOrFail(t, "objects", []*corev1.Pod{a2, c1, b}, c.list())
}
