package informer_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/informertest"
)

// writeLabelThroughCache is the culprit of TestMutationDetectorOneReportPerSharedWrite:
// code that gets a pod from the cache and sets a label on it in place.
func writeLabelThroughCache(t *testing.T, l *informer.Lister[*corev1.Pod], name string) {
	t.Helper()
	pod, err := l.Namespace("ns").Get(name)
	if err != nil {
		t.Fatal(err)
	}
	pod.Labels["app"] = "mutated" // breaks the no-mutation rule
}

// TestMutationDetectorOneReportPerSharedWrite: with Deduplicate, the
// pods' equal labels are one shared map, and one write into it through one
// pod changes them all. The detector reports it once, naming every pod it
// changed and the places all of them were handed out to, among them the
// writer, which had one pod only; MutatedObjects counts the pods changed,
// MutatedValues the one write. (It reported each pod on its own, each
// with its own readers: the writer appeared in one report of 200.)
func TestMutationDetectorOneReportPerSharedWrite(t *testing.T) {
	lw := informertest.NewFakeListerWatcher[*corev1.Pod]()
	var pods []*corev1.Pod
	for i := range 200 {
		pods = append(pods, informer.NewPod("ns", fmt.Sprintf("p-%03d", i), "1", informer.PodLabels(map[string]string{"app": "demo", "tier": "web"})))
	}
	lw.SetList("5", pods...)
	inf := informer.MustNewInformer(t, lw, informer.InformerOptions[*corev1.Pod]{DetectMutations: new(true), Deduplicate: new(true)})
	reader, err := inf.AddEventHandlerWithOptions(informer.ResourceEventHandlerFuncs[*corev1.Pod]{}, informer.HandlerOptions{Name: "reader"})
	if err != nil {
		t.Fatal(err)
	}
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.Run(ctx)
	}()
	informer.Eventually(t, "the reader synced", reader.HasSynced)
	writeLabelThroughCache(t, inf.Lister(), "p-150")
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Run did not return")
	}

	cached, err := inf.Lister().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	changed := 0
	for _, p := range cached {
		if p.Labels["app"] == "mutated" {
			changed++
		}
	}
	if changed < 150 {
		t.Fatalf("%d pods share p-150's labels, want most of the 200", changed)
	}
	var reports []ktesting.LogEntry
	for _, e := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		if strings.HasPrefix(e.Message, "A cached value was modified") {
			reports = append(reports, e)
		}
	}
	if len(reports) != 1 {
		t.Fatalf("%d reports, want 1", len(reports))
	}
	report := map[string]any{}
	for i := 0; i+1 < len(reports[0].ParameterKVList); i += 2 {
		report[fmt.Sprint(reports[0].ParameterKVList[i])] = reports[0].ParameterKVList[i+1]
	}
	if got := report["objectCount"]; got != changed {
		t.Errorf("the report names %v objects, want the %d that changed", got, changed)
	}
	places := fmt.Sprint(report["handedOutTo"])
	for _, want := range []string{"handler reader (OnAdd)", "NamespaceLister.Get called from github.com/kubetyped/informer_test.writeLabelThroughCache"} {
		if !strings.Contains(places, want) {
			t.Errorf("the report's places %s do not name %q", places, want)
		}
	}
	stats := inf.Stats()
	if stats.MutatedObjects != int64(changed) || stats.MutatedValues != 1 {
		t.Errorf("MutatedObjects, MutatedValues = %d, %d; want %d, 1", stats.MutatedObjects, stats.MutatedValues, changed)
	}
}
