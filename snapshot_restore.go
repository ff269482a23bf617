package informer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/kubetyped/informer/internal/gcwork"
	"github.com/kubetyped/informer/internal/wire"
)

// snapshotter restores an informer's cache from its snapshot at start and
// writes snapshots while it runs and when it stops (see SnapshotOptions).
type snapshotter[T Object] struct {
	opts  SnapshotOptions
	scope snapshotScope
	// off, if set, says why the informer keeps no snapshot although a
	// directory is configured; Run logs it once.
	off string

	// itemType is the objects' type (see snapshotItemType).
	itemType reflect.Type
	// clusterUID reads the UID of the server's cluster (see
	// readClusterUID), nil if the ListerWatcher cannot; uid is what it
	// read, which saves record.
	clusterUID func(context.Context) (string, error)
	uid        atomic.Pointer[string]

	// set at start, in Run's goroutine
	path  string
	codec snapshotCodec[T]
	lock  *snapshotLock

	// saveMu serializes saves (periodic and final) and guards failing.
	saveMu sync.Mutex
	// failing is set while saves fail, so that a run of failures is
	// logged once.
	failing bool

	saved, saveErrors, lastSaveBytes    atomic.Int64
	restored, restoredObjects, rejected atomic.Int64
	resumedWatches, restoreRelists      atomic.Int64
	removedTempFiles                    atomic.Int64
	// saving is set by a start that keeps snapshots.
	saving atomic.Bool
}

// newSnapshotter returns the snapshotter of an informer of the resolved
// configuration cfg over lw, or nil when it names no snapshot directory.
func newSnapshotter[T Object](cfg config[T], lw ListerWatcher[T]) *snapshotter[T] {
	so := cfg.Snapshot
	if so.Dir == "" {
		return nil
	}
	s := &snapshotter[T]{opts: so}
	itemType, typeErr := snapshotItemType[T](so.Example)
	var listed listedScope
	if typeErr == nil {
		s.itemType = itemType
		s.scope, listed = newSnapshotScope(cfg, itemType, lw)
		s.clusterUID = listed.clusterUID
	}
	switch {
	case typeErr != nil:
		s.off = typeErr.Error()
	case sensitivity(itemType, listed.resource, so) != "":
		s.off = sensitivity(itemType, listed.resource, so)
	case cfg.transform() != nil && so.TransformID == "":
		s.off = "the informer has a Transform and Snapshot.TransformID does not name it"
	case cfg.dynamicShard():
		s.off = "a dynamic shard's cache has no single resource version to resume at"
	}
	return s
}

// active reports whether start set the snapshotter up to save: false for
// a nil snapshotter, before start, and when start gave up.
func (s *snapshotter[T]) active() bool {
	return s != nil && s.saving.Load()
}

// stats returns the counters.
func (s *snapshotter[T]) stats() SnapshotStats {
	if s == nil {
		return SnapshotStats{}
	}
	return SnapshotStats{
		Saved:           s.saved.Load(),
		SaveErrors:      s.saveErrors.Load(),
		LastSaveBytes:   s.lastSaveBytes.Load(),
		Restored:        s.restored.Load(),
		RestoredObjects: s.restoredObjects.Load(),
		Rejected:        s.rejected.Load(),
		ResumedWatches:  s.resumedWatches.Load(),
		RestoreRelists:  s.restoreRelists.Load(),

		RemovedTempFiles: s.removedTempFiles.Load(),
	}
}

// start takes the snapshot's lock and, if a snapshot of this informer's
// scope is there, hands its objects to r as its starting point. They are
// decoded with the table lw decodes with, if it interns, so that restored
// objects share strings (and sub-objects, if it shares them) with those
// decoded later, and passed through q's deduplication if it has one. It
// marks the snapshotter active when the informer may write snapshots.
// Every failure is logged once and leaves a cold start.
func (s *snapshotter[T]) start(logger klog.Logger, r *Reflector[T], lw ListerWatcher[T], q *eventQueue[T]) {
	logger = klog.LoggerWithValues(logger, "snapshotDir", s.opts.Dir)
	if s.off != "" {
		logger.Info("Warning: keeping no snapshot", "reason", s.off)
		return
	}
	if r == nil {
		logger.Info("Warning: keeping no snapshot", "reason", "a dynamic shard's cache has no single resource version to resume at")
		return
	}
	if err := prepareSnapshotDir(s.opts.Dir); err != nil {
		s.rejected.Add(1)
		logger.Error(err, "Keeping no snapshot; starting cold")
		return
	}
	s.path = filepath.Join(s.opts.Dir, snapshotFileName(s.scope))
	lock, err := lockSnapshot(s.path)
	if err != nil {
		s.rejected.Add(1)
		logger.Error(err, "Keeping no snapshot; starting cold")
		return
	}
	s.lock = lock
	s.removeTemps(logger)
	d, _ := describe(lw)
	s.codec = newSnapshotCodecOf[T](d.interns, s.itemType)
	start := time.Now()
	snap, err := readSnapshot(s.path, s.scope, s.codec)
	if err == nil {
		if _, cmpErr := resourceversion.CompareResourceVersion(snap.header.ResourceVersion, snap.header.ResourceVersion); cmpErr != nil {
			err = errors.Join(errSnapshotUnusable, cmpErr)
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		logger.V(2).Info("No snapshot to restore; starting cold", "path", s.path)
		s.saving.Store(true)
		return
	case err != nil:
		s.rejected.Add(1)
		logger.Info("Warning: not restoring the snapshot; starting cold", "path", s.path, "err", err)
		s.saving.Store(true)
		return
	}
	if q.intern != nil {
		for _, obj := range snap.objects {
			wire.InternObject(q.interns, q.intern, obj)
		}
	}
	s.restored.Store(1)
	s.restoredObjects.Store(int64(len(snap.objects)))
	logger.V(1).Info("Restored a snapshot; resuming from it", "path", s.path, "objects", len(snap.objects),
		"resourceVersion", snap.header.ResourceVersion, "written", snap.header.Written, "took", time.Since(start))
	r.resumeFrom(&resumePoint[T]{
		objects:         snap.objects,
		resourceVersion: snap.header.ResourceVersion,
		check:           s.checkCluster(snap.header.ClusterUID),
		onRefused: func(err error) {
			s.restored.Store(0)
			s.restoredObjects.Store(0)
			s.rejected.Add(1)
			logger.Info("Warning: not restoring the snapshot; starting cold", "path", s.path, "err", err)
		},
		onResumed:  func() { s.resumedWatches.Store(1) },
		onRelisted: func() { s.restoreRelists.Store(1) },
	})
	s.saving.Store(true)
}

// removeTemps removes, logs and counts the temporary files interrupted
// saves of this snapshot left; call it with the lock held.
func (s *snapshotter[T]) removeTemps(logger klog.Logger) {
	removed, errs := removeSnapshotTemps(s.path)
	for _, err := range errs {
		logger.Error(err, "Could not remove the temporary file of an interrupted snapshot save; the next start tries again")
	}
	if len(removed) > 0 {
		s.removedTempFiles.Add(int64(len(removed)))
		logger.Info("Removed the temporary files of interrupted snapshot saves", "files", removed)
	}
}

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

// runPeriodic writes a snapshot every Interval, once synced() is true,
// until ctx is done. Each save is paced on clk (snapshot_pace.go) and
// abandoned when ctx is done: the informer is stopping, and Run's final
// save, unpaced, follows at once.
func (s *snapshotter[T]) runPeriodic(ctx context.Context, logger klog.Logger, clk clock.WithTicker, store *Indexer[T], synced func() bool) {
	if s.opts.Interval <= 0 {
		return
	}
	ticker := clk.NewTicker(s.opts.Interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			if s.active() && synced() {
				s.save(logger, store, newSavePacer(ctx, clk))
			}
		}
	}
}

// save writes the cache's objects, consistent at the cache's resource
// version, unless the cache has none yet. The store's read lock is held
// only while the pointers are copied (listAtVersion); objects are encoded
// and written outside it, paced by pace unless it is nil. A save pace
// abandons is neither counted nor logged as a failure.
func (s *snapshotter[T]) save(logger klog.Logger, store *Indexer[T], pace *savePacer) {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	objects, rv := store.listAtVersion()
	if rv == "" {
		return
	}
	start := time.Now()
	header := snapshotHeader{Scope: s.scope, ResourceVersion: rv, Written: start.UTC().Truncate(time.Second)}
	if uid := s.uid.Load(); uid != nil {
		header.ClusterUID = *uid
	}
	n, err := writeSnapshotPaced(s.path, header, s.codec, objects, pace)
	if errors.Is(err, errSaveAbandoned) {
		logger.V(2).Info("Abandoned a periodic snapshot save: the informer is stopping", "path", s.path, "objects", len(objects))
		return
	}
	if err != nil {
		s.saveErrors.Add(1)
		if !s.failing {
			logger.Error(err, "Writing a snapshot failed; the previous one, if any, stays", "snapshotDir", s.opts.Dir)
		}
		s.failing = true
		return
	}
	if s.failing {
		logger.Info("Writing snapshots works again", "snapshotDir", s.opts.Dir)
	}
	s.failing = false
	s.saved.Add(1)
	s.lastSaveBytes.Store(n)
	logger.V(3).Info("Wrote a snapshot", "path", s.path, "objects", len(objects), "bytes", n, "resourceVersion", rv,
		"took", time.Since(start), "pacedWaits", pace.waitCount())
}

// stop releases the lock.
func (s *snapshotter[T]) stop(logger klog.Logger) {
	if s.lock == nil {
		return
	}
	if err := s.lock.unlock(); err != nil {
		logger.Error(err, "Releasing the snapshot's lock")
	}
	s.lock = nil
}

// checkCluster returns the check a reflector restored from a snapshot
// written from the cluster whose kube-system namespace has UID written
// ("" if it could not be read then) makes before it resumes: the server's
// cluster must be that one, so that a snapshot is never restored into a
// cluster created again behind the same address, nor into another one.
// Nil when the ListerWatcher cannot read the UID.
func (s *snapshotter[T]) checkCluster(written string) func(context.Context) error {
	if s.clusterUID == nil {
		return nil
	}
	return func(ctx context.Context) error {
		uid, err := s.readClusterUID(ctx)
		if err != nil {
			return err
		}
		if uid != written {
			return fmt.Errorf("%w: it was written from the cluster whose kube-system namespace has UID %q, and the server's has %q", errSnapshotForeign, written, uid)
		}
		return nil
	}
}

// identify reads the cluster's UID for the snapshots to record, unless a
// restore's check has read it, retrying with backoff until it is read or
// ctx is done. It returns at once when the ListerWatcher cannot read it.
func (s *snapshotter[T]) identify(ctx context.Context, logger klog.Logger, clk clock.WithTicker) {
	if s.clusterUID == nil {
		return
	}
	backoff := wait.Backoff{Duration: time.Second, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: time.Minute}
	for s.uid.Load() == nil {
		_, err := s.readClusterUID(ctx)
		if err == nil {
			return
		}
		logger.V(2).Info("Reading the cluster's identity for the snapshot failed; retrying", "err", err)
		timer := clk.NewTimer(backoff.Step())
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
		}
	}
}

// readClusterUID reads the cluster's UID and records it for the
// snapshots: "" when the server does not let the client read it
// (errClusterUIDUnknown); an error when the read failed otherwise.
func (s *snapshotter[T]) readClusterUID(ctx context.Context) (string, error) {
	uid, err := s.clusterUID(ctx)
	if errors.Is(err, errClusterUIDUnknown) {
		uid, err = "", nil
	}
	if err != nil {
		return "", err
	}
	s.uid.Store(&uid)
	return uid, nil
}
