package informer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	testingclock "k8s.io/utils/clock/testing"
)

// paceStep is the fake clock's step while a pacer waits: every wait of
// the tests is a multiple of it, so a wait takes exactly its length.
const paceStep = 100 * time.Microsecond

// stepWhilePacerWaits advances clk by paceStep whenever a timer waits on
// it, until done is closed: it releases a pacer's waits, and only them
// (nothing else in these tests waits on clk). Work simulated by stepping
// clk happens while nothing waits, so each wait lasts exactly its length
// rounded up to paceStep.
func stepWhilePacerWaits(t *testing.T, clk *testingclock.FakeClock, done <-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(plTimeout) // a failure guard, not a timing assertion
	for {
		select {
		case <-done:
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the paced work did not end")
		}
		if clk.HasWaiters() {
			clk.Step(paceStep)
		} else {
			time.Sleep(paceStep)
		}
	}
}

// pacedChunk is what a test sees of one of a pacer's chunks: the objects
// in it and how long the pacer waited after it.
type pacedChunk struct {
	Objects int
	Waited  time.Duration
}

// TestSavePacerChunks: a chunk ends after chunkObjects objects or once it
// has taken chunkWork, whichever comes first, and is followed by a wait of
// duty-1 times its length; the objects after the last full chunk are not
// waited for.
func TestSavePacerChunks(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	p := newSavePacer(plCtx(t), clk)
	p.chunkObjects = 4
	// The time each object takes: 4 short ones, 2 long ones reaching
	// chunkWork (1 ms), 4 short ones, one more.
	work := []time.Duration{100, 100, 100, 100, 600, 600, 100, 100, 100, 100, 100}
	var got []pacedChunk
	objects := 0
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		for _, w := range work {
			clk.Step(w * time.Microsecond)
			objects++
			before := clk.Now()
			if err = p.chunk(); err != nil {
				return
			}
			if waited := clk.Since(before); waited > 0 {
				got = append(got, pacedChunk{Objects: objects, Waited: waited})
				objects = 0
			}
		}
	}()
	stepWhilePacerWaits(t, clk, done)
	plMust(t, err)
	want := []pacedChunk{
		{Objects: 4, Waited: 19 * 400 * time.Microsecond},
		{Objects: 2, Waited: 19 * 1200 * time.Microsecond},
		{Objects: 4, Waited: 19 * 400 * time.Microsecond},
	}
	if diff := cmp.Diff(want, got); diff != "" || objects != 1 || p.waitCount() != 3 {
		t.Errorf("chunks (-want +got):\n%s\n%d objects after the last, %d waits; want 1 and 3", diff, objects, p.waitCount())
	}
}

// pacePods returns n pods named p-0000..., at resource version rv.
func pacePods(n int, rv string) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = NewPod("default", fmt.Sprintf("p-%04d", i), rv)
	}
	return pods
}

// TestPacedSaveWaitsPerChunk: a paced save waits once per full chunk of
// savePaceChunkObjects objects and writes the same snapshot an unpaced one
// does.
func TestPacedSaveWaitsPerChunk(t *testing.T) {
	pods := pacePods(2*savePaceChunkObjects+5, "7")
	path := filepath.Join(t.TempDir(), "pods"+snapshotSuffix)
	scope := snapshotScopeFor[*corev1.Pod]("pods", corev1.SchemeGroupVersion.WithResource("pods"), "")
	codec := newSnapshotCodec[*corev1.Pod](nil)
	// A clock that stands still: the chunks end by their count, and each
	// wait is a zero-length timer that waits for the next step.
	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	p := newSavePacer(plCtx(t), clk)
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		_, err = writeSnapshotPaced(path, snapshotHeader{Scope: scope, ResourceVersion: "7"}, codec, pods, p)
	}()
	stepWhilePacerWaits(t, clk, done)
	plMust(t, err)
	if got := p.waitCount(); got != 2 {
		t.Errorf("%d waits for %d objects, want 2", got, len(pods))
	}
	snap, err := readSnapshot(path, scope, codec)
	plMust(t, err)
	if diff := cmp.Diff(pods, snap.objects); diff != "" {
		t.Errorf("pods read back (-want +got):\n%s", diff)
	}
}

// TestPacedSaveAbandonedOnCancel: a paced save whose context is cancelled
// while it waits stops at once with an error saying so, leaves the
// previous snapshot as it was and no temporary file.
func TestPacedSaveAbandonedOnCancel(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pods"+snapshotSuffix)
	scope := snapshotScopeFor[*corev1.Pod]("pods", corev1.SchemeGroupVersion.WithResource("pods"), "")
	codec := newSnapshotCodec[*corev1.Pod](nil)
	previous := snapPods()
	_, err := writeSnapshot(path, snapshotHeader{Scope: scope, ResourceVersion: "7"}, codec, previous)
	plMust(t, err)

	clk := testingclock.NewFakeClock(time.Unix(0, 0))
	ctx, cancel := context.WithCancel(plCtx(t))
	done := make(chan error, 1)
	go func() {
		_, err := writeSnapshotPaced(path, snapshotHeader{Scope: scope, ResourceVersion: "9"}, codec, pacePods(3*savePaceChunkObjects, "9"), newSavePacer(ctx, clk))
		done <- err
	}()
	Eventually(t, "the first chunk's wait", clk.HasWaiters)
	cancel() // the clock never moves: only the cancel can end the wait
	select {
	case err = <-done:
	case <-time.After(plTimeout): // a failure guard, not a timing assertion
		t.Fatal("the paced save did not stop when its context was cancelled")
	}
	if !errors.Is(err, errSaveAbandoned) || !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want one saying the save was abandoned because of the cancel", err)
	}
	entries, err := os.ReadDir(dir)
	plMust(t, err)
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	if diff := cmp.Diff([]string{"pods" + snapshotSuffix}, files); diff != "" {
		t.Errorf("files left (-want +got):\n%s", diff)
	}
	snap, err := readSnapshot(path, scope, codec)
	plMust(t, err)
	if diff := cmp.Diff(previous, snap.objects); diff != "" || snap.header.ResourceVersion != "7" {
		t.Errorf("the previous snapshot changed: resource version %q (want 7), pods (-want +got):\n%s", snap.header.ResourceVersion, diff)
	}
}

// TestSnapshotPeriodicSavePaced: an informer's periodic save is paced on
// the informer's clock (it completes only as the clock moves); a periodic
// save under way when Run ends is abandoned, uncounted, and the final
// save, unpaced, writes the cache as it is then, though the clock never
// moves again.
func TestSnapshotPeriodicSavePaced(t *testing.T) {
	dir := snapDir(t)
	clk := testingclock.NewFakeClock(time.Now())
	opts := snapOptions(dir)
	opts.Clock = clk
	opts.Snapshot.Interval = time.Minute
	inf, lw := plInformer(t, opts)
	pods := pacePods(2*savePaceChunkObjects+5, "7")
	lw.SetList("7", pods...)
	stop := plRun(t, inf)
	Eventually(t, "synced", inf.HasSynced)
	// The informer's own timers (the snapshot ticker among them); any more
	// is a paced save's wait.
	timers := clk.Waiters()

	clk.Step(opts.Snapshot.Interval)
	Eventually(t, "the first periodic save, each of its waits released", func() bool {
		if clk.Waiters() > timers {
			clk.Step(paceStep)
		}
		return inf.Stats().Snapshot.Saved == 1
	})

	ctx := plCtx(t)
	changed := NewPod("default", "p-0000", "8")
	plMust(t, lw.Modify(ctx, changed))
	Eventually(t, "the change cached", func() bool {
		got, err := inf.Lister().Namespace("default").Get("p-0000")
		return err == nil && got.ResourceVersion == "8"
	})
	clk.Step(opts.Snapshot.Interval)
	Eventually(t, "the second periodic save's first wait", func() bool { return clk.Waiters() > timers })
	stop()

	if diff := cmp.Diff(SnapshotStats{Saved: 2, LastSaveBytes: inf.Stats().Snapshot.LastSaveBytes}, inf.Stats().Snapshot); diff != "" {
		t.Errorf("snapshot stats (-want +got):\n%s", diff)
	}
	assertSnapshotHolds(t, dir, opts, "8", append([]*corev1.Pod{changed}, pods[1:]...))
	cached, err := inf.Lister().List(labels.Everything())
	plMust(t, err)
	if len(cached) != len(pods) {
		t.Errorf("%d pods cached, want %d", len(cached), len(pods))
	}
}

// assertSnapshotHolds checks that dir holds one snapshot file, of the
// informer configured by opts, consistent at rv and holding pods (in any
// order).
func assertSnapshotHolds(t *testing.T, dir string, opts InformerOptions[*corev1.Pod], rv string, pods []*corev1.Pod) {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, "*"))
	plMust(t, err)
	var files []string
	for _, m := range matches {
		if filepath.Ext(m) == snapshotSuffix {
			files = append(files, m)
		} else if filepath.Ext(m) != ".lock" {
			t.Errorf("unexpected file %s", m)
		}
	}
	if len(files) != 1 {
		t.Fatalf("snapshot files %q, want one", files)
	}
	scope := snapshotScopeFor[*corev1.Pod](opts.Name, opts.Resource, "")
	snap, err := readSnapshot(files[0], scope, newSnapshotCodec[*corev1.Pod](nil))
	plMust(t, err)
	if diff := cmp.Diff(plSortedPods(pods), plSortedPods(snap.objects)); diff != "" || snap.header.ResourceVersion != rv {
		t.Errorf("snapshot at resource version %q (want %q), pods (-want +got):\n%s", snap.header.ResourceVersion, rv, diff)
	}
}
