package informer

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
)

// demoPod returns pod ns/name labelled app=demo.
func demoPod(name, rv string) *corev1.Pod {
	p := NewPod("ns", name, rv)
	p.Labels = map[string]string{"app": "demo"}
	return p
}

// runWithLogs runs inf with a logger that keeps its output, and returns a
// function that stops the informer, waits for Run to return and returns
// the logs.
func runWithLogs(t *testing.T, inf *Informer[*corev1.Pod]) (stop func() string) {
	t.Helper()
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return func() string {
		cancel()
		select {
		case <-done:
		case <-time.After(plTimeout): // a failure guard
			t.Fatal("Run did not return")
		}
		return logger.GetSink().(ktesting.Underlier).GetBuffer().String()
	}
}

// listMutating lists the pods labelled app=demo and changes the labels of
// the one called name, as buggy controller code would.
func listMutating(t *testing.T, l *Lister[*corev1.Pod], name string) {
	t.Helper()
	pods, err := l.List(labels.SelectorFromSet(labels.Set{"app": "demo"}))
	plMust(t, err)
	for _, p := range pods {
		if p.Name == name {
			p.Labels["app"] = "mutated"
		}
	}
}

func TestMutationDetectorReportsTheObjectAndWhereItWasHandedOut(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0)) // checks run when Run ends
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{DetectMutations: new(true), Clock: clk})
	lw.SetList("5", demoPod("p1", "1"), demoPod("p2", "2"), demoPod("p3", "3"))
	mutated := make(chan struct{})
	mutator := ResourceEventHandlerFuncs[*corev1.Pod]{AddFunc: func(p *corev1.Pod, _ bool) {
		if p.Name == "p1" {
			p.Labels["app"] = "mutated" // a handler modifying a cached object
			close(mutated)
		}
	}}
	_, err := inf.AddEventHandlerWithOptions(mutator, HandlerOptions{Name: "mutator"})
	plMust(t, err)
	reader, err := inf.AddEventHandlerWithOptions(ResourceEventHandlerFuncs[*corev1.Pod]{}, HandlerOptions{Name: "reader"})
	plMust(t, err)
	stop := runWithLogs(t, inf)
	// The reader's hand-outs are recorded before its OnAdd calls, which
	// have all returned once it has synced.
	Eventually(t, "reader synced", reader.HasSynced)
	<-mutated
	listMutating(t, inf.Lister(), "p2")

	// What mutation does to the label index: it keeps the labels the
	// objects were cached with, so a selector is answered from the old
	// labels (client-go's lister scans the objects instead).
	byOld, err := inf.Lister().List(labels.SelectorFromSet(labels.Set{"app": "demo"}))
	plMust(t, err)
	byNew, err := inf.Lister().List(labels.SelectorFromSet(labels.Set{"app": "mutated"}))
	plMust(t, err)
	if diff := cmp.Diff([][]string{{"ns/p1", "ns/p2", "ns/p3"}, {}}, [][]string{keysOf(byOld), keysOf(byNew)}); diff != "" {
		t.Errorf("app=demo, app=mutated after the mutation (-want +got):\n%s", diff)
	}

	logs := stop()
	if got := inf.Stats().MutatedObjects; got != 2 {
		t.Errorf("MutatedObjects = %d, want 2", got)
	}
	reports := strings.Split(logs, "A cached object was modified")[1:]
	if len(reports) != 2 {
		t.Fatalf("%d mutation reports, want 2:\n%s", len(reports), logs)
	}
	for _, want := range []struct{ object, place string }{
		{`object="ns/p1"`, "handler mutator (OnAdd)"},
		{`object="ns/p2"`, "Lister.List called from github.com/kubetyped/informer.listMutating"},
	} {
		found := false
		for _, r := range reports {
			if strings.Contains(r, want.object) {
				found = true
				for _, s := range []string{want.place, "handler reader (OnAdd)", `"mutated"`} {
					if !strings.Contains(r, s) {
						t.Errorf("the report of %s does not contain %q:\n%s", want.object, s, r)
					}
				}
			}
		}
		if !found {
			t.Errorf("no report of %s in:\n%s", want.object, logs)
		}
	}
	if strings.Contains(logs, `object="ns/p3"`) {
		t.Errorf("the unmodified p3 was reported:\n%s", logs)
	}
}

func TestMutationDetectorChecksPeriodically(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{DetectMutations: new(true), Clock: clk})
	lw.SetList("5", demoPod("p1", "1"))
	stop := runWithLogs(t, inf)
	Eventually(t, "synced", inf.HasSynced)
	p, err := inf.Lister().Namespace("ns").Get("p1")
	plMust(t, err)
	p.Labels["app"] = "mutated"
	Eventually(t, "the mutation detected", func() bool {
		clk.Step(mutationCheckPeriod)
		return inf.Stats().MutatedObjects == 1
	})
	if logs := stop(); !strings.Contains(logs, "NamespaceLister.Get called from github.com/kubetyped/informer.TestMutationDetectorChecksPeriodically") {
		t.Errorf("the report does not say where the object was handed out:\n%s", logs)
	}
	if got := inf.Stats().MutatedObjects; got != 1 {
		t.Errorf("MutatedObjects = %d after Run, want 1 (reported once)", got)
	}
}

func TestMutationDetectorIsEnabledByClientGoEnvironmentVariable(t *testing.T) {
	t.Setenv(mutationDetectorEnv, "true")
	on, _ := plInformer(t, InformerOptions[*corev1.Pod]{})
	t.Setenv(mutationDetectorEnv, "")
	off, _ := plInformer(t, InformerOptions[*corev1.Pod]{})
	if on.hooks.detector == nil || off.hooks.detector != nil || on.lister.hooks.detector == nil {
		t.Errorf("detector with %s=true: %v, without: %v", mutationDetectorEnv, on.hooks.detector != nil, off.hooks.detector != nil)
	}
}

// TestMutationDetectorCatchesWritesToSharedBytes writes, from a handler,
// into managed fields' bytes that interning made the cached objects share:
// the detector reports every object whose value changed, the one written
// to and the ones sharing its bytes.
func TestMutationDetectorCatchesWritesToSharedBytes(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0)) // checks run when Run ends
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{DetectMutations: new(true), Deduplicate: new(true), Clock: clk})
	withFields := func(name string) *corev1.Pod {
		p := demoPod(name, "1")
		p.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:phase":{}}}`)}}}
		return p
	}
	// p1 keeps its own copy (a string is shared from its second sighting);
	// p2 and p3 share theirs.
	lw.SetList("5", withFields("p1"), withFields("p2"), withFields("p3"))
	mutated := make(chan struct{})
	_, err := inf.AddEventHandler(ResourceEventHandlerFuncs[*corev1.Pod]{AddFunc: func(p *corev1.Pod, _ bool) {
		if p.Name == "p2" {
			p.ManagedFields[0].FieldsV1.Raw[2] = 'F' // breaks the no-mutation rule
			close(mutated)
		}
	}})
	plMust(t, err)
	stop := runWithLogs(t, inf)
	<-mutated
	logs := stop()
	if got := inf.Stats().MutatedObjects; got != 2 {
		t.Errorf("MutatedObjects = %d, want 2 (p2 and p3, which shares its bytes):\n%s", got, logs)
	}
	for _, name := range []string{`object="ns/p2"`, `object="ns/p3"`} {
		if !strings.Contains(logs, name) {
			t.Errorf("no report of %s in:\n%s", name, logs)
		}
	}
}

// TestMutationDetectorCatchesWritesToSharedSubObjects writes, from a
// handler, into the labels map that deduplication made the cached objects
// share: the detector reports every object sharing it, and no other.
func TestMutationDetectorCatchesWritesToSharedSubObjects(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0)) // checks run when Run ends
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{DetectMutations: new(true), Deduplicate: new(true), Clock: clk})
	// p1 keeps its own labels (a sub-object is shared from its second
	// sighting); the others share theirs.
	lw.SetList("5", demoPod("p1", "1"), demoPod("p2", "1"), demoPod("p3", "1"), demoPod("p4", "1"), demoPod("p5", "1"))
	mutated := make(chan struct{})
	_, err := inf.AddEventHandler(ResourceEventHandlerFuncs[*corev1.Pod]{AddFunc: func(p *corev1.Pod, _ bool) {
		if p.Name == "p4" {
			p.Labels["app"] = "mutated" // breaks the no-mutation rule
			close(mutated)
		}
	}})
	plMust(t, err)
	stop := runWithLogs(t, inf)
	<-mutated
	logs := stop()
	pods, err := inf.Lister().List(nil)
	plMust(t, err)
	var sharers, others []string
	for _, p := range pods {
		if p.Labels["app"] == "mutated" {
			sharers = append(sharers, p.Name)
		} else {
			others = append(others, p.Name)
		}
	}
	// The filter of values seen once may forget p1's sighting (rarely), so
	// that p2 keeps its own too: at least p3, p4 and p5 share.
	if len(sharers) < 3 || !slices.Contains(others, "p1") {
		t.Fatalf("pods sharing p4's labels: %v, want p1 not among them and at least 3", sharers)
	}
	if got := inf.Stats().MutatedObjects; got != int64(len(sharers)) {
		t.Errorf("MutatedObjects = %d, want %d (%v, which share p4's labels):\n%s", got, len(sharers), sharers, logs)
	}
	for _, name := range sharers {
		if !strings.Contains(logs, `object="ns/`+name+`"`) {
			t.Errorf("no report of %s in:\n%s", name, logs)
		}
	}
	for _, name := range others {
		if strings.Contains(logs, `object="ns/`+name+`"`) {
			t.Errorf("%s, which keeps its own labels, reported:\n%s", name, logs)
		}
	}
}
