package informer

// Running an informer scenario through both informers in a synctest bubble,
// normalizing and comparing what they did, and the tests built on it.

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubetyped/informer/informertest"
)

// diffHandlerState is one handler's state after a step.
type diffHandlerState struct {
	ID     int
	Synced bool
	Calls  int
}

// diffInformerState is one side's state after a step.
type diffInformerState struct {
	Step string
	// NoWatch: the step needed an open watch and this side had none, so
	// the step did not reach it.
	NoWatch bool
	// Watching: a watch is open after the step.
	Watching bool
	// WatchErrors are the statuses of the errors the reflector reported to
	// its watch error handler during the step.
	WatchErrors []string
	HasSynced   bool
	LastSyncRV  string
	StoreRV     string
	Store       []diffStored
	Handlers    []diffHandlerState
}

// diffInformerTrace is everything compared for one side.
type diffInformerTrace struct {
	States []diffInformerState
	// Notes are the calls each handler received, normalized.
	Notes map[int][]diffNote
	// Errors are failed handler registrations and removals, and how the
	// stopped informer treats them.
	Errors []string
}

// diffHandlerRun is a handler registered on both sides.
type diffHandlerRun struct {
	id      int
	late    bool // added after Run
	removed bool
	rec     [2]*diffRecorder
	handle  [2]any
	gates   []chan struct{} // armed or blocking gates, released at the latest at the end
	// lists are, per side, the ranges [from, to) of notes that a list
	// (the initial one or a relist) produced. When the handler is blocked
	// during a relist, its range stays open (openList, from) until its
	// release, so it also covers the calls that followed the list.
	lists    [2][][2]int
	openList [2]int
	listOpen bool
}

// diffRunner runs one scenario inside a bubble.
type diffRunner struct {
	sc       diffInformerScenario
	ctx      context.Context
	sides    [2]diffInformerSide
	handlers []*diffHandlerRun
	traces   [2]diffInformerTrace
	watch    diffWatchModel
	cov      *diffCoverage
}

// diffRunInformers runs sc through client-go (traces[0]) and this library
// (traces[1]). A panic (synctest reports a deadlock, or a goroutine still
// blocked after both Runs returned, by panicking) is returned as failure.
// cov (may be nil) counts what the scenario exercised.
func diffRunInformers(t *testing.T, sc diffInformerScenario, cov *diffCoverage) (traces [2]diffInformerTrace, failure string) {
	defer func() {
		if r := recover(); r != nil {
			failure = fmt.Sprintf("panic: %v", r)
		}
	}()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(diffQuietContext(context.Background()))
		r := &diffRunner{sc: sc, ctx: ctx, watch: diffWatchModel{fresh: true}, cov: cov}
		r.sides = [2]diffInformerSide{newDiffClientGoSide(sc.Config), newDiffOurSide(t, sc.Config)}
		traces = r.run(cancel)
	})
	return traces, failure
}

func (r *diffRunner) run(cancel context.CancelFunc) [2]diffInformerTrace {
	for _, side := range r.sides {
		side.fake().SetWatchBuffer(256)
		side.fake().SetList(r.sc.InitialRV, diffPods(r.sc.InitialList)...)
		if !r.sc.ResyncMode {
			failures := make([]error, len(r.sc.InitialFailures))
			for i, code := range r.sc.InitialFailures {
				failures[i] = diffStatusError(code)
			}
			if r.sc.Config.Streaming {
				side.fake().FailNextWatch(failures...)
			} else {
				side.fake().FailNextList(failures...)
			}
		}
	}
	for _, h := range r.sc.Handlers {
		r.addHandler(h.ID, h.Resync, false, h.Blocked)
	}
	var runs sync.WaitGroup
	for _, side := range r.sides {
		runs.Go(func() { side.run(r.ctx) })
	}
	synctest.Wait()
	time.Sleep(diffStepOffset)
	synctest.Wait()
	for try := 0; try <= len(r.sc.InitialFailures) && !(r.watching(0) && r.watching(1)); try++ {
		r.record("Run: not watching yet", [2]bool{})
		time.Sleep(diffBackoffWait)
		synctest.Wait()
		r.watch.fresh = false
	}
	r.noteLists(nil, true) // the initial list: every call so far
	r.record("Run", [2]bool{})
	for _, st := range r.sc.Steps {
		r.step(st)
	}
	for _, h := range r.handlers {
		for _, gate := range h.gates {
			close(gate)
		}
		h.gates = nil
	}
	synctest.Wait()
	for _, h := range r.handlers {
		r.closeLists(h)
	}
	cancel()
	runs.Wait()
	r.afterStop()
	r.cov.add("scenarios", 1)
	if r.sc.ResyncMode {
		r.cov.add("scenarios in resync mode", 1)
	}
	if r.sc.Config.Streaming {
		r.cov.add("scenarios with streaming lists", 1)
	}
	if len(r.sc.InitialFailures) > 0 {
		r.cov.add("scenarios whose first list requests fail", 1)
	}
	for i := range r.traces[0].States {
		if !r.traces[0].States[i].HasSynced {
			r.cov.add("states observed before the informer synced", 1)
		}
		r.cov.add("errors reported to the watch error handler", len(r.traces[0].States[i].WatchErrors))
	}
	for i := range r.sides {
		r.traces[i].Notes = map[int][]diffNote{}
		for _, h := range r.handlers {
			r.traces[i].Notes[h.id] = h.rec[i].recorded()
			if i == 0 {
				r.cov.addNotes(r.traces[i].Notes[h.id])
			}
		}
		diffNormalize(i, &r.traces[i], r.sc.Config, r.handlers)
	}
	return r.traces
}

func diffPods(list []diffObj) []*corev1.Pod {
	pods := make([]*corev1.Pod, len(list))
	for i, o := range list {
		pods[i] = o.pod()
	}
	return pods
}

// afterStop records whether each stopped informer refuses a new handler and
// accepts the removal of a registered one.
func (r *diffRunner) afterStop() {
	for i, side := range r.sides {
		_, addErr := side.addHandler(&diffRecorder{}, nil)
		r.traces[i].Errors = append(r.traces[i].Errors, fmt.Sprintf("adding a handler after stop fails: %v", addErr != nil))
		for _, h := range r.handlers {
			if h.handle[i] != nil && !h.removed {
				err := side.removeHandler(h.handle[i], false)
				r.traces[i].Errors = append(r.traces[i].Errors, fmt.Sprintf("removing h%d after stop fails: %v", h.id, err != nil))
				break
			}
		}
	}
}

// handler returns the registered handler id, or nil.
func (r *diffRunner) handler(id int) *diffHandlerRun {
	for _, h := range r.handlers {
		if h.id == id {
			return h
		}
	}
	return nil
}

func (r *diffRunner) addHandler(id int, resync *time.Duration, late, blocked bool) {
	if r.handler(id) != nil {
		return // a shrunk scenario can repeat an ID
	}
	h := &diffHandlerRun{id: id, late: late}
	for i, side := range r.sides {
		h.rec[i] = &diffRecorder{}
		if blocked {
			h.gates = append(h.gates, h.rec[i].arm())
		}
		handle, err := side.addHandler(h.rec[i], resync)
		if err != nil {
			r.traces[i].Errors = append(r.traces[i].Errors, fmt.Sprintf("adding h%d: %v", id, err))
			continue
		}
		h.handle[i] = handle
	}
	r.handlers = append(r.handlers, h)
}

// step runs st on both sides and records their states once both are idle.
func (r *diffRunner) step(st diffStep) {
	if !r.watch.allowed(st, r.sc.ResyncMode) {
		return // only a shrunk scenario gets here
	}
	before, calls := r.counts(), r.callCounts()
	var noWatch [2]bool
	endsWatch := false
	switch st.Kind {
	case diffStepEvent, diffStepBookmark, diffStepClose, diffStepFail:
		endsWatch = st.Kind == diffStepClose || st.Kind == diffStepFail
		for i, side := range r.sides {
			noWatch[i] = !r.sendToWatch(side.fake(), st)
		}
	case diffStepAdvance:
		time.Sleep(st.D)
	case diffStepAddHandler:
		r.addHandler(st.ID, st.Resync, true, st.Blocked)
	case diffStepRemoveHandler:
		h := r.handler(st.ID)
		if h == nil || h.removed || (st.Shutdown && len(h.gates) > 0) {
			return
		}
		h.removed = true
		if len(h.gates) > 0 {
			r.cov.add("step: handler removed while blocked in a call", 1)
		}
		for i, side := range r.sides {
			if h.handle[i] == nil {
				continue
			}
			if err := side.removeHandler(h.handle[i], st.Shutdown); err != nil {
				r.traces[i].Errors = append(r.traces[i].Errors, fmt.Sprintf("removing h%d: %v", st.ID, err))
			}
		}
	case diffStepArmGate:
		h := r.handler(st.ID)
		if h == nil || h.removed {
			return
		}
		for i := range r.sides {
			h.gates = append(h.gates, h.rec[i].arm())
		}
	case diffStepReleaseGate:
		h := r.handler(st.ID)
		if h == nil {
			return
		}
		for _, gate := range h.gates {
			close(gate)
		}
		h.gates = nil
	}
	synctest.Wait()
	waited := st.Kind == diffStepAdvance
	if endsWatch && !(r.watching(0) && r.watching(1)) {
		// A side backs off before it lists or watches again.
		time.Sleep(diffBackoffWait)
		synctest.Wait()
		waited = true
	}
	after := r.callCounts()
	relisted := after[0].lists > calls[0].lists || after[1].lists > calls[1].lists
	r.watch.observe(st, after[0].watches > calls[0].watches && after[1].watches > calls[1].watches, waited)
	r.cover(st, relisted)
	r.noteLists(before, relisted)
	if h := r.handler(st.ID); st.Kind == diffStepReleaseGate && h != nil {
		r.closeLists(h)
	}
	r.record(st.String(), noWatch)
}

// sendToWatch delivers st to fake's open watch and reports whether there
// was one. The harness never blocks waiting for a watch: that would let the
// bubble's clock run.
func (r *diffRunner) sendToWatch(fake *informertest.FakeListerWatcher[*corev1.Pod], st diffStep) bool {
	if !fake.Watching() {
		return false
	}
	var err error
	switch st.Kind {
	case diffStepEvent:
		err = fake.Send(r.ctx, watch.Event{Type: st.EventType, Object: st.Obj.pod()})
	case diffStepBookmark:
		err = fake.Bookmark(r.ctx, st.RV)
	case diffStepClose:
		fake.SetList(st.RV, diffPods(st.List)...)
		if st.WatchErr != 0 {
			fake.FailNextWatch(diffStatusError(st.WatchErr))
		}
		err = fake.CloseWatch(r.ctx)
	case diffStepFail:
		fake.SetList(st.RV, diffPods(st.List)...)
		err = fake.FailWatch(r.ctx, diffStatusError(st.Code))
	}
	return err == nil
}

// diffStatusError returns an API error with the HTTP status code.
func diffStatusError(code int) error {
	switch code {
	case 410:
		return apierrors.NewResourceExpired("difftest: resource version too old")
	case 429:
		return apierrors.NewTooManyRequests("difftest: slow down", 1)
	default:
		return apierrors.NewInternalError(fmt.Errorf("difftest: server error"))
	}
}

func (r *diffRunner) watching(i int) bool {
	return r.sides[i].fake().Watching()
}

// record appends both sides' states after a step.
func (r *diffRunner) record(step string, noWatch [2]bool) {
	for i, side := range r.sides {
		s := diffInformerState{
			Step:        step,
			NoWatch:     noWatch[i],
			Watching:    r.watching(i),
			WatchErrors: side.errors().take(),
			HasSynced:   side.hasSynced(),
			LastSyncRV:  side.lastSyncResourceVersion(),
			StoreRV:     side.storeResourceVersion(),
			Store:       side.stored(),
		}
		for _, h := range r.handlers {
			hs := diffHandlerState{ID: h.id, Calls: h.rec[i].count()}
			if h.handle[i] != nil && !h.removed {
				hs.Synced = side.handlerSynced(h.handle[i])
				if i == 0 && !hs.Synced && s.HasSynced {
					r.cov.add("states with a handler not synced yet (blocked in its initial adds)", 1)
				}
			}
			s.Handlers = append(s.Handlers, hs)
		}
		r.traces[i].States = append(r.traces[i].States, s)
	}
}
