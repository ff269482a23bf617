package informer

// Differential test of Informer[T] against client-go v0.37.2's
// SharedIndexInformer with its default feature gates. Both sides use
// list+watch, or (in a third of the scenarios) both use streaming lists:
// the fake declares them unsupported or supported to both alike.
//
// A scenario is an initial list (whose first requests may fail), handlers
// added before Run, and steps: watch events (adds, updates, deletes,
// repeated resource versions, deletes of unknown objects, re-creations
// under a new UID), bookmarks, watch ends (normal close, possibly followed
// by a failing watch request; Error events "410 Gone", 500, 429) with a new
// list for the relist, time advances (resyncs), handlers added, removed and
// shut down while running, and handlers blocked in a call while events pile
// up. Each side records, per handler, every call (callback, key, UID,
// resource versions, isInInitialList, final-state-unknown, resync) and after
// every step its HasSynced, LastSyncResourceVersion, store resource version,
// store content, whether it is watching, the errors it reported to its
// watch error handler, per-handler HasSynced and call count. synctest also
// checks that no goroutine of either informer outlives Run.
//
// Determinism: each scenario runs in a testing/synctest bubble. Time is
// virtual and only moves when the harness sleeps; after every step the
// harness waits until every goroutine of both informers is blocked
// (synctest.Wait), so both have processed the step completely. What is left
// to chance is handled as follows:
//
//   - Backoff before a relist or re-watch is jittered (randomly, per side).
//     After a step that ends a watch, the harness advances the clock by
//     diffBackoffWait, longer than any backoff, so both sides are watching
//     again whatever their jitter.
//   - A relist restarts the reflector's resync timer at that jittered
//     instant, which would make resync timing differ between the sides. So
//     scenarios with resync ("resync mode") never relist after the initial
//     list: no "410"/500 errors, no failing initial list, and no closes of a
//     watch that is younger than a second without events (client-go relists
//     after such a "very short watch"). 429 errors only re-watch, which
//     keeps the resync timer. Scenarios without resync have no timer and
//     exercise every relist.
//   - Resyncs then fire at exact multiples of the check period counted from
//     the initial list at time 0, and steps happen at instants that are
//     diffStepOffset off those multiples, so a step never coincides with a
//     resync: which resyncs happened before a step is exact.
//   - Orders that client-go leaves to Go's map iteration are normalized in
//     diffNormalize (the only place), see there.
//   - client-go reports some failures through utilruntime.HandleError,
//     whose rate limiter sleeps for a time computed from a process-wide
//     timestamp, arbitrary in a bubble: the harness installs its own watch
//     error handler, and transform failures are tested in real time
//     (TestDiffInformerTransformFailures).

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/watch"
)

const (
	// diffResyncUnit is the unit of resync periods and time advances.
	diffResyncUnit = 10 * time.Second
	// diffStepOffset keeps step instants off the resync instants, which
	// are whole seconds (periods are at least one second).
	diffStepOffset = 500 * time.Millisecond
	// diffBackoffWait exceeds the longest reflector backoff (30 s capped,
	// jitter up to doubling it).
	diffBackoffWait = 70 * time.Second
)

// diffStepKind is a kind of scenario step.
type diffStepKind uint8

const (
	diffStepEvent         diffStepKind = iota // a watch event
	diffStepBookmark                          // a watch bookmark
	diffStepClose                             // the watch ends normally
	diffStepFail                              // the watch ends with an Error event (410, 500 or 429)
	diffStepAdvance                           // the clock advances
	diffStepAddHandler                        // a handler is added to the running informer
	diffStepRemoveHandler                     // a handler is removed (or shut down)
	diffStepArmGate                           // a handler's next call will block
	diffStepReleaseGate                       // a blocked (or armed) handler is released
)

// diffStep is one scenario step.
type diffStep struct {
	Kind      diffStepKind
	EventType watch.EventType
	Obj       diffObj
	// List and RV are the list the fake serves from this step on (close and
	// fail steps): the relist sees it.
	List []diffObj
	RV   string
	// Code is the HTTP status of a fail step.
	Code int
	// WatchErr, if not 0, is the HTTP status with which the next watch
	// request fails (close steps).
	WatchErr int
	// D is the advance of the clock.
	D time.Duration
	// ID names a handler; Resync is its requested resync period (nil: the
	// informer's default). Blocked: the handler's first call blocks (in its
	// initial adds) until released.
	ID       int
	Resync   *time.Duration
	Blocked  bool
	Shutdown bool
}

func (s diffStep) String() string {
	switch s.Kind {
	case diffStepEvent:
		return fmt.Sprintf("%s %s", s.EventType, s.Obj)
	case diffStepBookmark:
		return "Bookmark rv=" + s.RV
	case diffStepClose:
		if s.WatchErr != 0 {
			return fmt.Sprintf("CloseWatch, next watch request fails %d (list rv=%s %s)", s.WatchErr, s.RV, diffJoin(s.List))
		}
		return fmt.Sprintf("CloseWatch (list rv=%s %s)", s.RV, diffJoin(s.List))
	case diffStepFail:
		return fmt.Sprintf("FailWatch %d (list rv=%s %s)", s.Code, s.RV, diffJoin(s.List))
	case diffStepAdvance:
		return "Advance " + s.D.String()
	case diffStepAddHandler:
		if s.Blocked {
			return fmt.Sprintf("AddHandler h%d resync=%s, blocking in its first call", s.ID, diffPeriodString(s.Resync))
		}
		return fmt.Sprintf("AddHandler h%d resync=%s", s.ID, diffPeriodString(s.Resync))
	case diffStepRemoveHandler:
		if s.Shutdown {
			return fmt.Sprintf("ShutDownHandler h%d", s.ID)
		}
		return fmt.Sprintf("RemoveHandler h%d", s.ID)
	case diffStepArmGate:
		return fmt.Sprintf("BlockNextCall h%d", s.ID)
	case diffStepReleaseGate:
		return fmt.Sprintf("Release h%d", s.ID)
	}
	return "?"
}

func diffPeriodString(p *time.Duration) string {
	if p == nil {
		return "default"
	}
	return p.String()
}

// diffErrorCodes are the HTTP statuses of generated request failures:
// expired resource version, server error, too many requests.
var diffErrorCodes = []int{410, 500, 429}

// diffHandlerSpec is a handler added before Run; Blocked as in diffStep.
type diffHandlerSpec struct {
	ID      int
	Resync  *time.Duration
	Blocked bool
}

// diffInformerScenario is a generated informer scenario.
type diffInformerScenario struct {
	// ResyncMode: the informer or its handlers resync; no relists.
	ResyncMode  bool
	Config      diffInformerConfig
	InitialList []diffObj
	InitialRV   string
	// InitialFailures are the HTTP statuses with which the first list
	// requests (watch requests with streaming lists) fail; not in resync
	// mode, as the retries' backoff would move the resync timer.
	InitialFailures []int
	Handlers        []diffHandlerSpec
	Steps           []diffStep
}

func (s diffInformerScenario) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "resyncMode=%v informer resync=%s transform=%v streaming=%v\n", s.ResyncMode, s.Config.ResyncPeriod, s.Config.Transform, s.Config.Streaming)
	fmt.Fprintf(&b, "  initial list rv=%s %s\n", s.InitialRV, diffJoin(s.InitialList))
	if len(s.InitialFailures) > 0 {
		fmt.Fprintf(&b, "  the first list requests fail with %v\n", s.InitialFailures)
	}
	for _, h := range s.Handlers {
		blocked := ""
		if h.Blocked {
			blocked = ", blocking in its first call"
		}
		fmt.Fprintf(&b, "  handler h%d resync=%s (added before Run)%s\n", h.ID, diffPeriodString(h.Resync), blocked)
	}
	for i, st := range s.Steps {
		fmt.Fprintf(&b, "  %2d %s\n", i, st)
	}
	return b.String()
}

// diffWatchModel tracks whether ending the watch now makes the reflectors
// relist: client-go (and this library) treat a watch that ends within a
// second of its start without any event as broken. The generator predicts
// it (apply), the runner observes it (observe); both use allowed to keep
// resync mode free of relists, even in a shrunk scenario.
type diffWatchModel struct {
	// fresh: the watch was opened at the current instant and has carried
	// no event yet.
	fresh bool
}

// observe sets the model from what the runner saw a step do: whether a
// watch was opened during the step, and whether the clock moved after.
func (m *diffWatchModel) observe(st diffStep, newWatch, waited bool) {
	switch st.Kind {
	case diffStepAddHandler, diffStepRemoveHandler, diffStepArmGate, diffStepReleaseGate:
		return // the watch is untouched
	}
	m.fresh = newWatch && !waited
}

// apply updates the model after st and reports whether st relisted.
func (m *diffWatchModel) apply(st diffStep) (relisted bool) {
	switch st.Kind {
	case diffStepEvent, diffStepBookmark, diffStepAdvance:
		m.fresh = false
	case diffStepClose:
		// A close of a fresh watch relists after a backoff (and the
		// harness waits it out); otherwise the reflector watches again at
		// once, and the new watch is fresh. A failing watch request
		// backs off (429) or relists after a backoff (other errors).
		relisted = m.fresh || (st.WatchErr != 0 && st.WatchErr != 429)
		m.fresh = !m.fresh && st.WatchErr == 0
	case diffStepFail:
		// Every error ends in a backoff the harness waits out; 410 and 500
		// relist, 429 re-watches.
		relisted = st.Code != 429
		m.fresh = false
	}
	return relisted
}

// allowed reports whether st may run in a scenario of the given mode.
func (m *diffWatchModel) allowed(st diffStep, resyncMode bool) bool {
	if !resyncMode {
		return true
	}
	switch st.Kind {
	case diffStepClose:
		return !m.fresh && (st.WatchErr == 0 || st.WatchErr == 429)
	case diffStepFail:
		return st.Code == 429
	}
	return true
}

// diffInformerGen generates informer scenarios.
type diffInformerGen struct {
	c     diffChooser
	g     *diffObjGen
	sc    diffInformerScenario
	watch diffWatchModel
	// store is the content the informers' stores should have, by key
	// index: it makes updates and deletes hit known objects.
	store map[int]diffObj
	// active handlers, and which of them have an armed gate.
	active, gated map[int]bool
	nextID        int
}

func diffGenInformerScenario(c diffChooser) diffInformerScenario {
	gen := &diffInformerGen{c: c, g: newDiffObjGen(c), store: map[int]diffObj{},
		active: map[int]bool{}, gated: map[int]bool{}, watch: diffWatchModel{fresh: true}}
	return gen.generate()
}

// resyncPeriod picks a handler's requested resync period. 500ms is raised
// to the one-second minimum (and, before Run, lowers the check period).
func (gen *diffInformerGen) resyncPeriod() *time.Duration {
	var d time.Duration
	switch k := gen.c.intn(20); {
	case k < 6:
		return nil
	case k < 9:
		d = 0
	case k < 10:
		d = 500 * time.Millisecond
	default:
		d = time.Duration(1+gen.c.intn(3)) * diffResyncUnit
	}
	return &d
}

func (gen *diffInformerGen) generate() diffInformerScenario {
	c := gen.c
	sc := &gen.sc
	sc.ResyncMode = diffChance(c, 1, 3)
	sc.Config.Transform = diffChance(c, 1, 3)
	sc.Config.Streaming = diffChance(c, 1, 3)
	if sc.ResyncMode {
		sc.Config.ResyncPeriod = time.Duration(c.intn(3)) * diffResyncUnit
	}
	sc.InitialList = gen.g.list(5)
	sc.InitialRV = gen.g.nextRV()
	if !sc.ResyncMode && diffChance(c, 1, 5) {
		for range 1 + c.intn(2) {
			sc.InitialFailures = append(sc.InitialFailures, diffErrorCodes[c.intn(len(diffErrorCodes))])
		}
		gen.watch.fresh = false // the harness may have waited for a retry
	}
	gen.setStore(sc.InitialList)
	for range 1 + c.intn(3) {
		spec := diffHandlerSpec{ID: gen.nextID, Resync: gen.resyncPeriod(), Blocked: diffChance(c, 1, 8)}
		sc.Handlers = append(sc.Handlers, spec)
		gen.active[spec.ID] = true
		if spec.Blocked {
			gen.gated[spec.ID] = true
		}
		gen.nextID++
	}
	n := 5 + c.intn(20)
	if _, fuzzing := c.(*diffBytes); fuzzing {
		n = 60
	}
	for len(sc.Steps) < n && !c.exhausted() {
		st, ok := gen.step()
		if !ok || !gen.watch.allowed(st, sc.ResyncMode) {
			continue
		}
		gen.apply(st)
		sc.Steps = append(sc.Steps, st)
	}
	return *sc
}

// setStore sets the model store to a list.
func (gen *diffInformerGen) setStore(list []diffObj) {
	clear(gen.store)
	for _, o := range list {
		gen.store[diffKeyIndex(o)] = o
	}
}

// diffKeyIndex returns the key number of o.
func diffKeyIndex(o diffObj) int {
	return slices.Index(diffNamespaces, o.Namespace)*len(diffNames) + slices.Index(diffNames, o.Name)
}

// apply updates the generator's model after st.
func (gen *diffInformerGen) apply(st diffStep) {
	switch st.Kind {
	case diffStepEvent:
		if !st.Obj.FailTransform {
			if st.EventType == watch.Deleted {
				delete(gen.store, diffKeyIndex(st.Obj))
			} else {
				gen.store[diffKeyIndex(st.Obj)] = st.Obj
			}
		}
	case diffStepAddHandler:
		gen.active[st.ID] = true
		if st.Blocked {
			gen.gated[st.ID] = true
		}
	case diffStepRemoveHandler:
		delete(gen.active, st.ID) // a gate stays armed until released
	case diffStepArmGate:
		gen.gated[st.ID] = true
	case diffStepReleaseGate:
		delete(gen.gated, st.ID)
	}
	if gen.watch.apply(st) {
		gen.setStore(st.List)
	}
}

// pickHandler returns a handler ID from ids (sorted), or false if empty.
func (gen *diffInformerGen) pickHandler(ids map[int]bool) (int, bool) {
	if len(ids) == 0 {
		return 0, false
	}
	sorted := make([]int, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	slices.Sort(sorted)
	return sorted[gen.c.intn(len(sorted))], true
}

// storedKey returns a key index present in the model store, or a random
// one when the store is empty or (1 in 4) anyway.
func (gen *diffInformerGen) storedKey() (int, bool) {
	if len(gen.store) == 0 || diffChance(gen.c, 1, 4) {
		i := gen.c.intn(diffKeyCount)
		_, ok := gen.store[i]
		return i, ok
	}
	keys := make([]int, 0, len(gen.store))
	for k := range gen.store {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys[gen.c.intn(len(keys))], true
}

// event generates a watch event.
func (gen *diffInformerGen) event() diffStep {
	c, g := gen.c, gen.g
	i, known := gen.storedKey()
	ns, name := diffKey(i)
	obj := diffObj{Namespace: ns, Name: name, UID: g.uid(i, false), RV: g.nextRV()}
	var t watch.EventType
	switch k := c.intn(100); {
	case k < 35:
		t = watch.Added
		if known && diffChance(c, 2, 3) {
			obj.UID = g.uid(i, true) // re-created under the same name
		}
	case k < 75:
		t = watch.Modified
		if known && diffChance(c, 1, 5) {
			obj.RV = gen.store[i].RV // the resource version repeats
		}
	default:
		t = watch.Deleted
	}
	// No object the transform rejects: TestDiffInformerTransformFailures
	// covers those, in real time (see there why not in a bubble).
	return diffStep{Kind: diffStepEvent, EventType: t, Obj: obj}
}

// relist generates the list a relist finds: each stored object kept,
// changed (sometimes re-created) or gone, and some new ones, in random order.
func (gen *diffInformerGen) relist() []diffObj {
	c, g := gen.c, gen.g
	var list []diffObj
	for i := range diffKeyCount {
		old, known := gen.store[i]
		switch {
		case known && diffChance(c, 1, 3):
			list = append(list, old)
		case known && diffChance(c, 1, 2):
			list = append(list, diffObj{Namespace: old.Namespace, Name: old.Name, UID: g.uid(i, diffChance(c, 1, 5)), RV: g.nextRV()})
		case !known && diffChance(c, 1, 6):
			ns, name := diffKey(i)
			list = append(list, diffObj{Namespace: ns, Name: name, UID: g.uid(i, true), RV: g.nextRV()})
		}
	}
	for k := len(list) - 1; k > 0; k-- {
		j := c.intn(k + 1)
		list[k], list[j] = list[j], list[k]
	}
	return list
}

// step generates one step; false means "nothing fits, draw again".
func (gen *diffInformerGen) step() (diffStep, bool) {
	c := gen.c
	switch k := c.intn(100); {
	case k < 45:
		return gen.event(), true
	case k < 50:
		return diffStep{Kind: diffStepBookmark, RV: gen.g.nextRV()}, true
	case k < 58:
		st := diffStep{Kind: diffStepClose, List: gen.relist(), RV: gen.g.nextRV()}
		if diffChance(c, 1, 4) {
			st.WatchErr = diffErrorCodes[c.intn(len(diffErrorCodes))]
		}
		return st, true
	case k < 66:
		code := []int{410, 410, 500, 429}[c.intn(4)]
		return diffStep{Kind: diffStepFail, Code: code, List: gen.relist(), RV: gen.g.nextRV()}, true
	case k < 73:
		return diffStep{Kind: diffStepAdvance, D: time.Duration(1+c.intn(3)) * diffResyncUnit}, true
	case k < 79:
		if len(gen.active) >= 4 {
			return diffStep{}, false
		}
		gen.nextID++
		return diffStep{Kind: diffStepAddHandler, ID: gen.nextID - 1, Resync: gen.resyncPeriod(), Blocked: diffChance(c, 1, 6)}, true
	case k < 85:
		id, ok := gen.pickHandler(gen.active)
		// Shutting down waits for the handler: not while it may be blocked.
		return diffStep{Kind: diffStepRemoveHandler, ID: id, Shutdown: !gen.gated[id] && diffChance(c, 1, 2)}, ok
	case k < 92:
		ungated := map[int]bool{}
		for id := range gen.active {
			if !gen.gated[id] {
				ungated[id] = true
			}
		}
		id, ok := gen.pickHandler(ungated)
		return diffStep{Kind: diffStepArmGate, ID: id}, ok
	default:
		id, ok := gen.pickHandler(gen.gated)
		return diffStep{Kind: diffStepReleaseGate, ID: id}, ok
	}
}
