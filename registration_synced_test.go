package informer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// gatedRecorder returns a recorder whose handler calls wait for gate,
// announcing each call on entered first.
func gatedRecorder() (rec *plRecorder, entered chan plEvent, gate chan struct{}) {
	rec = newPLRecorder()
	entered, gate = make(chan plEvent, 16), make(chan struct{})
	rec.hook = func(e plEvent) {
		entered <- e
		<-gate
	}
	return rec, entered, gate
}

// waitDone fails the test unless checker's channel closes.
func waitDone(t *testing.T, checker cache.DoneChecker) {
	t.Helper()
	if !cache.WaitFor(plCtx(t), "", checker) {
		t.Fatalf("%s: not done", checker.Name())
	}
}

func TestHasSyncedCheckersCloseWithoutPolling(t *testing.T) {
	t.Cleanup(ExpectNoGoroutineLeak(t))
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{Name: "pods"})
	lw.SetList("1", NewPod("ns", "a", "1"))
	rec, entered, gate := gatedRecorder()
	reg, err := inf.AddEventHandlerWithOptions(rec, HandlerOptions{Name: "gated"})
	plMust(t, err)
	informerChecker, regChecker := inf.HasSyncedChecker(), reg.HasSyncedChecker()
	gotNames := []string{informerChecker.Name(), regChecker.Name()}
	if diff := cmp.Diff([]string{"Informer pods", "Informer pods + event handler gated"}, gotNames); diff != "" {
		t.Errorf("checker names (-want +got):\n%s", diff)
	}
	if cache.IsDone(informerChecker) || cache.IsDone(regChecker) {
		t.Fatal("checkers done before Run")
	}

	plRun(t, inf)
	waitDone(t, informerChecker)
	// The handler is inside its only initial add: not synced.
	<-entered
	if cache.IsDone(regChecker) || reg.HasSynced() {
		t.Fatal("registration done while its handler is inside its initial add")
	}
	close(gate)
	waitDone(t, regChecker)
	if !reg.HasSynced() {
		t.Error("HasSynced() = false after the checker was done")
	}

	// A handler added late waits for the cached objects.
	lateRec, lateEntered, lateGate := gatedRecorder()
	late, err := inf.AddEventHandler(lateRec)
	plMust(t, err)
	<-lateEntered
	if cache.IsDone(late.HasSyncedChecker()) {
		t.Fatal("late registration done while its handler is inside its initial add")
	}
	close(lateGate)
	waitDone(t, late.HasSyncedChecker())
}

func TestHasSyncedCheckerOfHandlerAddedToAnEmptySyncedInformer(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("1")
	plRun(t, inf)
	waitDone(t, inf.HasSyncedChecker())
	reg, err := inf.AddEventHandler(newPLRecorder())
	plMust(t, err)
	// Nothing to deliver: the registration syncs as soon as it is admitted
	// (by the adder when the dispatcher is idle, else by the dispatcher), and
	// then HasSynced and the checker agree.
	waitDone(t, reg.HasSyncedChecker())
	if !reg.HasSynced() {
		t.Error("HasSynced() = false after the checker is done")
	}
}

func TestHasSyncedCheckerOfPanickingHandler(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("1", NewPod("ns", "a", "1"), NewPod("ns", "b", "1"))
	rec := newPLRecorder()
	rec.hook = func(plEvent) { panic("handler bug") }
	reg, err := inf.AddEventHandler(rec)
	plMust(t, err)
	plRun(t, inf)
	// A panicking call counts as returned (see Registration.HasSynced).
	waitDone(t, reg.HasSyncedChecker())
	if got := reg.Stats().Panics; got != 2 {
		t.Errorf("Stats().Panics = %d, want 2", got)
	}
}

func TestHasSyncedCheckerOfHandlerRemovedBeforeSync(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("1", NewPod("ns", "a", "1"), NewPod("ns", "b", "1"))
	rec, entered, gate := gatedRecorder()
	reg, err := inf.AddEventHandler(rec)
	plMust(t, err)
	plRun(t, inf)
	<-entered // the first initial add; the second is dropped
	plMust(t, inf.RemoveEventHandler(reg))
	close(gate)
	<-reg.target.finishedChan()
	// As in client-go, the channel of a handler that never synced stays
	// open.
	if cache.IsDone(reg.HasSyncedChecker()) || reg.HasSynced() {
		t.Error("a handler removed before its second initial add counts as synced")
	}
}
