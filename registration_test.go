package informer

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// registered reports whether r is one of inf's current registrations.
func registered(inf *Informer[*corev1.Pod], r *Registration) bool {
	for _, l := range inf.fan.proc.snapshot() {
		if registrationTarget(l) == r.target {
			return true
		}
	}
	return false
}

func TestLateHandlerGetsCachedObjectsThenLiveEventsExactlyOnce(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	// The producer below touches p0..p19; listing them first means it never
	// deletes an object that was not there. (A watch's delete of an unknown
	// object reaches the handlers, as in client-go, so a handler that joined
	// before the producer's first round would see "deletes of absent objects"
	// and the test would depend on how fast the producer started.)
	initial := []*corev1.Pod{NewPod("ns", "a", "1"), NewPod("ns", "b", "1")}
	for i := range 20 {
		initial = append(initial, NewPod("ns", "p"+strconv.Itoa(i), "1"))
	}
	lw.SetList("1", initial...)
	plRun(t, inf)
	Eventually(t, "informer synced", inf.HasSynced)
	ctx := plCtx(t)

	// Events flow while handlers join: each must see every object exactly
	// once, in a consistent sequence.
	stop := make(chan struct{})
	produced := make(chan error, 1)
	lastRV := 1
	go func() {
		rv := 1
		for i := 0; ; i++ {
			select {
			case <-stop:
				lastRV = rv // read after the send below
				produced <- nil
				return
			default:
			}
			rv++
			name := "p" + strconv.Itoa(i%20)
			var err error
			switch i % 3 {
			case 0, 1:
				err = lw.Modify(ctx, NewPod("ns", name, strconv.Itoa(rv)))
			case 2:
				err = lw.Delete(ctx, NewPod("ns", name, strconv.Itoa(rv)))
			}
			if err != nil {
				produced <- err
				return
			}
		}
	}()
	type joined struct {
		rec   *plRecorder
		check *plChainCheck
		reg   *Registration
	}
	var handlers []joined
	for range 5 {
		time.Sleep(5 * time.Millisecond)
		rec, check := newPLRecorder(), &plChainCheck{}
		rec.hook = check.observe
		reg, err := inf.AddEventHandler(rec)
		plMust(t, err)
		handlers = append(handlers, joined{rec, check, reg})
	}
	close(stop)
	plMust(t, <-produced)
	// A last event marks the end: a handler that saw it saw everything.
	end := NewPod("ns", "zz-end", strconv.Itoa(lastRV+1))
	plMust(t, lw.Add(ctx, end))
	for _, h := range handlers {
		Eventually(t, "the end marker", func() bool {
			events := h.rec.get()
			return len(events) > 0 && events[len(events)-1].Key == KeyOf(end)
		})
	}
	final := keysOf(inf.indexer.List())
	for i, h := range handlers {
		Eventually(t, "late handler synced", h.reg.HasSynced)
		h.check.mu.Lock()
		if len(h.check.errors) > 0 {
			t.Errorf("handler %d saw an inconsistent sequence:\n%s", i, strings.Join(h.check.errors, "\n"))
		}
		var present []string
		for key := range h.check.last {
			present = append(present, key)
		}
		h.check.mu.Unlock()
		if diff := cmp.Diff(final, plSorted(present)); diff != "" {
			t.Errorf("handler %d's view differs from the cache (-cache +handler):\n%s", i, diff)
		}
		initialDone := false
		for _, e := range h.rec.get() {
			if e.Op == "add" && e.Initial && initialDone {
				t.Errorf("handler %d got an initial add after a live event: %v", i, e)
			}
			if !(e.Op == "add" && e.Initial) {
				initialDone = true
			}
		}
	}
}

func TestRegistrationSyncedOnlyAfterItsInitialAddsReturn(t *testing.T) {
	// client-go's TestAddWhileActive, with per-handler HasSynced.
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("1", NewPod("ns", "pod1", "1"))
	gate := make(chan struct{})
	rec1 := newPLRecorder()
	rec1.hook = func(plEvent) { <-gate }
	reg1, err := inf.AddEventHandler(rec1)
	plMust(t, err)
	plRun(t, inf)
	Eventually(t, "informer synced", inf.HasSynced)
	time.Sleep(10 * time.Millisecond)
	if reg1.HasSynced() {
		t.Fatal("registration synced while its handler is still in OnAdd")
	}
	close(gate)
	Eventually(t, "registration 1 synced", reg1.HasSynced)

	gate2 := make(chan struct{})
	rec2 := newPLRecorder()
	rec2.hook = func(plEvent) { <-gate2 }
	reg2, err := inf.AddEventHandler(rec2)
	plMust(t, err)
	if reg2.HasSynced() {
		t.Fatal("late registration synced before receiving the cached objects")
	}
	close(gate2)
	Eventually(t, "registration 2 synced", reg2.HasSynced)
	plMust(t, lw.Add(plCtx(t), NewPod("ns", "pod2", "2")))
	rec1.expect(t, plAdd("ns/pod1", "1", true), plAdd("ns/pod2", "2", false))
	rec2.expect(t, plAdd("ns/pod1", "1", true), plAdd("ns/pod2", "2", false))
	if !registered(inf, reg1) || !registered(inf, reg2) {
		t.Fatal("registrations lost")
	}
}

func TestRemoveHandlerWhileActiveDropsPending(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("1")
	gate, inCall := make(chan struct{}), make(chan struct{}, 10)
	rec := newPLRecorder()
	rec.hook = func(plEvent) {
		inCall <- struct{}{}
		<-gate
	}
	reg, err := inf.AddEventHandler(rec)
	plMust(t, err)
	other := newPLRecorder()
	_, err = inf.AddEventHandler(other)
	plMust(t, err)
	plRun(t, inf)
	ctx := plCtx(t)
	for i := range 10 {
		plMust(t, lw.Add(ctx, NewPod("ns", "p"+strconv.Itoa(i), strconv.Itoa(i+2))))
	}
	other.waitFor(t, 10)
	<-inCall // the handler is in its first call; nine notifications wait
	plMust(t, inf.RemoveEventHandler(reg))
	if registered(inf, reg) {
		t.Fatal("still registered after removal")
	}
	close(gate)
	plMust(t, inf.ShutDownEventHandler(reg)) // waits for the call in progress
	plMust(t, lw.Add(ctx, NewPod("ns", "late", "20")))
	other.waitFor(t, 11)
	if got := rec.get(); len(got) != 1 {
		t.Fatalf("removed handler received %v, want only the call in progress", got)
	}
	if diff := cmp.Diff(HandlerStats{Delivered: 1, Dropped: 9}, reg.Stats()); diff != "" {
		t.Fatalf("stats (-want +got):\n%s", diff)
	}
}

func TestRemoveEventHandlerIsHarmlessWhenRepeatedOrForeign(t *testing.T) {
	inf, _ := plInformer(t, InformerOptions[*corev1.Pod]{})
	other, _ := plInformer(t, InformerOptions[*corev1.Pod]{})
	funcs := ResourceEventHandlerFuncs[*corev1.Pod]{}
	reg1, err := inf.AddEventHandler(funcs)
	plMust(t, err)
	reg2, err := inf.AddEventHandler(funcs) // the same handler twice: two registrations
	plMust(t, err)
	if len(inf.fan.proc.snapshot()) != 2 {
		t.Fatalf("%d registrations, want 2", len(inf.fan.proc.snapshot()))
	}
	plMust(t, other.RemoveEventHandler(reg1))
	plMust(t, other.ShutDownEventHandler(reg1))
	if !registered(inf, reg1) {
		t.Fatal("another informer removed this informer's handler")
	}
	plMust(t, inf.RemoveEventHandler(reg1))
	plMust(t, inf.RemoveEventHandler(reg1))
	if registered(inf, reg1) || !registered(inf, reg2) {
		t.Fatal("wrong registration removed")
	}
	plMust(t, inf.ShutDownEventHandler(reg2)) // never started: returns at once
	if len(inf.fan.proc.snapshot()) != 0 {
		t.Fatalf("%d registrations left", len(inf.fan.proc.snapshot()))
	}
	if err := inf.RemoveEventHandler(nil); err == nil {
		t.Fatal("removing a nil registration did not fail")
	}
	if _, err := inf.AddEventHandler(nil); err == nil {
		t.Fatal("adding a nil handler did not fail")
	}
}

func TestShutDownEventHandlerWaitsForTheCallInProgress(t *testing.T) {
	// client-go's TestRemoveEventHandler_SynchronousShutdown.
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("1")
	started, release := make(chan struct{}), make(chan struct{})
	var finished bool
	reg, err := inf.AddEventHandler(ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc: func(*corev1.Pod, bool) {
			close(started)
			<-release
			time.Sleep(10 * time.Millisecond)
			finished = true // read after ShutDownEventHandler returns: no race if it waited
		},
	})
	plMust(t, err)
	plRun(t, inf)
	plMust(t, lw.Add(plCtx(t), NewPod("ns", "a", "2")))
	<-started
	close(release)
	plMust(t, inf.ShutDownEventHandler(reg))
	if !finished {
		t.Fatal("ShutDownEventHandler returned before the handler call finished")
	}
}

func TestHandlerAddRemoveAbuse(t *testing.T) {
	// client-go's TestSharedInformerHandlerAbuse: meant for -race.
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{ResyncPeriod: new(time.Second)})
	lw.SetList("1")
	stopInformer := plRun(t, inf)
	ctx, cancel := context.WithCancel(plCtx(t))
	var workers sync.WaitGroup
	for range 20 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			var regs []*Registration
			funcs := ResourceEventHandlerFuncs[*corev1.Pod]{
				AddFunc:    func(*corev1.Pod, bool) {},
				UpdateFunc: func(_, _ *corev1.Pod) {},
				DeleteFunc: func(DeletedObject[*corev1.Pod]) {},
			}
			for ctx.Err() == nil {
				if rand.IntN(2) == 0 || len(regs) == 0 {
					reg, err := inf.AddEventHandlerWithOptions(funcs, HandlerOptions{MaxPending: rand.IntN(3), Overflow: OverflowPolicy(rand.IntN(2))})
					if err != nil {
						if !strings.Contains(err.Error(), "stopped") {
							t.Errorf("add: %v", err)
						}
						return
					}
					regs = append(regs, reg)
					continue
				}
				i := rand.IntN(len(regs))
				var err error
				if rand.IntN(2) == 0 {
					err = inf.RemoveEventHandler(regs[i])
				} else {
					err = inf.ShutDownEventHandler(regs[i])
				}
				if err != nil {
					t.Errorf("remove: %v", err)
				}
				regs = append(regs[:i], regs[i+1:]...)
			}
		}()
	}
	for i := range 2000 {
		name := "p" + strconv.Itoa(rand.IntN(50))
		var err error
		switch rand.IntN(3) {
		case 0:
			err = lw.Add(ctx, NewPod("ns", name, strconv.Itoa(i+2)))
		case 1:
			err = lw.Modify(ctx, NewPod("ns", name, strconv.Itoa(i+2)))
		case 2:
			err = lw.Delete(ctx, NewPod("ns", name, strconv.Itoa(i+2)))
		}
		plMust(t, err)
	}
	stopInformer() // stop first, to exercise contention while stopping
	cancel()
	workers.Wait()
}

func TestInformerLifecycle(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("1", NewPod("ns", "a", "1"))
	watchErrors := make(chan error, 10)
	plMust(t, inf.setWatchErrorHandler(func(_ context.Context, err error) { watchErrors <- err }))
	plMust(t, inf.setTransform(func(p *corev1.Pod) (*corev1.Pod, error) { return p, nil }))
	lw.FailNextList(errors.New("access denied"))
	lw.FailNextWatch(errors.New("access denied"))
	if inf.IsStopped() || inf.LastSyncResourceVersion() != "" {
		t.Fatal("fresh informer reports stopped or a resource version")
	}
	stop := plRun(t, inf)
	select {
	case err := <-watchErrors:
		if !strings.Contains(err.Error(), "access denied") {
			t.Fatalf("watch error handler got %v", err)
		}
	case <-time.After(plTimeout):
		t.Fatal("watch error handler not called")
	}
	Eventually(t, "informer synced", inf.HasSynced)
	if err := inf.setTransform(nil); err == nil {
		t.Error("setTransform after Run did not fail")
	}
	if err := inf.setWatchErrorHandler(nil); err == nil {
		t.Error("setWatchErrorHandler after Run did not fail")
	}
	plMust(t, inf.AddIndexers(map[string]IndexFunc[*corev1.Pod]{"byName": func(p *corev1.Pod) ([]string, error) { return []string{p.Name}, nil }}))
	got, err := inf.indexer.ByIndex("byName", "a")
	plMust(t, err)
	if len(got) != 1 || KeyOf(got[0]) != "ns/a" {
		t.Fatalf("index added after start: got %v", got)
	}
	if pod, err := inf.Lister().Namespace("ns").Get("a"); err != nil || pod.Name != "a" {
		t.Fatalf("lister: %v, %v", pod, err)
	}
	inf.Run(context.Background()) // a second Run returns at once
	stop()
	if !inf.IsStopped() {
		t.Fatal("not stopped after Run returned")
	}
	if _, err := inf.AddEventHandler(ResourceEventHandlerFuncs[*corev1.Pod]{}); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("adding to a stopped informer: %v", err)
	}
	if err := inf.AddIndexers(map[string]IndexFunc[*corev1.Pod]{"other": func(p *corev1.Pod) ([]string, error) { return nil, nil }}); err == nil {
		t.Fatal("AddIndexers on a stopped informer did not fail")
	}
}

func TestRemovingABlockingHandlerReleasesTheInformer(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("1")
	release := make(chan struct{})
	stuck := newPLRecorder()
	stuck.hook = func(plEvent) { <-release }
	reg, err := inf.AddEventHandlerWithOptions(stuck, HandlerOptions{MaxPending: 1, Overflow: OverflowBlock})
	plMust(t, err)
	other := newPLRecorder()
	_, err = inf.AddEventHandler(other)
	plMust(t, err)
	stop := plRun(t, inf)
	t.Cleanup(func() {
		close(release)
		stop()
	})
	ctx := plCtx(t)
	for i := range 5 {
		plMust(t, lw.Add(ctx, NewPod("ns", "p"+strconv.Itoa(i), strconv.Itoa(i+2))))
	}
	time.Sleep(20 * time.Millisecond) // the informer now waits for the stuck handler

	// A handler being added waits for the informer; removing the stuck
	// handler must still go through and release both.
	added := make(chan error, 1)
	go func() {
		_, err := inf.AddEventHandler(newPLRecorder())
		added <- err
	}()
	removed := make(chan error, 1)
	go func() { removed <- inf.RemoveEventHandler(reg) }()
	for _, ch := range []chan error{removed, added} {
		select {
		case err := <-ch:
			plMust(t, err)
		case <-time.After(plTimeout):
			t.Fatal("removing a handler that blocks the informer did not return")
		}
	}
	plMust(t, lw.Add(ctx, NewPod("ns", "after", "10")))
	got := other.waitFor(t, 6)
	if last := got[len(got)-1]; last.Key != "ns/after" {
		t.Fatalf("last event of the other handler = %v, want ns/after", last)
	}
}
