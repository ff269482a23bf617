package informer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informer/informertest"
)

func TestSharedIndexInformerAdapterRemoveEventHandler(t *testing.T) {
	t.Cleanup(ExpectNoGoroutineLeak(t))
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("10", NewPod("ns", "a", "1"))
	sii := AsSharedIndexInformer(inf)
	kept, removed, shutDown := newAdRecorder(), newAdRecorder(), newAdRecorder()
	keptReg, err := sii.AddEventHandler(kept.detailed())
	plMust(t, err)
	removedReg, err := sii.AddEventHandlerWithResyncPeriod(removed.detailed(), 0)
	plMust(t, err)
	shutDownReg, err := sii.AddEventHandlerWithOptions(shutDown.detailed(), cache.HandlerOptions{})
	plMust(t, err)
	stopCh, _ := adRun(t, sii)
	if !cache.WaitForCacheSync(stopCh, keptReg.HasSynced, removedReg.HasSynced, shutDownReg.HasSynced) {
		t.Fatal("WaitForCacheSync returned false")
	}
	initial := adEvent{Op: "add", Type: podType, Key: "ns/a", RV: "1", Initial: true}

	plMust(t, sii.RemoveEventHandler(removedReg))
	plMust(t, sii.RemoveEventHandler(removedReg)) // idempotent
	// cache.ShutDownEventHandler also waits until the handler can no
	// longer be called.
	plMust(t, cache.ShutDownEventHandler(sii, shutDownReg))
	plMust(t, lw.Add(plCtx(t), NewPod("ns", "b", "2")))
	kept.expect(t, initial, adEvent{Op: "add", Type: podType, Key: "ns/b", RV: "2"})
	shutDown.expect(t, initial)

	// A registration of another informer is not this one's: nothing
	// happens. A handle of a foreign type is an error.
	other := AsSharedIndexInformer(MustNewInformer(t, informertest.NewFakeListerWatcher[*corev1.Pod](), InformerOptions[*corev1.Pod]{}))
	otherReg, err := other.AddEventHandler(cache.ResourceEventHandlerFuncs{})
	plMust(t, err)
	plMust(t, sii.RemoveEventHandler(otherReg))
	plMust(t, other.RemoveEventHandler(otherReg))
	if err := sii.RemoveEventHandler(foreignRegistration{}); err == nil {
		t.Error("removing a foreign registration succeeded")
	}
	// A second adapter of the same informer removes the first one's
	// registrations.
	plMust(t, cache.ShutDownEventHandler(AsSharedIndexInformer(inf), keptReg))
	plMust(t, lw.Add(plCtx(t), NewPod("ns", "c", "3")))
	Eventually(t, "c cached", func() bool {
		_, exists, _ := sii.GetStore().GetByKey("ns/c")
		return exists
	})
	// Removed handlers are not given the events that follow.
	got := map[string][]adEvent{"kept": kept.waitFor(t, 0), "removed": removed.waitFor(t, 0), "shut down": shutDown.waitFor(t, 0)}
	want := map[string][]adEvent{
		"kept":      {initial, {Op: "add", Type: podType, Key: "ns/b", RV: "2"}},
		"removed":   {initial},
		"shut down": {initial},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events after the removals (-want +got):\n%s", diff)
	}
	if _, err := sii.AddEventHandler(nil); err == nil {
		t.Error("adding a nil handler succeeded")
	}
}

// foreignRegistration is a registration no adapter issued.
type foreignRegistration struct{}

func (foreignRegistration) HasSynced() bool                     { return true }
func (foreignRegistration) HasSyncedChecker() cache.DoneChecker { return nil }

func TestSharedIndexInformerAdapterDoneCheckers(t *testing.T) {
	t.Cleanup(ExpectNoGoroutineLeak(t))
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{Name: "pods"})
	lw.SetList("10", NewPod("ns", "a", "1"), NewPod("ns", "b", "2"))
	sii := AsSharedIndexInformer(inf)
	fast, blocked := newAdRecorder(), newAdRecorder()
	blocked.block = make(chan struct{})
	fastReg, err := sii.AddEventHandler(fast.funcs())
	plMust(t, err)
	blockedReg, err := sii.AddEventHandler(blocked.funcs())
	plMust(t, err)
	informerChecker, blockedChecker := sii.HasSyncedChecker(), blockedReg.HasSyncedChecker()
	gotNames := []string{informerChecker.Name(), sii.GetController().HasSyncedChecker().Name(), blockedChecker.Name()}
	wantNames := []string{"Informer pods", "Informer pods", "Informer pods + event handler cache.ResourceEventHandlerFuncs"}
	if diff := cmp.Diff(wantNames, gotNames); diff != "" {
		t.Errorf("checker names (-want +got):\n%s", diff)
	}
	if cache.IsDone(informerChecker) || cache.IsDone(blockedChecker) {
		t.Fatal("checkers done before Run")
	}

	adRun(t, sii)
	ctx := plCtx(t)
	if !cache.WaitFor(ctx, "", informerChecker, fastReg.HasSyncedChecker()) {
		t.Fatal("WaitFor(informer, fast handler) returned false")
	}
	if !sii.GetController().HasSynced() {
		t.Error("GetController().HasSynced() = false after the informer synced")
	}
	// The blocked handler is inside its first initial add: it has not synced.
	blocked.waitFor(t, 1)
	if cache.IsDone(blockedChecker) || blockedReg.HasSynced() {
		t.Fatal("a handler inside its initial adds counts as synced")
	}
	close(blocked.block)
	if !cache.WaitFor(ctx, "", blockedChecker) {
		t.Fatal("WaitFor(blocked handler) returned false after its release")
	}
	if !blockedReg.HasSynced() {
		t.Error("HasSynced() = false after the checker was done")
	}
}

func TestSharedIndexInformerAdapterCheckerOfRemovedHandler(t *testing.T) {
	t.Cleanup(ExpectNoGoroutineLeak(t))
	// The channel of a handler removed before it synced stays open, as in
	// client-go.
	sii := AsSharedIndexInformer(MustNewInformer(t, informertest.NewFakeListerWatcher[*corev1.Pod](), InformerOptions[*corev1.Pod]{}))
	reg, err := sii.AddEventHandler(cache.ResourceEventHandlerFuncs{})
	plMust(t, err)
	checker := reg.HasSyncedChecker()
	_ = checker.Done()
	plMust(t, sii.RemoveEventHandler(reg))
	if cache.IsDone(checker) {
		t.Error("the checker of a removed, never synced handler is done")
	}
}
