package e2e

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubetyped/informer"
)

// Sizes of TestConvergenceUnderConcurrentWriters.
const (
	convergenceNamespaces = 4
	convergenceWriters    = 4
	convergenceOps        = 600 // per writer
	convergencePods       = 40  // names per writer
)

// sequenceChecker records one handler's notifications per object and
// checks that they form a possible history: an add only while absent,
// updates and deletes only while present, resource versions increasing.
type sequenceChecker struct {
	mu sync.Mutex
	// present maps the objects the handler believes exist to their last
	// resource version.
	present    resourceVersions
	lastRV     map[string]int64
	violations []string
	changed    notifier
}

func newSequenceChecker() *sequenceChecker {
	return &sequenceChecker{present: resourceVersions{}, lastRV: map[string]int64{}, changed: newNotifier()}
}

func (s *sequenceChecker) handler() informer.ResourceEventHandlerFuncs[*corev1.Pod] {
	return informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc:    func(pod *corev1.Pod, _ bool) { s.record("add", pod, false) },
		UpdateFunc: func(_, pod *corev1.Pod) { s.record("update", pod, false) },
		DeleteFunc: func(d informer.DeletedObject[*corev1.Pod]) { s.record("delete", d.Object, d.FinalStateUnknown) },
	}
}

func (s *sequenceChecker) record(kind string, pod *corev1.Pod, finalStateUnknown bool) {
	key := pod.Namespace + "/" + pod.Name
	rv, err := strconv.ParseInt(pod.ResourceVersion, 10, 64)
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.changed.notify()
	violate := func(format string, args ...any) {
		s.violations = append(s.violations, key+": "+fmt.Sprintf(format, args...))
	}
	if err != nil {
		violate("%s with resource version %q: %v", kind, pod.ResourceVersion, err)
		return
	}
	_, exists := s.present[key]
	switch {
	case kind == "add" && exists:
		violate("add at %d while present", rv)
	case kind != "add" && !exists:
		violate("%s at %d while absent", kind, rv)
	}
	// A delete carries the last state: its version may equal the last one
	// seen, never be older.
	if last := s.lastRV[key]; rv < last || (rv == last && kind != "delete") {
		violate("%s at %d after %d", kind, rv, last)
	}
	if finalStateUnknown {
		violate("delete with final state unknown: no watch was interrupted")
	}
	s.lastRV[key] = rv
	if kind == "delete" {
		delete(s.present, key)
	} else {
		s.present[key] = pod.ResourceVersion
	}
}

// view returns what the handler believes exists.
func (s *sequenceChecker) view() resourceVersions {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.present)
}

// TestConvergenceUnderConcurrentWriters runs concurrent writers that
// create, update and delete pods in several namespaces while a pod informer
// watches every namespace, with one handler from the start and one added
// midway. Each handler's notifications must form a possible history of
// every pod, and, once the writers stop, the cache and both handlers' views
// must equal a fresh LIST.
func TestConvergenceUnderConcurrentWriters(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	client := newClientset(t)
	namespaces := make([]string, convergenceNamespaces)
	for i := range namespaces {
		namespaces[i] = newNamespace(ctx, t, client)
	}

	factory, err := informer.NewFactory(restConfig, informer.FactoryOptions{})
	if err != nil {
		t.Fatalf("NewFactory: %v", err)
	}
	defer factory.Shutdown()
	pods, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{})
	if err != nil {
		t.Fatalf("For: %v", err)
	}
	early, late := newSequenceChecker(), newSequenceChecker()
	if _, err := pods.AddEventHandler(early.handler()); err != nil {
		t.Fatalf("AddEventHandler: %v", err)
	}
	factory.Start(ctx)
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		t.Fatalf("WaitForCacheSync: %v", err)
	}

	var writers sync.WaitGroup
	errs := make(chan error, convergenceWriters)
	halfway := make(chan struct{})
	for w := range convergenceWriters {
		writers.Go(func() {
			if err := writePods(ctx, client, namespaces, w, halfway); err != nil {
				errs <- fmt.Errorf("writer %d: %w", w, err)
			}
		})
	}
	<-halfway
	lateReg, err := pods.AddEventHandler(late.handler())
	if err != nil {
		t.Fatalf("AddEventHandler (late): %v", err)
	}
	writers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if !cache.WaitFor(ctx, "late handler", lateReg.HasSyncedChecker()) {
		t.Fatal("the late handler did not sync")
	}

	want := listPods(ctx, t, client, metav1.NamespaceAll)
	t.Logf("%d pods at the end", len(want))
	// The early handler hears of every change after the cache has it.
	views := []struct {
		name    string
		view    func() resourceVersions
		changed notifier
	}{
		{"cache", func() resourceVersions { return cachedVersions(pods, metav1.NamespaceAll) }, early.changed},
		{"early handler", early.view, early.changed},
		{"late handler", late.view, late.changed},
	}
	for _, v := range views {
		if !waitFor(ctx, v.changed, func() bool { return cmp.Equal(want, v.view()) }) {
			t.Errorf("%s differs from a fresh LIST (-list +%s):\n%s", v.name, v.name, cmp.Diff(want, v.view()))
		}
	}
	for name, checker := range map[string]*sequenceChecker{"early handler": early, "late handler": late} {
		checker.mu.Lock()
		if n := len(checker.violations); n > 0 {
			t.Errorf("%s saw impossible histories (%d), the first ones:\n%v", name, n, checker.violations[:min(10, n)])
		}
		checker.mu.Unlock()
	}
}

// writePods makes convergenceOps random changes to writer w's pods,
// spread over namespaces, and closes halfway (writer 0 only) when half are
// done.
func writePods(ctx context.Context, client kubernetes.Interface, namespaces []string, w int, halfway chan<- struct{}) error {
	rng := rand.New(rand.NewPCG(uint64(w), 1))
	exists := make([]bool, convergencePods)
	for op := range convergenceOps {
		if w == 0 && op == convergenceOps/2 {
			close(halfway)
		}
		i := rng.IntN(convergencePods)
		ns := namespaces[i%len(namespaces)]
		name := fmt.Sprintf("w%d-p%d", w, i)
		pods := client.CoreV1().Pods(ns)
		var err error
		switch {
		case !exists[i]:
			_, err = pods.Create(ctx, newPod(name, "0"), metav1.CreateOptions{})
			exists[i] = err == nil
		case rng.IntN(3) == 0:
			err = pods.Delete(ctx, name, metav1.DeleteOptions{})
			exists[i] = err != nil
		default:
			patch := []byte(`{"metadata":{"labels":{"` + genLabel + `":"` + strconv.Itoa(op) + `"}}}`)
			_, err = pods.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		}
		if err != nil {
			return fmt.Errorf("op %d on %s/%s: %w", op, ns, name, err)
		}
	}
	return nil
}
