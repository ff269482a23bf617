package informer

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// startReport is what one start of an informer that keeps snapshots did
// with its snapshot, for the one line logged at the default verbosity once
// the informer has synced (logSynced): whether a snapshot was restored
// (how many objects, written when) or why none was, and whether the cache
// synced by resuming the watch or by listing, and why. A restore that goes
// wrong quietly (a foreign snapshot, a watch that cannot catch up) must be
// visible without raising the verbosity.
type startReport struct {
	mu sync.Mutex
	// snapshot is "restored", "none" (no file) or "refused"; reason says
	// why it was refused, or why the restored informer listed.
	snapshot, reason string
	path             string
	objects          int
	written          time.Time
	snapshotRV       string
	// resumedAt is the resource version a resumed watch reached; listed
	// is set when the restored informer listed, reused counting the
	// restored objects the list reused.
	resumedAt string
	// byVersions is set when the listed versions, not the watch, showed
	// the resumed objects caught up.
	byVersions bool
	listed     bool
	reused     *atomic.Int64
}

// set records the outcome of reading the snapshot: snapshot is
// "restored", "none" or "refused" (see startReport).
func (r *startReport) set(snapshot, path, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.snapshot, r.path, r.reason = snapshot, path, reason
}

// restoredFrom records the snapshot restored, whose header is header.
func (r *startReport) restoredFrom(path string, header snapshotHeader) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.snapshot, r.path, r.reason = "restored", path, ""
	r.objects, r.written, r.snapshotRV = header.Objects, header.Written, header.ResourceVersion
}

// resumed records that the restored informer resumed its watch, reaching
// resourceVersion, caught up as byVersions says (resumePoint.onResumed).
func (s *snapshotter[T]) resumed(resourceVersion string, byVersions bool) {
	s.resumedWatches.Store(1)
	s.report.mu.Lock()
	defer s.report.mu.Unlock()
	s.report.resumedAt, s.report.byVersions = resourceVersion, byVersions
}

// relisted records that the restored informer lists because of why
// (resumePoint.onRelisted).
func (s *snapshotter[T]) relisted(why error, reused *atomic.Int64) {
	s.restoreRelists.Store(1)
	s.report.mu.Lock()
	defer s.report.mu.Unlock()
	s.report.listed, s.report.reason, s.report.reused = true, why.Error(), reused
}

// refused records that the restored snapshot was refused because of why
// (resumePoint.onRefused): it is counted as rejected, and none of its objects is
// used, so it no longer counts as restored.
func (s *snapshotter[T]) refused(why error) {
	s.rejected.Add(1)
	s.restored.Store(0)
	s.restoredObjects.Store(0)
	s.report.mu.Lock()
	defer s.report.mu.Unlock()
	s.report.snapshot, s.report.reason = "refused", why.Error()
}

// logSynced waits until synced is closed (the informer has synced) or ctx
// is done, and then logs, at the default verbosity, how the start went
// (startReport) and how long it took since start on clk. It logs nothing
// for an informer whose snapshotter set no report (one keeping no
// snapshot, which said why when it started).
func (s *snapshotter[T]) logSynced(ctx context.Context, logger klog.Logger, clk clock.PassiveClock, start time.Time, synced <-chan struct{}) {
	select {
	case <-ctx.Done():
		return
	case <-synced:
	}
	took := clk.Since(start)
	r := &s.report
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.snapshot == "":
	case r.snapshot != "restored":
		logger.Info("Synced cold", "snapshot", r.snapshot, "reason", r.reason, "path", r.path, "timeToSynced", took)
	case r.listed:
		var reused int64
		if r.reused != nil {
			reused = r.reused.Load()
		}
		logger.Info("Synced from a snapshot by listing", "objects", r.objects, "written", r.written,
			"snapshotResourceVersion", r.snapshotRV, "reason", r.reason, "reused", reused, "path", r.path, "timeToSynced", took)
	default:
		caughtUpBy := "watch"
		if r.byVersions {
			caughtUpBy = "listedVersions"
		}
		logger.Info("Synced from a snapshot by resuming its watch", "objects", r.objects, "written", r.written,
			"snapshotResourceVersion", r.snapshotRV, "resourceVersion", r.resumedAt, "caughtUpBy", caughtUpBy, "path", r.path, "timeToSynced", took)
	}
}
