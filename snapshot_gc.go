package informer

import (
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync"

	"github.com/kubetyped/informer/internal/gcwork"
)

// snapshotHeapFactor estimates the heap a restore's objects take from the
// snapshot file's size: 5,000 production-like pods as records of
// references, 35 MB on disk, take about 94 MB decoded
// (BenchmarkSnapshotRestore's peak heap); at 2, the collector ran once at
// the end of each restore.
const snapshotHeapFactor = 3

// restoreGC is the state of raiseGCGoal: the restores under way and the
// GOGC they raised the goal from.
var restoreGC struct {
	sync.Mutex
	// expected is the heap the restores under way will add.
	expected int64
	// active counts them; saved is GOGC before the first of them; set is
	// the GOGC they set last, so that one set by someone else since is
	// left alone.
	active, saved, set int
	// settling, once the last restore ended, is what the next collection
	// sets GOGC back to saved for (settleGCGoal).
	settling *gcSettle
}

// gcSettle is a pending return to the GOGC the restores raised the goal
// from (settleGCGoal). Its calls after each collection (gcwork.AfterEachGC)
// stop once it is collected; the pointer field keeps it out of the tiny
// allocator, whose blocks pointer-free values this small share with live
// ones, so that it could otherwise never be collected and its calls never
// stop.
type gcSettle struct {
	done bool
	_    *byte
}

// raiseGCGoal raises the garbage collector's goal (GOGC, through
// debug.SetGCPercent) so that the heap can grow by expected bytes, the
// objects a restore will decode, before the collector runs, and returns
// the function that lowers it back once the restore ends (settleGCGoal,
// for the last of concurrent restores).
//
// Why: a restore starts a process with an almost empty heap and fills it
// with objects that stay; at the default GOGC the collector would run each
// time the heap doubled, marking the growing heap again each time, for
// nothing, since a restore makes little garbage. Restoring 5,000
// production-like pods (BenchmarkSnapshotRestore, docs/restart.md) took
// 6 collections and 50-56 µs of CPU per pod with the file read in pieces
// at the default goal, 0.6 collection and 33 µs with the goal raised,
// and 2 collections and 37 µs when the whole file was read at once (its
// 48-MB buffer then raised the goal, and the peak heap to 143 MB, against
// 100 MB). The memory limit (GOMEMLIMIT) still applies, GOGC=off is left
// alone, and garbage made elsewhere in the process meanwhile is collected
// once the heap reaches the raised goal: the heap never grows past its
// live size plus expected before a collection.
func raiseGCGoal(expected int64) (lower func()) {
	samples := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/heap/live:bytes"}}
	restoreGC.Lock()
	defer restoreGC.Unlock()
	metrics.Read(samples)
	// GOGC=off reads as -1 made unsigned.
	gogc := samples[0].Value.Uint64()
	if restoreGC.active == 0 && (restoreGC.settling == nil || gogc != uint64(restoreGC.set)) {
		if samples[0].Value.Kind() != metrics.KindUint64 || gogc == 0 || gogc > math.MaxInt32 {
			return func() {} // off, or unreadable: left alone
		}
		restoreGC.saved = int(gogc)
	}
	if restoreGC.settling != nil {
		restoreGC.settling.done = true // this restore raises it again
		restoreGC.settling = nil
	}
	restoreGC.active++
	restoreGC.expected += expected
	setRestoreGCPercent(samples[1].Value.Uint64())
	return func() {
		restoreGC.Lock()
		defer restoreGC.Unlock()
		restoreGC.active--
		restoreGC.expected -= expected
		if restoreGC.active == 0 {
			settleGCGoal()
			return
		}
		metrics.Read(samples)
		setRestoreGCPercent(samples[1].Value.Uint64())
	}
}

// setRestoreGCPercent sets GOGC so that the goal, live bytes plus GOGC
// percent of them, leaves room for restoreGC.expected bytes beyond what
// GOGC allowed before. Call with restoreGC held.
func setRestoreGCPercent(live uint64) {
	live = max(live, 4<<20) // the runtime's smallest goal
	extra := 100 * float64(restoreGC.expected) / float64(live)
	setGCPercent(int(min(float64(restoreGC.saved)+extra, math.MaxInt32)))
}

// setGCPercent sets GOGC and notes it in restoreGC.set. Call with
// restoreGC held.
func setGCPercent(percent int) {
	debug.SetGCPercent(percent)
	restoreGC.set = percent
}

// settleGCGoal ends the last restore's raised goal: it sets GOGC so that
// the next collection comes when the heap has grown by the saved GOGC
// percent of what it holds now, and sets GOGC back to saved once that
// collection has run. Call with restoreGC held.
//
// Why not set saved at once: the goal is a percentage of the heap the
// last collection found live, from before the restore, so the collector
// would run at once and mark the restored heap, all of it live, to learn
// its size; the goal settleGCGoal sets is the one that collection would
// leave. In E4 (a) (docs/restart.md) that collection was 30 of the 210
// ms of a warm start's CPU profile.
func settleGCGoal() {
	samples := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(samples)
	live, heap := max(samples[0].Value.Uint64(), 4<<20), samples[1].Value.Uint64()
	want := float64(heap) * (1 + float64(restoreGC.saved)/100)
	setGCPercent(int(min(max(100*want/float64(live)-100, float64(restoreGC.saved)), math.MaxInt32)))
	settle := &gcSettle{}
	restoreGC.settling = settle
	gcwork.AfterEachGC(settle, (*gcSettle).afterGC)
}

// afterGC sets GOGC back to what it was before the restores, unless a
// restore has started since or someone else has set GOGC meanwhile (it
// runs on the runtime's cleanup goroutine: it never waits for restoreGC,
// and retries after the next collection).
func (s *gcSettle) afterGC() {
	if !restoreGC.TryLock() {
		return
	}
	defer restoreGC.Unlock()
	if !s.done && restoreGC.settling == s {
		samples := []metrics.Sample{{Name: "/gc/gogc:percent"}}
		metrics.Read(samples)
		if samples[0].Value.Uint64() == uint64(restoreGC.set) {
			debug.SetGCPercent(restoreGC.saved)
		}
		restoreGC.settling = nil
	}
	s.done = true
}
