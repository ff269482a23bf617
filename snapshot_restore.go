package informer

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
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
	// saving is set by a start that keeps snapshots.
	saving atomic.Bool
}

// newSnapshotter returns the snapshotter of an informer of the resolved
// configuration cfg, or nil when it names no snapshot directory.
func newSnapshotter[T Object](cfg config[T]) *snapshotter[T] {
	so := cfg.Snapshot
	if so.Dir == "" {
		return nil
	}
	s := &snapshotter[T]{opts: so, scope: snapshotScopeFor[T](cfg.Name, cfg.Resource, so.TransformID)}
	switch {
	case (so.Sensitive || sensitiveType[T](cfg.Resource)) && !so.AllowSensitive:
		s.off = "the objects are sensitive (Secrets, or Snapshot.Sensitive) and Snapshot.AllowSensitive is not set"
	case cfg.transform() != nil && so.TransformID == "":
		s.off = "the informer has a Transform and Snapshot.TransformID does not name it"
	case cfg.dynamicShard():
		s.off = "a dynamic shard's cache has no single resource version to resume at"
	}
	if cfg.Shard != nil {
		s.scope.Shard = fmt.Sprintf("%s %d/%d", cfg.Shard.key(), cfg.Shard.Index, cfg.Shard.Count)
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
	s.codec = newSnapshotCodec[T](decodingTable(lw))
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
		onResumed:       func() { s.resumedWatches.Store(1) },
		onRelisted:      func() { s.restoreRelists.Store(1) },
	})
	s.saving.Store(true)
}

// runPeriodic writes a snapshot every Interval, once synced() is true,
// until ctx is done.
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
				s.save(logger, store)
			}
		}
	}
}

// save writes the cache's objects, consistent at the cache's resource
// version, unless the cache has none yet. The store's read lock is held
// only while the pointers are copied (listAtVersion); objects are encoded
// and written outside it.
func (s *snapshotter[T]) save(logger klog.Logger, store *Indexer[T]) {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	objects, rv := store.listAtVersion()
	if rv == "" {
		return
	}
	header := snapshotHeader{Scope: s.scope, ResourceVersion: rv, Written: time.Now().UTC().Truncate(time.Second)}
	n, err := writeSnapshot(s.path, header, s.codec, objects)
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
	logger.V(3).Info("Wrote a snapshot", "path", s.path, "objects", len(objects), "bytes", n, "resourceVersion", rv)
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

// selectorsOf returns the label and field selectors tweak sets.
func selectorsOf(tweak func(*metav1.ListOptions)) (label, field string) {
	if tweak == nil {
		return "", ""
	}
	var options metav1.ListOptions
	tweak(&options)
	return options.LabelSelector, options.FieldSelector
}

// decodingTable returns the table lw interns decoded strings in, or nil.
func decodingTable[T Object](lw ListerWatcher[T]) *wire.InternTable {
	switch lw := lw.(type) {
	case *restListerWatcher[T]:
		return lw.interns
	case *shardListerWatcher[T]:
		return decodingTable(lw.inner)
	}
	return nil
}
