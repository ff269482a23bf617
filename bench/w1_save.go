package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/internal/benchkit"
)

// savedPods is the number of pods the snapshot W1save's informers write
// holds: issue 26's "a save of 100,000 cached pods".
const savedPods = 100_000

// saveInterval is the snapshot interval of W1save's saving informers:
// shorter than a save of savedPods takes, so that they save back to back
// (a tick that comes while a save runs is dropped). These are periodic
// saves, so each is paced (snapshot_pace.go): back to back, a save takes
// its paced share of one core all the time W1 runs.
const saveInterval = time.Millisecond

// runDispatchWhileSaving is W1save: W1 with one handler (H=1), ours, while
// snapshots of savedPods W1 pods are written, against W1 without, all
// interleaved, each row against client-go's plain H=1 in the same run:
//
//   - "beside another informer, not saving": a second informer of the
//     process holds savedPods pods and does nothing: the saving side's
//     baseline (the heap is the same).
//   - "another informer saving": a second informer of the process, holding
//     savedPods pods, saves back to back while W1 runs. It shares no lock
//     with W1's informer: what it costs W1 is CPU (on 2 cores the save's
//     encoding, paced to a small share of one core, competes with the
//     dispatcher and the handler).
//   - "listed first, saving": W1's own informer lists savedPods other pods
//     first, then receives W1's events while it saves its cache (those pods
//     and W1's) back to back: CPU again, and the store's read lock, which
//     each save holds while it copies the pointers (BenchmarkSnapshot/
//     pointers) and the dispatcher's writes wait for. Against "listed first,
//     not saving", the same informer without snapshots.
//
// The rows' saves/run say how many saves completed while W1 ran; each took
// the lock once, so the dispatcher waited at most that many pointer copies.
// A paced save of savedPods takes tens of seconds, far longer than a W1
// run, so at most one save starts during a run. The saving sides start W1
// once a save is under way, not after a whole save (see waitSaving).
func runDispatchWhileSaving(cfg config) ([]benchkit.Row, error) {
	events := dispatchEvents(cfg.dispatchPods)
	want := eventCounts{adds: cfg.dispatchPods, updates: 2 * cfg.dispatchPods, deletes: cfg.dispatchPods}
	saved := savedPods
	if cfg.storePods < saved {
		saved = cfg.storePods // -quick
	}
	c := dispatchCase{name: "H=1", handlers: 1}
	type side struct {
		name    string
		saving  bool
		measure func() (dispatchResult, int64, error)
		runs    []dispatchResult
		saves   []float64
	}
	sides := []*side{
		{name: "plain", measure: func() (dispatchResult, int64, error) {
			r, err := measureDispatch(newOurInformer, events, want, c)
			return r, 0, err
		}},
		{name: fmt.Sprintf("beside another informer holding %d pods, not saving", saved), measure: func() (dispatchResult, int64, error) {
			return measureBesideSaver(saved, cfg.dispatchPods, events, want, c, false)
		}},
		{name: fmt.Sprintf("while another informer saves a snapshot of %d pods back to back", saved), saving: true, measure: func() (dispatchResult, int64, error) {
			return measureBesideSaver(saved, cfg.dispatchPods, events, want, c, true)
		}},
		{name: fmt.Sprintf("over %d other pods listed first, not saving", saved), measure: func() (dispatchResult, int64, error) {
			return measureOverListed(saved, cfg.dispatchPods, events, want, false)
		}},
		{name: fmt.Sprintf("over %d other pods listed first, saving its snapshot back to back", saved), saving: true, measure: func() (dispatchResult, int64, error) {
			return measureOverListed(saved, cfg.dispatchPods, events, want, true)
		}},
	}
	var cgRuns []dispatchResult
	for range cfg.count {
		r, err := measureDispatch(newClientGoInformer, events, want, c)
		if err != nil {
			return nil, fmt.Errorf("W1save: client-go: %w", err)
		}
		cgRuns = append(cgRuns, r)
		for _, s := range sides {
			r, saves, err := s.measure()
			if err != nil {
				return nil, fmt.Errorf("W1save: ours, %s: %w", s.name, err)
			}
			s.runs = append(s.runs, r)
			s.saves = append(s.saves, float64(saves))
		}
	}
	cg := medianDispatch(cgRuns)
	var rows []benchkit.Row
	for _, s := range sides {
		ours := medianDispatch(s.runs)
		kase := "H=1, ours " + s.name
		rows = append(rows, newRow("W1save", kase, "ns/event", cg.nsPerEvent, ours.nsPerEvent))
		if s.saving {
			rows = append(rows, oursOnly("W1save", kase, "saves completed while W1 ran (median; client-go: none) (no ratio)", benchkit.Median(s.saves)))
		}
	}
	return rows, nil
}

// measureBesideSaver runs W1 on a plain informer of ours beside another
// informer, holding saved pods (named after W1's), which, if saving, writes
// its snapshot back to back. It returns the saves completed while W1 ran.
// Not saving, it is the baseline of the saving side: the same heap.
func measureBesideSaver(saved, dispatchPods int, events []watch.Event, want eventCounts, c dispatchCase, saving bool) (dispatchResult, int64, error) {
	saver, err := newSavingInformer(saved, dispatchPods, nil, saving, nil)
	if err != nil {
		return dispatchResult{}, 0, err
	}
	defer saver.cleanup()
	stop := saver.it.start()
	defer stop()
	if saving {
		if err := saver.waitSaving(); err != nil {
			return dispatchResult{}, 0, err
		}
	} else if err := waitFor("the other informer to sync", saver.it.hasSynced, time.Minute); err != nil {
		return dispatchResult{}, 0, err
	}
	before := saver.saved()
	r, err := measureDispatch(newOurInformer, events, want, c)
	if err == nil && saving {
		err = saver.checkSaves()
	}
	return r, saver.saved() - before, err
}

// measureOverListed runs W1 on an informer of ours that has listed saved
// other pods first and, if saving, writes its snapshot back to back. The
// handler counts W1's events only (not the list's adds).
func measureOverListed(saved, dispatchPods int, events []watch.Event, want eventCounts, saving bool) (dispatchResult, int64, error) {
	handlers := newCountingHandlers(1, want.total(), nil)
	inf, err := newSavingInformer(saved, dispatchPods, events, saving, handlers[0])
	if err != nil {
		return dispatchResult{}, 0, err
	}
	defer inf.cleanup()
	stop := inf.it.start()
	defer stop()
	ready := func() bool { return isClosed(inf.it.watches.started) && inf.it.hasSynced() }
	if err := waitFor("the informer to sync and watch", ready, time.Minute); err != nil {
		return dispatchResult{}, 0, err
	}
	if saving {
		if err := inf.waitSaving(); err != nil {
			return dispatchResult{}, 0, err
		}
	}
	runtime.GC()
	mem := readMemCounters()
	before := inf.saved()
	start := time.Now()
	inf.it.watches.release()
	waitErr := waitAll(handlers, dispatchTimeout)
	elapsed := time.Since(start)
	saves := inf.saved() - before
	alloc := mem.since()
	if waitErr != nil {
		return dispatchResult{}, 0, waitErr
	}
	if saving {
		if err := inf.checkSaves(); err != nil {
			return dispatchResult{}, 0, err
		}
	}
	storeLen := inf.it.storeLen()
	stop()
	if err := checkCounts(handlers, want); err != nil {
		return dispatchResult{}, 0, err
	}
	if storeLen != saved {
		return dispatchResult{}, 0, fmt.Errorf("store holds %d pods after W1, want the %d listed", storeLen, saved)
	}
	n := float64(want.total())
	return dispatchResult{
		nsPerEvent:     float64(elapsed.Nanoseconds()) / n,
		allocsPerEvent: float64(alloc.mallocs) / n,
		bytesPerEvent:  float64(alloc.bytes) / n,
	}, saves, nil
}

// savingInformer is an informer of ours for W1save.
type savingInformer struct {
	it      *informerUnderTest
	stats   func() informer.SnapshotStats
	dir     string
	saving  bool
	cleanup func()
}

// newSavingInformer builds an informer of ours, with the namespace index,
// that lists saved pods numbered from dispatchPods on (so that W1's pods
// are new to it), then watches events, and if saving writes a snapshot
// into a directory of its own every saveInterval once synced. If h is not
// nil, it counts the events after the list, and the informer is synced
// only once the handler has taken the list's initial adds.
func newSavingInformer(saved, dispatchPods int, events []watch.Event, saving bool, h *countingHandler) (*savingInformer, error) {
	pods := make([]*corev1.Pod, saved)
	for i := range pods {
		pods[i] = newPod(dispatchPods + i)
	}
	watches := newWatchScript(events)
	opts := informer.InformerOptions[*corev1.Pod]{
		Indexers: map[string]informer.IndexFunc[*corev1.Pod]{informer.NamespaceIndex: informer.MetaNamespaceIndexFunc[*corev1.Pod]},
		Resource: corev1.SchemeGroupVersion.WithResource("pods"),
	}
	s := &savingInformer{saving: saving, cleanup: func() {}}
	if saving {
		// MkdirTemp creates the directory 0700, as snapshots require.
		dir, err := os.MkdirTemp("", "bench-w1save-")
		if err != nil {
			return nil, err
		}
		s.dir = dir
		s.cleanup = func() { os.RemoveAll(dir) }
		opts.Snapshot = informer.SnapshotOptions{Dir: dir, Interval: saveInterval}
	}
	inf, err := informer.NewInformer(newOurListerWatcher(pods, "1", watches), opts)
	if err != nil {
		s.cleanup()
		return nil, err
	}
	hasSynced := inf.HasSynced
	if h != nil {
		reg, err := inf.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{
			AddFunc: func(_ *corev1.Pod, initial bool) {
				if !initial {
					h.onAdd()
				}
			},
			UpdateFunc: func(_, _ *corev1.Pod) { h.onUpdate() },
			DeleteFunc: func(informer.DeletedObject[*corev1.Pod]) { h.onDelete() },
		})
		if err != nil {
			s.cleanup()
			return nil, fmt.Errorf("ours: adding a handler: %w", err)
		}
		// Synced once the handler has also taken the list's initial adds:
		// W1 then never shares the handler with them.
		hasSynced = reg.HasSynced
	}
	s.stats = func() informer.SnapshotStats { return inf.Stats().Snapshot }
	s.it = &informerUnderTest{
		watches:   watches,
		run:       inf.Run,
		hasSynced: hasSynced,
		storeLen:  func() int { objs, _ := inf.Lister().List(nil); return len(objs) },
	}
	return s, nil
}

// saved returns the snapshots written so far.
func (s *savingInformer) saved() int64 { return s.stats().Saved }

// waitSaving waits until a save is under way (its temporary file is in the
// directory) or done, and fails on a failed save. It does not wait for the
// first save to end: saves are paced (snapshot_pace.go) and one of
// savedPods takes tens of seconds, so the saving sides would run that much
// later than the plain ones they are compared with, under another load on
// a shared machine. The interval being shorter than a save, saves follow
// each other from then on.
func (s *savingInformer) waitSaving() error {
	underWay := func() bool {
		if st := s.stats(); st.Saved > 0 || st.SaveErrors > 0 {
			return true
		}
		temp, _ := filepath.Glob(filepath.Join(s.dir, "*.tmp-*"))
		return len(temp) > 0
	}
	if err := waitFor("a snapshot save under way", underWay, 5*time.Minute); err != nil {
		return err
	}
	return s.checkSaves()
}

// checkSaves fails if a save failed.
func (s *savingInformer) checkSaves() error {
	if s.stats().SaveErrors > 0 {
		return fmt.Errorf("writing a snapshot into %s failed", s.dir)
	}
	return nil
}
