package informer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kubetyped/informer/informertest"
	"github.com/kubetyped/informer/internal/wire"
)

// deadlineWatches serves watches as kube-apiserver's watch cache does on a
// resource where nothing changes: a watch made with TimeoutSeconds gets,
// if bookmarks is set, one bookmark at the list's resource version 2 s
// before its deadline (none if its timeout is 2 s or less), and ends at
// its deadline, both on clk. made receives once per such watch, once its
// timers are set (dropped when the channel is full).
type deadlineWatches struct {
	*informertest.FakeListerWatcher[*corev1.Pod]
	clk       *testingclock.FakeClock
	bookmarks bool
	rv        string
	made      chan struct{}
	wg        sync.WaitGroup
}

func newDeadlineWatches(clk *testingclock.FakeClock, bookmarks bool, rv string, pods ...*corev1.Pod) *deadlineWatches {
	fake := informertest.NewFakeListerWatcher[*corev1.Pod]()
	fake.SetList(rv, pods...)
	return &deadlineWatches{FakeListerWatcher: fake, clk: clk, bookmarks: bookmarks, rv: rv, made: make(chan struct{}, 16)}
}

func (d *deadlineWatches) Watch(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	w, err := d.FakeListerWatcher.Watch(ctx, options)
	if err != nil || options.TimeoutSeconds == nil {
		return w, err
	}
	timeout := time.Duration(*options.TimeoutSeconds) * time.Second
	var bookmark <-chan time.Time
	if d.bookmarks && timeout > 2*time.Second {
		bookmark = d.clk.After(timeout - 2*time.Second)
	}
	deadline := d.clk.After(timeout)
	stopped := make(chan struct{})
	d.wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-stopped:
				return
			case <-bookmark:
				bookmark = nil
				_ = d.Bookmark(ctx, d.rv)
			case <-deadline:
				_ = d.CloseWatch(ctx)
				return
			}
		}
	})
	select {
	case d.made <- struct{}{}:
	default:
	}
	return &stopWatch{Interface: w, stopped: stopped}, nil
}

// stopWatch closes stopped when it is stopped.
type stopWatch struct {
	watch.Interface
	once    sync.Once
	stopped chan struct{}
}

func (w *stopWatch) Stop() {
	w.once.Do(func() { close(w.stopped) })
	w.Interface.Stop()
}

// resumeInformer returns an informer with its snapshots in dir over lw,
// on clk, with a recorder of its notifications, running until the test
// ends.
func resumeInformer(t *testing.T, ctx context.Context, dir string, clk *testingclock.FakeClock, lw ListerWatcher[*corev1.Pod]) (*Informer[*corev1.Pod], *plRecorder, func()) {
	t.Helper()
	opts := snapOptions(dir)
	opts.Clock = clk
	opts.Backoff = plFastBackoff
	inf := MustNewInformer(t, lw, opts)
	rec := newPLRecorder()
	_, err := inf.AddEventHandler(rec)
	plMust(t, err)
	return inf, rec, plRunContext(t, ctx, inf)
}

// ignoreWatchTimeout ignores the random timeout of the watches that
// follow a sync.
var ignoreWatchTimeout = cmp.Transformer("noTimeout", func(o metav1.ListOptions) metav1.ListOptions {
	if o.TimeoutSeconds != nil && *o.TimeoutSeconds >= int64(minWatchTimeout.Seconds()) {
		o.TimeoutSeconds = nil
	}
	return o
})

// TestSnapshotRestartQuietResourceResumes: on a resource where nothing
// changed since the snapshot while the cluster moved on (the current
// resource version is past the snapshot's), the resumed watch catches up
// by the bookmark the server sends before its deadline: the informer
// syncs from the snapshot about a second after the watch started, without
// a list (issue 32 item 2: it waited 10 s, then listed everything).
func TestSnapshotRestartQuietResourceResumes(t *testing.T) {
	dir := snapDir(t)
	snapWrite(t, snapOptions(dir), "7", snapPods()...)
	clk := testingclock.NewFakeClock(time.Now())
	lw := newDeadlineWatches(clk, true, "30", snapPods()...)
	inf, rec, stop := resumeInformer(t, context.Background(), dir, clk, lw)
	<-lw.made
	clk.Step(time.Second) // the bookmark of a watch of resumeWatchSeconds
	Eventually(t, "synced by the resumed watch's bookmark", inf.HasSynced)
	rec.expect(t, plAdd("default/a", "5", true), plAdd("default/b", "6", true), plAdd("kube-system/c", "7", true))
	calls, err := lw.WaitForCalls(plCtx(t), 3)
	plMust(t, err)
	three := int64(resumeWatchSeconds)
	want := []informertest.FakeCall{
		{Verb: "list", Options: metav1.ListOptions{Limit: 1}},
		{Verb: "watch", Options: metav1.ListOptions{ResourceVersion: "7", AllowWatchBookmarks: true, TimeoutSeconds: &three}},
		{Verb: "watch", Options: metav1.ListOptions{ResourceVersion: "30", AllowWatchBookmarks: true}},
	}
	if diff := cmp.Diff(want, calls, ignoreWatchTimeout); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(SnapshotStats{Restored: 1, RestoredObjects: 3, ResumedWatches: 1}, inf.Stats().Snapshot); diff != "" {
		t.Errorf("snapshot stats (-want +got):\n%s", diff)
	}
	stop()
	lw.wg.Wait()
}

// TestSnapshotRestartNoBookmarkListsAtOnce: when the resumed watch ends at
// its deadline with neither an event nor a bookmark (a server that sends
// no bookmark before a watch's deadline), the informer lists at once,
// without waiting for catchUpWait.
func TestSnapshotRestartNoBookmarkListsAtOnce(t *testing.T) {
	dir := snapDir(t)
	snapWrite(t, snapOptions(dir), "7", snapPods()...)
	clk := testingclock.NewFakeClock(time.Now())
	lw := newDeadlineWatches(clk, false, "30", NewPod("default", "a", "5"), NewPod("default", "d", "20"))
	inf, rec, stop := resumeInformer(t, context.Background(), dir, clk, lw)
	<-lw.made
	clk.Step(resumeWatchSeconds * time.Second) // the resumed watch's deadline, before catchUpWait
	Eventually(t, "synced by a list", inf.HasSynced)
	rec.expect(t, plAdd("default/a", "5", true), plAdd("default/d", "20", true))
	calls, err := lw.WaitForCalls(plCtx(t), 3)
	plMust(t, err)
	three := int64(resumeWatchSeconds)
	want := []informertest.FakeCall{
		{Verb: "list", Options: metav1.ListOptions{Limit: 1}},
		{Verb: "watch", Options: metav1.ListOptions{ResourceVersion: "7", AllowWatchBookmarks: true, TimeoutSeconds: &three}},
		{Verb: "list", Options: metav1.ListOptions{Limit: defaultPageSize}},
	}
	if diff := cmp.Diff(want, calls[:3]); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(SnapshotStats{Restored: 1, RestoredObjects: 3, RestoreRelists: 1}, inf.Stats().Snapshot); diff != "" {
		t.Errorf("snapshot stats (-want +got):\n%s", diff)
	}
	stop()
	lw.wg.Wait()
}

// TestSnapshotStartLogLine: every start of an informer that keeps
// snapshots logs one line at the default verbosity once synced, saying
// what it restored (or why nothing), how it synced and why, and how long
// that took (issue 32 item 5: the outcome was logged at V(1) and V(2)).
func TestSnapshotStartLogLine(t *testing.T) {
	type line struct {
		Message string
		KV      []any
	}
	for _, tc := range []struct {
		name string
		// prepare writes the snapshot (or not) in dir and returns the
		// ListerWatcher the restarted informer lists from and what its
		// start line says.
		prepare func(t *testing.T, dir string, clk *testingclock.FakeClock) (ListerWatcher[*corev1.Pod], func(), line)
	}{
		{"resumed", func(t *testing.T, dir string, clk *testingclock.FakeClock) (ListerWatcher[*corev1.Pod], func(), line) {
			path := snapWrite(t, snapOptions(dir), "7", snapPods()...)
			lw := newDeadlineWatches(clk, true, "30", snapPods()...)
			return lw, func() { <-lw.made; clk.Step(time.Second) }, line{"Synced from a snapshot by resuming its watch", []any{
				"objects", 3, "written", snapshotWritten(t, path), "snapshotResourceVersion", "7", "resourceVersion", "30", "caughtUpBy", "watch",
				"path", path, "timeToSynced", time.Second}}
		}},
		{"listed", func(t *testing.T, dir string, clk *testingclock.FakeClock) (ListerWatcher[*corev1.Pod], func(), line) {
			path := snapWrite(t, snapOptions(dir), "7", snapPods()...)
			lw := newDeadlineWatches(clk, true, "30", NewPod("default", "a", "5"), NewPod("default", "d", "20"))
			gone := apierrors.NewResourceExpired("too old resource version: 7 (25)")
			lw.FailNextWatch(gone)
			return lw, nil, line{"Synced from a snapshot by listing", []any{
				"objects", 3, "written", snapshotWritten(t, path), "snapshotResourceVersion", "7", "reason", gone.Error(),
				"reused", int64(0), "path", path, "timeToSynced", time.Duration(0)}}
		}},
		{"no snapshot", func(t *testing.T, dir string, clk *testingclock.FakeClock) (ListerWatcher[*corev1.Pod], func(), line) {
			path := snapWrite(t, snapOptions(dir), "7", snapPods()...)
			plMust(t, os.Remove(path))
			return newDeadlineWatches(clk, true, "30", snapPods()...), nil, line{"Synced cold", []any{
				"snapshot", "none", "reason", "no snapshot file", "path", path, "timeToSynced", time.Duration(0)}}
		}},
		{"corrupt", func(t *testing.T, dir string, clk *testingclock.FakeClock) (ListerWatcher[*corev1.Pod], func(), line) {
			path := snapWrite(t, snapOptions(dir), "7", snapPods()...)
			plMust(t, os.WriteFile(path, []byte("KTISNAP\n"), 0o600))
			_, readErr := readSnapshot(path, snapshotScopeFor[*corev1.Pod]("pods", corev1.SchemeGroupVersion.WithResource("pods"), ""), newSnapshotCodec[*corev1.Pod](nil))
			return newDeadlineWatches(clk, true, "30", snapPods()...), nil, line{"Synced cold", []any{
				"snapshot", "refused", "reason", fmt.Sprint(readErr), "path", path, "timeToSynced", time.Duration(0)}}
		}},
		{"ahead of the server", func(t *testing.T, dir string, clk *testingclock.FakeClock) (ListerWatcher[*corev1.Pod], func(), line) {
			path := snapWrite(t, snapOptions(dir), "900", snapPods()...)
			return newDeadlineWatches(clk, true, "30", snapPods()...), nil, line{"Synced cold", []any{
				"snapshot", "refused",
				"reason", errSnapshotAhead.Error() + ": the snapshot is at 900, the server at 30",
				"path", path, "timeToSynced", time.Duration(0)}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := snapDir(t)
			clk := testingclock.NewFakeClock(time.Now())
			lw, step, want := tc.prepare(t, dir, clk)
			logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
			inf, _, stop := resumeInformer(t, klog.NewContext(context.Background(), logger), dir, clk, lw)
			if step != nil {
				step()
			}
			Eventually(t, "synced", inf.HasSynced)
			var got []line
			Eventually(t, "the start's line", func() bool {
				got = nil
				for _, e := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
					if e.Verbosity == 0 && strings.HasPrefix(e.Message, "Synced") {
						got = append(got, line{e.Message, e.ParameterKVList})
					}
				}
				return len(got) > 0
			})
			stop()
			if d, ok := lw.(*deadlineWatches); ok {
				d.wg.Wait()
			}
			if diff := cmp.Diff([]line{want}, got); diff != "" {
				t.Errorf("start lines (-want +got):\n%s", diff)
			}
		})
	}
}

// snapshotWritten returns when the snapshot at path was written, as its
// header says.
func snapshotWritten(t *testing.T, path string) time.Time {
	t.Helper()
	snap, err := readSnapshot(path, snapshotScopeFor[*corev1.Pod]("pods", corev1.SchemeGroupVersion.WithResource("pods"), ""), newSnapshotCodec[*corev1.Pod](nil))
	plMust(t, err)
	return snap.header.Written
}

// versionedWatches is deadlineWatches with a versions list (what the
// ListerWatchers built from a *rest.Config describe, listedScope.versions):
// list answers it.
type versionedWatches struct {
	*deadlineWatches
	list func(ctx context.Context) (listedVersions, error)
}

func (v *versionedWatches) description() lwDescription {
	return lwDescription{listed: listedScope{versions: v.list}}
}

func (v *versionedWatches) decodingWith(table *wire.InternTable) (ListerWatcher[*corev1.Pod], error) {
	return nil, checkDecodingWith(v.description(), table)
}

// snapVersions are the versions of snapPods at 30, the resource version
// deadlineWatches lists at.
func snapVersions() listedVersions {
	l := listedVersions{resourceVersion: "30", versions: map[ObjectName]string{}}
	for _, p := range snapPods() {
		l.versions[NameOf(p)] = p.ResourceVersion
	}
	return l
}

// restoreVersioned starts an informer restored from a snapshot of
// snapPods at 7, over deadlineWatches at 30 whose versions list is list,
// and returns it with the recorder of its notifications, its
// ListerWatcher and clock, and the function that stops it.
func restoreVersioned(t *testing.T, list func(context.Context) (listedVersions, error)) (*Informer[*corev1.Pod], *plRecorder, *versionedWatches, *testingclock.FakeClock, func()) {
	t.Helper()
	dir := snapDir(t)
	snapWrite(t, snapOptions(dir), "7", snapPods()...)
	clk := testingclock.NewFakeClock(time.Now())
	lw := &versionedWatches{deadlineWatches: newDeadlineWatches(clk, true, "30", snapPods()...), list: list}
	inf, rec, stop := resumeInformer(t, context.Background(), dir, clk, lw)
	return inf, rec, lw, clk, func() {
		stop()
		lw.wg.Wait()
	}
}

// TestSnapshotRestartCaughtUpByListedVersions (issue 32 item 2): on a quiet
// resource, a restored informer whose ListerWatcher lists versions syncs
// as soon as the versions the server lists are those of its objects,
// without waiting for the resumed watch's bookmark (the clock never moves
// here); a versions list that fails leaves the bookmark to show it; one
// that a change on the resumed watch makes needless is abandoned, and the
// watch's events and bookmark catch the objects up.
func TestSnapshotRestartCaughtUpByListedVersions(t *testing.T) {
	three := int64(resumeWatchSeconds)
	resumedOnly := SnapshotStats{Restored: 1, RestoredObjects: 3, ResumedWatches: 1}
	t.Run("quiet: the versions are the objects'", func(t *testing.T) {
		listed := make(chan struct{})
		inf, rec, lw, _, stop := restoreVersioned(t, func(context.Context) (listedVersions, error) {
			close(listed)
			return snapVersions(), nil
		})
		defer stop()
		<-listed
		Eventually(t, "synced by the listed versions", inf.HasSynced)
		rec.expect(t, plAdd("default/a", "5", true), plAdd("default/b", "6", true), plAdd("kube-system/c", "7", true))
		calls, err := lw.WaitForCalls(plCtx(t), 3)
		plMust(t, err)
		want := []informertest.FakeCall{
			{Verb: "list", Options: metav1.ListOptions{Limit: 1}},
			{Verb: "watch", Options: metav1.ListOptions{ResourceVersion: "7", AllowWatchBookmarks: true, TimeoutSeconds: &three}},
			{Verb: "watch", Options: metav1.ListOptions{ResourceVersion: "30", AllowWatchBookmarks: true}}, // at the listed version
		}
		if diff := cmp.Diff(want, calls, ignoreWatchTimeout); diff != "" {
			t.Errorf("calls (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(resumedOnly, inf.Stats().Snapshot); diff != "" {
			t.Errorf("snapshot stats (-want +got):\n%s", diff)
		}
	})
	t.Run("the versions list fails: the bookmark shows it", func(t *testing.T) {
		inf, rec, lw, clk, stop := restoreVersioned(t, func(context.Context) (listedVersions, error) {
			return listedVersions{}, fmt.Errorf("%w: 406 Not Acceptable", errVersionsList)
		})
		defer stop()
		<-lw.made
		clk.Step(time.Second) // the bookmark of a watch of resumeWatchSeconds
		Eventually(t, "synced by the resumed watch's bookmark", inf.HasSynced)
		rec.expect(t, plAdd("default/a", "5", true), plAdd("default/b", "6", true), plAdd("kube-system/c", "7", true))
		if diff := cmp.Diff(resumedOnly, inf.Stats().Snapshot); diff != "" {
			t.Errorf("snapshot stats (-want +got):\n%s", diff)
		}
	})
	t.Run("a change on the watch abandons the list", func(t *testing.T) {
		abandoned := make(chan error, 1)
		inf, rec, lw, clk, stop := restoreVersioned(t, func(ctx context.Context) (listedVersions, error) {
			<-ctx.Done()
			abandoned <- context.Cause(ctx)
			return listedVersions{}, ctx.Err()
		})
		defer stop()
		<-lw.made
		plMust(t, lw.Modify(plCtx(t), NewPod("default", "a", "20")))
		if err := <-abandoned; !errors.Is(err, errVersionsAbandoned) {
			t.Errorf("the versions list ended because of %v, want errVersionsAbandoned", err)
		}
		clk.Step(time.Second) // the bookmark of a watch of resumeWatchSeconds
		Eventually(t, "synced by the resumed watch's bookmark", inf.HasSynced)
		rec.expect(t, plAdd("default/a", "20", true), plAdd("default/b", "6", true), plAdd("kube-system/c", "7", true))
		if diff := cmp.Diff(resumedOnly, inf.Stats().Snapshot); diff != "" {
			t.Errorf("snapshot stats (-want +got):\n%s", diff)
		}
	})
}
