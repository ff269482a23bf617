package informer

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// User callbacks (handlers, filters, transforms, index functions) may call
// back into the library. These tests check that no lock order lets that
// deadlock, in particular while the informer waits for room in an
// OverflowBlock handler.

// blockingOpts bounds a handler to one pending notification, so that the
// informer waits for it after every notification.
var blockingOpts = HandlerOptions{MaxPending: 1, Overflow: OverflowBlock}

// readBack calls the informer's read methods from a callback.
func readBack(inf *Informer[*corev1.Pod]) {
	_, _ = inf.Lister().List(labels.Everything())
	_, _ = inf.Lister().Namespace("ns").Get("p0")
	_, _ = inf.Lister().ByIndex(NamespaceIndex, "ns")
	_ = inf.Stats()
	_ = inf.HasSynced()
	_ = inf.LastSyncResourceVersion()
}

// plPods returns n pods ns/p0... at resource versions from 2.
func plPods(n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for k := range pods {
		pods[k] = NewPod("ns", "p"+strconv.Itoa(k), strconv.Itoa(k+2))
	}
	return pods
}

// ignoreStopped fails the test on an error other than the informer having
// stopped, which callbacks may run into while the test ends.
func ignoreStopped(t *testing.T, err error) {
	if err != nil && !strings.Contains(err.Error(), "stopped") {
		t.Error(err)
	}
}

func TestHandlerAddingAHandlerWhileTheInformerWaitsForItDoesNotDeadlock(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	// One list of several objects: the informer hands them over in one batch
	// and waits for room in the handler while the handler adds another.
	lw.SetList("10", plPods(5)...)
	added := newPLRecorder()
	var adds atomic.Int32
	adder := newPLRecorder()
	adder.hook = func(plEvent) {
		if adds.Add(1) == 1 {
			_, err := inf.AddEventHandlerWithOptions(added, blockingOpts)
			ignoreStopped(t, err)
		}
		readBack(inf)
	}
	_, err := inf.AddEventHandlerWithOptions(adder, blockingOpts)
	plMust(t, err)
	stop := plRun(t, inf)
	adder.waitFor(t, 5)
	added.waitFor(t, 5) // the initial adds of the handler added by the handler
	stop()
}

func TestHandlerRemovingAnotherWhileAHandlerIsBeingAddedDoesNotDeadlock(t *testing.T) {
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
	lw.SetList("10", plPods(5)...)
	victim := newPLRecorder()
	victimReg, err := inf.AddEventHandlerWithOptions(victim, blockingOpts)
	plMust(t, err)
	inAdd := make(chan struct{})
	remover := newPLRecorder()
	var once sync.Once
	remover.hook = func(plEvent) {
		once.Do(func() {
			<-inAdd // another goroutine is adding a handler meanwhile
			ignoreStopped(t, inf.RemoveEventHandler(victimReg))
		})
	}
	_, err = inf.AddEventHandlerWithOptions(remover, blockingOpts)
	plMust(t, err)
	stop := plRun(t, inf)
	addedDone := make(chan error, 1)
	go func() {
		close(inAdd)
		_, err := inf.AddEventHandlerWithOptions(newPLRecorder(), blockingOpts)
		addedDone <- err
	}()
	select {
	case err := <-addedDone:
		plMust(t, err)
	case <-time.After(plTimeout):
		t.Fatal("AddEventHandler did not return")
	}
	remover.waitFor(t, 5)
	stop()
}

// TestCallbacksCallingBackUnderOverflowBlock is the stress test of issue 13:
// handlers under OverflowBlock add handlers, remove themselves, remove and
// shut down other handlers, and read the cache, while other goroutines add
// and remove handlers and events keep arriving; the transform and an index
// function read the informer too. Nothing may deadlock, and Run must return
// once its context is cancelled.
func TestCallbacksCallingBackUnderOverflowBlock(t *testing.T) {
	var inf *Informer[*corev1.Pod]
	var ready atomic.Bool // inf is set
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{
		Transform: func(p *corev1.Pod) (*corev1.Pod, error) {
			if ready.Load() {
				readBack(inf)
			}
			return p, nil
		},
		Indexers: map[string]IndexFunc[*corev1.Pod]{
			NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod],
			"reads": func(p *corev1.Pod) ([]string, error) {
				if ready.Load() {
					readBack(inf)
				}
				return []string{p.Name}, nil
			},
		},
	})
	ready.Store(true)
	lw.SetList("1", plPods(20)...)

	const handlersAddedByHandlers = 30
	var addedByHandlers atomic.Int32
	selfRemoved := make(chan struct{})
	victimsGone := make(chan struct{})

	// Adds a handler that removes itself after its first call, until enough
	// were added.
	adder := ResourceEventHandlerFuncs[*corev1.Pod]{AddFunc: func(*corev1.Pod, bool) {
		readBack(inf)
		if addedByHandlers.Add(1) > handlersAddedByHandlers {
			return
		}
		var reg atomic.Pointer[Registration]
		var once sync.Once
		r, err := inf.AddEventHandlerWithOptions(ResourceEventHandlerFuncs[*corev1.Pod]{AddFunc: func(*corev1.Pod, bool) {
			readBack(inf)
			if own := reg.Load(); own != nil {
				once.Do(func() { ignoreStopped(t, inf.RemoveEventHandler(own)) })
			}
		}}, blockingOpts)
		ignoreStopped(t, err)
		reg.Store(r)
	}}
	_, err := inf.AddEventHandlerWithOptions(adder, blockingOpts)
	plMust(t, err)

	// Removes itself after a few calls.
	var selfReg atomic.Pointer[Registration]
	var selfCalls atomic.Int32
	self := ResourceEventHandlerFuncs[*corev1.Pod]{AddFunc: func(*corev1.Pod, bool) {
		readBack(inf)
		if selfCalls.Add(1) == 3 {
			ignoreStopped(t, inf.RemoveEventHandler(selfReg.Load()))
			close(selfRemoved)
		}
	}}
	r, err := inf.AddEventHandlerWithOptions(self, blockingOpts)
	plMust(t, err)
	selfReg.Store(r)

	// Slow victims, which another handler removes and shuts down.
	slow := ResourceEventHandlerFuncs[*corev1.Pod]{AddFunc: func(*corev1.Pod, bool) {
		time.Sleep(time.Millisecond)
		readBack(inf)
	}}
	removedVictim, err := inf.AddEventHandlerWithOptions(slow, blockingOpts)
	plMust(t, err)
	shutVictim, err := inf.AddEventHandlerWithOptions(slow, blockingOpts)
	plMust(t, err)
	var killerCalls atomic.Int32
	killer := ResourceEventHandlerFuncs[*corev1.Pod]{AddFunc: func(*corev1.Pod, bool) {
		readBack(inf)
		if killerCalls.Add(1) == 5 {
			ignoreStopped(t, inf.RemoveEventHandler(removedVictim))
			ignoreStopped(t, inf.ShutDownEventHandler(shutVictim))
			close(victimsGone)
		}
	}}
	_, err = inf.AddEventHandlerWithOptions(killer, blockingOpts)
	plMust(t, err)

	// The goroutines that keep events arriving and handlers being added
	// start before Run, so that the leak check of stop, which runs while
	// they still do, leaves them out.
	ctx, cancel := context.WithCancel(plCtx(t))
	var wg sync.WaitGroup
	// Events keep arriving.
	wg.Go(func() {
		for k := 0; ctx.Err() == nil; k++ {
			pod := NewPod("ns", "e"+strconv.Itoa(k%50), strconv.Itoa(100+k))
			if err := lw.Add(ctx, pod); err != nil && ctx.Err() == nil {
				t.Error(err)
			}
		}
	})
	// Other goroutines add and remove handlers.
	for range 2 {
		wg.Go(func() {
			for ctx.Err() == nil {
				reg, err := inf.AddEventHandlerWithOptions(ResourceEventHandlerFuncs[*corev1.Pod]{
					AddFunc: func(*corev1.Pod, bool) { readBack(inf) },
				}, blockingOpts)
				if err != nil {
					ignoreStopped(t, err)
					return
				}
				ignoreStopped(t, inf.RemoveEventHandler(reg))
			}
		})
	}
	stop := plRun(t, inf)
	// Once it runs, an index whose function reads the informer is added.
	wg.Go(func() {
		ignoreStopped(t, inf.AddIndexers(map[string]IndexFunc[*corev1.Pod]{"late": func(p *corev1.Pod) ([]string, error) {
			readBack(inf)
			return []string{p.Namespace}, nil
		}}))
	})

	for _, ch := range []chan struct{}{selfRemoved, victimsGone} {
		select {
		case <-ch:
		case <-time.After(plTimeout):
			t.Fatalf("handlers made no progress:\n%s", strings.Join(plPipelineGoroutines(), "\n\n"))
		}
	}
	Eventually(t, "handlers adding handlers", func() bool { return addedByHandlers.Load() > handlersAddedByHandlers })
	stop() // while events keep arriving and handlers keep being added
	cancel()
	wg.Wait()
}
