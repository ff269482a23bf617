package informer

import (
	"context"
	"fmt"
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
	// The label index holds the keys selections have named since the
	// first one: name app before anything is cached.
	_, err = inf.Lister().List(labels.SelectorFromSet(labels.Set{"app": "demo"}))
	plMust(t, err)
	stop := runWithLogs(t, inf)
	// The reader's hand-outs are recorded before its OnAdd calls, which
	// have all returned once it has synced.
	Eventually(t, "reader synced", reader.HasSynced)
	<-mutated
	listMutating(t, inf.Lister(), "p2")

	// What mutation does to the label index: it keeps the labels the
	// objects were cached with (for a key indexed by then), so a selector
	// is answered from the old labels (client-go's lister scans the
	// objects instead).
	byOld, err := inf.Lister().List(labels.SelectorFromSet(labels.Set{"app": "demo"}))
	plMust(t, err)
	byNew, err := inf.Lister().List(labels.SelectorFromSet(labels.Set{"app": "mutated"}))
	plMust(t, err)
	if diff := cmp.Diff([][]string{{"ns/p1", "ns/p2", "ns/p3"}, {}}, [][]string{keysOf(byOld), keysOf(byNew)}); diff != "" {
		t.Errorf("app=demo, app=mutated after the mutation (-want +got):\n%s", diff)
	}

	logs := stop()
	if st := inf.Stats(); st.MutatedObjects != 2 || st.MutatedValues != 2 {
		t.Errorf("MutatedObjects, MutatedValues = %d, %d; want 2, 2", st.MutatedObjects, st.MutatedValues)
	}
	reports := strings.Split(logs, "A cached value was modified")[1:]
	if len(reports) != 2 {
		t.Fatalf("%d mutation reports, want 2:\n%s", len(reports), logs)
	}
	for _, want := range []struct{ object, place string }{
		{`objects=["ns/p1"]`, "handler mutator (OnAdd)"},
		{`objects=["ns/p2"]`, "Lister.List called from github.com/kubetyped/informer.listMutating"},
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
	if strings.Contains(logs, `"ns/p3"`) {
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
	// One write, into the bytes p2 and p3 share: one report naming both.
	if got := inf.Stats().MutatedValues; got != 1 {
		t.Errorf("MutatedValues = %d, want 1", got)
	}
	if n := strings.Count(logs, "A cached value was modified"); n != 1 || !strings.Contains(logs, `objects=["ns/p2","ns/p3"]`) {
		t.Errorf("%d reports, want one naming ns/p2 and ns/p3:\n%s", n, logs)
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
	slices.Sort(sharers)
	want := `objects=["ns/` + strings.Join(sharers, `","ns/`) + `"]`
	if n := strings.Count(logs, "A cached value was modified"); n != 1 || !strings.Contains(logs, want) {
		t.Errorf("%d reports, want one with %s:\n%s", n, want, logs)
	}
	for _, name := range others {
		if strings.Contains(logs, `"ns/`+name+`"`) {
			t.Errorf("%s, which keeps its own labels, reported:\n%s", name, logs)
		}
	}
}

// TestMutationDetectorRateLimitsReports: writes into eight objects of
// their own, found by one check, make eight reports: five are logged, the
// other three counted and their number logged when Run ends.
func TestMutationDetectorRateLimitsReports(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1000, 0)) // checks run when Run ends
	inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{DetectMutations: new(true), Clock: clk})
	var pods []*corev1.Pod
	for i := range 8 {
		pods = append(pods, demoPod(fmt.Sprintf("p%d", i), "1"))
	}
	lw.SetList("5", pods...)
	stop := runWithLogs(t, inf)
	Eventually(t, "synced", inf.HasSynced)
	cached, err := inf.Lister().List(labels.Everything())
	plMust(t, err)
	for _, p := range cached {
		p.Labels["app"] = "mutated"
	}
	logs := stop()
	if n := strings.Count(logs, "A cached value was modified"); n != mutationLogBurst {
		t.Errorf("%d reports logged, want %d:\n%s", n, mutationLogBurst, logs)
	}
	if !strings.Contains(logs, "More cached values were modified than were logged") || !strings.Contains(logs, "reportsNotLogged=3") {
		t.Errorf("no line counting the 3 reports not logged:\n%s", logs)
	}
	if st := inf.Stats(); st.MutatedObjects != 8 || st.MutatedValues != 8 {
		t.Errorf("MutatedObjects, MutatedValues = %d, %d; want 8, 8", st.MutatedObjects, st.MutatedValues)
	}
}
