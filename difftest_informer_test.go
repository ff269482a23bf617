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
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
	// bookmarksOnly: the watch was opened at the current instant and has
	// carried bookmarks only. Closing it is a deliberate difference
	// (docs/semantics.md): client-go watches again at once, this library
	// backs off and relists as after a fresh watch. Scenarios never close
	// such a watch; TestReflectorBookmarkOnlyShortWatchesBackOff covers it.
	bookmarksOnly bool
}

// observe sets the model from what the runner saw a step do: whether a
// watch was opened during the step, and whether the clock moved after.
func (m *diffWatchModel) observe(st diffStep, newWatch, waited bool) {
	switch st.Kind {
	case diffStepAddHandler, diffStepRemoveHandler, diffStepArmGate, diffStepReleaseGate:
		return // the watch is untouched
	}
	young := m.fresh || m.bookmarksOnly
	m.fresh = newWatch && !waited
	m.bookmarksOnly = st.Kind == diffStepBookmark && young && !newWatch && !waited
}

// apply updates the model after st and reports whether st relisted.
func (m *diffWatchModel) apply(st diffStep) (relisted bool) {
	switch st.Kind {
	case diffStepBookmark:
		m.bookmarksOnly = m.fresh || m.bookmarksOnly
		m.fresh = false
	case diffStepEvent, diffStepAdvance:
		m.fresh, m.bookmarksOnly = false, false
	case diffStepClose:
		m.bookmarksOnly = false
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
		m.fresh, m.bookmarksOnly = false, false
	}
	return relisted
}

// allowed reports whether st may run in a scenario of the given mode.
func (m *diffWatchModel) allowed(st diffStep, resyncMode bool) bool {
	if st.Kind == diffStepClose && m.bookmarksOnly {
		return false
	}
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

// diffCompareInformers runs sc and returns a description of how the sides
// differ (empty if they do not): cmp.Diff of the traces (-client-go +ours),
// or the failure of the run.
func diffCompareInformers(t *testing.T, sc diffInformerScenario, cov *diffCoverage) string {
	traces, failure := diffRunInformers(t, sc, cov)
	if failure != "" {
		return failure
	}
	if reflect.DeepEqual(traces[0], traces[1]) {
		return "" // fast path: cmp.Diff costs more than the scenario
	}
	return cmp.Diff(traces[0], traces[1])
}

// diffCheckInformers runs one scenario and, on a difference, shrinks it and
// reports the seed (or fuzz input), the smallest failing scenario and the
// diff.
func diffCheckInformers(t *testing.T, what string, sc diffInformerScenario, cov *diffCoverage) bool {
	t.Helper()
	diff := diffCompareInformers(t, sc, cov)
	if diff == "" {
		return true
	}
	small := sc
	small.Steps = diffShrink(sc.Steps, func(steps []diffStep) bool {
		c := sc
		c.Steps = steps
		return diffCompareInformers(t, c, nil) != ""
	})
	t.Errorf("Informer differs from client-go's SharedIndexInformer for %s.\nSmallest failing scenario:\n%s(-client-go +ours):\n%s",
		what, small, diffCompareInformers(t, small, nil))
	return false
}

// TestDiffInformer runs DIFFTEST_SCENARIOS (default 10,000) random
// scenarios through both informers, in parallel shards. Replay one with
// DIFFTEST_SEED=<seed> DIFFTEST_SCENARIOS=1.
func TestDiffInformer(t *testing.T) {
	t.Parallel()
	first, n := diffFirstSeed(t), uint64(diffScenarioCount(t))
	shards := uint64(max(1, min(2*runtime.GOMAXPROCS(0), 8)))
	cov := &diffCoverage{}
	t.Cleanup(func() { t.Logf("What the scenarios exercised (client-go's side):\n%s", cov.report()) })
	for shard := range shards {
		t.Run(fmt.Sprintf("shard%d", shard), func(t *testing.T) {
			t.Parallel()
			failures := 0
			for seed := first + shard; seed < first+n; seed += shards {
				sc := diffGenInformerScenario(newDiffSeeded(seed))
				if !diffCheckInformers(t, fmt.Sprintf("seed %d (DIFFTEST_SEED=%d DIFFTEST_SCENARIOS=1)", seed, seed), sc, cov) {
					if failures++; failures == 3 {
						t.Fatal("stopping after 3 failing scenarios")
					}
				}
			}
		})
	}
}

// FuzzDiffInformer is TestDiffInformer driven by fuzz input.
func FuzzDiffInformer(f *testing.F) {
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		diffCheckInformers(t, fmt.Sprintf("fuzz input %q", data), diffGenInformerScenario(&diffBytes{data: data}), nil)
	})
}
