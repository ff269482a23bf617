package informer

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer/informertest"
	"github.com/kubetyped/informer/internal/prodpods"
	"github.com/kubetyped/informer/internal/testkit"
)

// costPageSize is the number of pods of one page of the served lists, as
// the reflector asks for them.
const costPageSize = 500

// prodPodsClient returns an HTTP client whose requests are answered as a
// server holding n production-like pods (internal/prodpods, W6's fixture)
// answers them: a list in pages of costPageSize pods, each encoded by
// encode (as the pages' contentType), and a watch that says nothing until
// the request ends.
func prodPodsClient(tb testing.TB, n int, contentType string, encode func(tb testing.TB, pods []corev1.Pod, next string) []byte) *http.Client {
	tb.Helper()
	pods := prodpods.New(n)
	var pages [][]byte
	for start := 0; start == 0 || start < n; start += costPageSize {
		end := min(start+costPageSize, n)
		next := ""
		if end < n {
			next = strconv.Itoa(len(pages) + 1)
		}
		pages = append(pages, encode(tb, pods[start:end], next))
	}
	return &http.Client{Transport: testkit.RoundTripFunc(func(req *http.Request) (*http.Response, error) {
		header := http.Header{"Content-Type": {contentType}}
		if req.URL.Query().Get("watch") == "true" {
			header.Set("Content-Type", contentType+";stream=watch")
			return &http.Response{StatusCode: http.StatusOK, Header: header, Body: idleWatchBody{req.Context()}, ContentLength: -1, Request: req}, nil
		}
		page, _ := strconv.Atoi(req.URL.Query().Get("continue"))
		body := pages[min(page, len(pages)-1)]
		return &http.Response{StatusCode: http.StatusOK, Header: header, Body: io.NopCloser(bytes.NewReader(body)),
			ContentLength: int64(len(body)), Request: req}, nil
	})}
}

// The encodings of one page of a list of pods, whose continue token is
// next: a PodList in protobuf and in JSON, and the pods' metadata as a
// PartialObjectMetadataList in JSON.
func protobufPodPage(tb testing.TB, pods []corev1.Pod, next string) []byte {
	return testkit.EncodeProtobuf(tb, &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: costListRV, Continue: next}, Items: pods})
}

func jsonPodPage(tb testing.TB, pods []corev1.Pod, next string) []byte {
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "PodList"},
		ListMeta: metav1.ListMeta{ResourceVersion: costListRV, Continue: next}, Items: slices.Clone(pods)}
	for i := range list.Items {
		list.Items[i].TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	}
	return mustJSON(tb, list)
}

func metadataPodPage(tb testing.TB, pods []corev1.Pod, next string) []byte {
	list := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"},
		ListMeta: metav1.ListMeta{ResourceVersion: costListRV, Continue: next}}
	for _, pod := range pods {
		list.Items = append(list.Items, metav1.PartialObjectMetadata{
			TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadata"}, ObjectMeta: pod.ObjectMeta})
	}
	return mustJSON(tb, list)
}

// costListRV is the resource version of the served lists.
const costListRV = "20000000"

func mustJSON(tb testing.TB, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

// idleWatchBody is the body of a watch with nothing to say: Read returns
// when the request ends.
type idleWatchBody struct{ ctx context.Context }

func (b idleWatchBody) Read([]byte) (int, error) {
	<-b.ctx.Done()
	return 0, b.ctx.Err()
}

func (idleWatchBody) Close() error { return nil }

// costCase is one informer of TestCostMatchesRetainedHeap: how it is
// served and built.
type costCase struct {
	name string
	// n is the number of pods.
	n           int
	contentType string
	encode      func(tb testing.TB, pods []corev1.Pod, next string) []byte
	// start builds an informer over client, runs it until the test ends
	// and waits for it to sync, and returns its Cost.
	start func(tb testing.TB, client *http.Client) func(context.Context) (CostReport, error)
	// suggestion is the first suggestion the report must make.
	suggestion string
}

// costConfig is the rest.Config of the informers of the cost tests.
var costConfig = &rest.Config{Host: "http://cost.invalid"}

// startPods returns a costCase's start for typed pods in protobuf,
// deduplicated if dedup is set, dropFields dropped.
func startPods(dedup bool, dropFields ...string) func(testing.TB, *http.Client) func(context.Context) (CostReport, error) {
	return func(tb testing.TB, client *http.Client) func(context.Context) (CostReport, error) {
		lw, err := NewRESTListerWatcher[*corev1.Pod](costConfig, RESTOptions{ContentType: ContentTypeProtobuf, HTTPClient: client, DropFields: dropFields})
		return startCostInformer(tb, lw, err, dedup)
	}
}

// startCostInformer returns a costCase's start for lw (and the error of
// its constructor).
func startCostInformer[T Object](tb testing.TB, lw ListerWatcher[T], err error, dedup bool) func(context.Context) (CostReport, error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
	inf, err := NewInformer(lw, InformerOptions[T]{DisableWatchList: true, Deduplicate: new(dedup)})
	if err != nil {
		tb.Fatal(err)
	}
	runSynced(tb, inf)
	return inf.Cost
}

// runSynced runs inf until the test ends, and waits for it to sync.
func runSynced[T Object](tb testing.TB, inf *Informer[T]) {
	tb.Helper()
	runUntilCleanup(tb, inf)
	testkit.Eventually(tb, "the informer synced", inf.HasSynced)
}

// runUntilCleanup runs inf until the test ends.
func runUntilCleanup[T Object](tb testing.TB, inf *Informer[T]) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.Run(ctx)
	}()
	tb.Cleanup(func() {
		cancel()
		<-done
	})
}

// costLiveHeap returns the live heap, after collections enough for the
// weak references of the intern tables to go.
func costLiveHeap() int64 {
	var ms runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// TestCostMatchesRetainedHeap checks the cost report against the runtime
// on W6's fixture: the rows of the report of an informer caching
// production-like pods add up to the heap the informer retains, within 5%,
// typed (by default, with Deduplicate, with fields dropped), unstructured
// (by default and with Deduplicate) and metadata-only; and its first
// suggestion is to drop managed fields where they are kept.
func TestCostMatchesRetainedHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("caches production-like pods, 5,000 at a time")
	}
	if testkit.Race {
		// Its 31,000 decodes take minutes under the detector, and the
		// walk it checks has no concurrency of its own (TestCostWhileWriting).
		t.Skip("measures the heap; without the race detector")
	}
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	for _, c := range []costCase{
		{name: "default", n: 5000, encode: protobufPodPage, start: startPods(false), suggestion: ManagedFields},
		{name: "Deduplicate", n: 5000, encode: protobufPodPage, start: startPods(true), suggestion: ManagedFields},
		{name: "managed fields dropped", n: 5000, encode: protobufPodPage, start: startPods(false, ManagedFields), suggestion: "spec.containers"},
		{name: "containers dropped", n: 5000, encode: protobufPodPage, start: startPods(false, "spec.containers"), suggestion: ManagedFields},
		{name: "unstructured", n: 2000, contentType: "application/json", encode: jsonPodPage, suggestion: ManagedFields,
			start: func(tb testing.TB, client *http.Client) func(context.Context) (CostReport, error) {
				lw, err := NewDynamicListerWatcher(costConfig, RESTOptions{Resource: pods, HTTPClient: client})
				return startCostInformer(tb, lw, err, false)
			}},
		{name: "unstructured Deduplicate", n: 2000, contentType: "application/json", encode: jsonPodPage, suggestion: ManagedFields,
			start: func(tb testing.TB, client *http.Client) func(context.Context) (CostReport, error) {
				lw, err := NewDynamicListerWatcher(costConfig, RESTOptions{Resource: pods, HTTPClient: client})
				return startCostInformer(tb, lw, err, true)
			}},
		{name: "metadata", n: 2000, contentType: "application/json", encode: metadataPodPage, suggestion: ManagedFields,
			start: func(tb testing.TB, client *http.Client) func(context.Context) (CostReport, error) {
				lw, err := NewMetadataListerWatcher(costConfig, RESTOptions{Resource: pods, HTTPClient: client})
				return startCostInformer(tb, lw, err, false)
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			contentType := cmp.Or(c.contentType, "application/vnd.kubernetes.protobuf")
			n := c.n
			client := prodPodsClient(t, n, contentType, c.encode)
			before := costLiveHeap()
			cost := c.start(t, client)
			retained := costLiveHeap() - before
			report, err := cost(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			logCostReport(t, report)
			t.Logf("retained %d B (%.0f B a pod), the report says %d B (%.0f B a pod): %+.2f%%", retained, float64(retained)/float64(n),
				report.Bytes, float64(report.Bytes)/float64(n), 100*(float64(report.Bytes)/float64(retained)-1))
			if report.Objects != n {
				t.Errorf("the report counts %d objects, want %d", report.Objects, n)
			}
			if diff := float64(report.Bytes)/float64(retained) - 1; diff < -0.05 || diff > 0.05 {
				t.Errorf("the report's rows add up to %d B, %+.1f%% off the %d B the informer retains", report.Bytes, 100*diff, retained)
			}
			if len(report.Suggestions) == 0 || report.Suggestions[0].Path != c.suggestion {
				t.Errorf("the suggestions are %+v, want %s first", report.Suggestions, c.suggestion)
			}
		})
	}
}

// logCostReport logs report's rows.
func logCostReport(t *testing.T, report CostReport) {
	t.Helper()
	var b strings.Builder
	for _, row := range report.Rows {
		b.WriteString("\n" + row.Path + " " + strconv.FormatInt(row.Bytes, 10) + " shared " + strconv.FormatInt(row.SharedBytes, 10) + " objects " + strconv.Itoa(row.Objects))
	}
	for _, row := range report.Suggestions {
		b.WriteString("\nsuggest " + row.Path)
	}
	t.Log(b.String())
}

// TestCostWhileWriting reports the cost of a cache that the informer is
// writing to (adds, updates and deletes arriving on the watch), from two
// goroutines at once: every report counts the objects of some state of
// the cache, and once the writes are applied the last one counts them all;
// a done context stops a report with its error. Run with -race, it checks
// that the walk reads nothing the informer writes.
func TestCostWhileWriting(t *testing.T) {
	const listed, added = 200, 200
	lw := informertest.NewFakeListerWatcher[*corev1.Pod]()
	var pods []*corev1.Pod
	for i := range listed {
		pods = append(pods, testkit.NewPod("ns", "listed-"+strconv.Itoa(i), "1"))
	}
	lw.SetList("1", pods...)
	inf, err := NewInformer(lw, InformerOptions[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	runSynced(t, inf)
	ctx := t.Context()
	writes := make(chan error, 1)
	go func() {
		for i := range added {
			rv := strconv.Itoa(2 + i)
			pod := testkit.NewPod("ns", "added-"+strconv.Itoa(i), rv, testkit.PodLabels(map[string]string{"app": strings.Repeat("a", i%40)}))
			if err := lw.Add(ctx, pod); err != nil {
				writes <- err
				return
			}
			if err := lw.Modify(ctx, testkit.NewPod("ns", "listed-"+strconv.Itoa(i), rv)); err != nil {
				writes <- err
				return
			}
			if i%2 == 0 {
				if err := lw.Delete(ctx, testkit.NewPod("ns", "added-"+strconv.Itoa(i), rv)); err != nil {
					writes <- err
					return
				}
			}
		}
		writes <- nil
	}()
	reports := make(chan error, 2)
	for range 2 {
		go func() {
			for range 10 {
				r, err := inf.Cost(ctx)
				if err == nil && (r.Objects < listed || r.Objects > listed+added || r.Bytes <= 0) {
					err = fmt.Errorf("a report of %d objects, %d B", r.Objects, r.Bytes)
				}
				if err != nil {
					reports <- err
					return
				}
			}
			reports <- nil
		}()
	}
	for range 2 {
		if err := <-reports; err != nil {
			t.Error(err)
		}
	}
	if err := <-writes; err != nil {
		t.Fatal(err)
	}
	want := listed + added/2
	testkit.Eventually(t, "the writes applied", func() bool { return len(inf.indexer.ListKeys()) == want })
	if r, err := inf.Cost(ctx); err != nil || r.Objects != want {
		t.Errorf("after the writes: a report of %d objects, %v; want %d", r.Objects, err, want)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := inf.Cost(canceled); err != context.Canceled {
		t.Errorf("Cost with a canceled context: %v, want %v", err, context.Canceled)
	}
}
