package informer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

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
	// versions lists the server's versions (listedScope.versions), nil if
	// the ListerWatcher cannot.
	versions func(context.Context) (listedVersions, error)

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
	// report is what the start did, logged once synced (logSynced).
	report startReport
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
		s.clusterUID, s.versions = listed.clusterUID, listed.versions
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
		s.report.set("refused", "", err.Error())
		logger.Error(err, "Keeping no snapshot; starting cold")
		return
	}
	s.path = filepath.Join(s.opts.Dir, snapshotFileName(s.scope))
	lock, err := lockSnapshot(s.path)
	if err != nil {
		s.rejected.Add(1)
		s.report.set("refused", s.path, err.Error())
		logger.Error(err, "Keeping no snapshot; starting cold")
		return
	}
	s.lock = lock
	s.removeTemps(logger)
	d, _ := describe(lw)
	s.codec = newSnapshotCodecOf[T](d.interns, s.itemType)
	start := time.Now()
	snap, err := openSnapshot(s.path, s.scope, s.codec)
	if err == nil {
		if _, cmpErr := resourceversion.CompareResourceVersion(snap.header.ResourceVersion, snap.header.ResourceVersion); cmpErr != nil {
			snap.close()
			err = errors.Join(errSnapshotUnusable, cmpErr)
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		logger.V(2).Info("No snapshot to restore; starting cold", "path", s.path)
		s.report.set("none", s.path, "no snapshot file")
		s.saving.Store(true)
		return
	case err != nil:
		s.rejected.Add(1)
		s.report.set("refused", s.path, err.Error())
		logger.Info("Warning: not restoring the snapshot; starting cold", "path", s.path, "err", err)
		s.saving.Store(true)
		return
	}
	s.report.restoredFrom(s.path, snap.header)
	// The objects are decoded beside the reflector, which meanwhile checks
	// the cluster, reads the current resource version and opens the
	// resumed watch, whose bookmark takes about a second to come (see
	// resumeWatch): on a large snapshot the waits overlap. The reflector
	// waits for the decoding before it uses the objects, and before Run
	// returns.
	p := &resumePoint[T]{
		resourceVersion: snap.header.ResourceVersion,
		loaded:          make(chan struct{}),
		check:           s.checkCluster(snap.header.ClusterUID),
		versions:        s.versionsFor(snap.header.Objects),
		onRefused: func(err error) {
			s.refused(err)
			logger.Info("Warning: not restoring the snapshot; starting cold", "path", s.path, "err", err)
		},
		onResumed:  s.resumed,
		onRelisted: s.relisted,
	}
	go func() {
		defer close(p.loaded)
		objects, err := snap.readObjects(&p.abandon)
		if err != nil {
			p.loadErr = err
			return
		}
		if q.intern != nil {
			for _, obj := range objects {
				wire.InternObject(q.interns, q.intern, obj)
			}
		}
		s.restored.Store(1)
		s.restoredObjects.Store(int64(len(objects)))
		logger.V(1).Info("Restored a snapshot", "path", s.path, "objects", len(objects),
			"resourceVersion", snap.header.ResourceVersion, "written", snap.header.Written, "took", time.Since(start))
		p.objects = objects
	}()
	r.resumeFrom(p)
	s.saving.Store(true)
}

// versionsFor returns how a restore of a snapshot of objects objects lists
// the server's versions (resumePoint.versions), nil if it does not.
func (s *snapshotter[T]) versionsFor(objects int) func(context.Context) (listedVersions, error) {
	if objects > resumeVersionsMax {
		return nil
	}
	return s.versions
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
// and written outside it, paced by pace unless it is nil (the final
// save). A save pace abandons is neither counted nor logged as a failure.
// Every snapshot names its cluster (see identity): a periodic save before
// the identity is read is skipped, and a final save that cannot read it
// is counted as failed.
func (s *snapshotter[T]) save(logger klog.Logger, store *Indexer[T], pace *savePacer) {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	objects, rv := store.listAtVersion()
	if rv == "" {
		return
	}
	uid, err := s.identity(pace == nil)
	if err != nil {
		s.saveErrors.Add(1)
		logger.Error(err, "Not writing the final snapshot: the cluster's identity is unknown, and a snapshot must name its cluster; the previous one, if any, stays", "path", s.path)
		return
	}
	if uid == nil {
		logger.V(2).Info("Not writing a snapshot yet: the cluster's identity is not read yet", "path", s.path)
		return
	}
	start := time.Now()
	header := snapshotHeader{Scope: s.scope, ResourceVersion: rv, Written: start.UTC().Truncate(time.Second), ClusterUID: *uid}
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

// finalIdentifyTimeout bounds the read of the cluster's identity that a
// final save makes when identify has not read it yet (a run stopped soon
// after it started): the stop waits at most this long for it.
const finalIdentifyTimeout = 5 * time.Second

// identity returns the cluster UID a save records: "" when the
// ListerWatcher cannot read one, or the server does not let it; nil while
// identify has not read it yet. A final save (final set) reads it once
// itself, bounded by finalIdentifyTimeout, rather than write a snapshot
// whose next start would refuse it as another cluster's; it returns that
// read's error if it fails.
func (s *snapshotter[T]) identity(final bool) (*string, error) {
	if s.clusterUID == nil {
		none := ""
		return &none, nil
	}
	if uid := s.uid.Load(); uid != nil || !final {
		return uid, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), finalIdentifyTimeout)
	defer cancel()
	uid, err := s.readClusterUID(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the cluster's identity: %w", err)
	}
	return &uid, nil
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
