package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/internal/benchkit"
)

// The churn workload measures what an informer keeps after churn that
// leaves nothing cached: Job-like pods created, updated and deleted,
// churnParallelism at a time, every pod with a name, UID, IP, container ID
// and label values of its own (W1's pods, pods.go), served over HTTP in
// protobuf, decoded by client-go's REST client or by our REST
// ListerWatcher (which interns strings as it decodes, and with Deduplicate
// shares sub-objects). The figure is the live heap once the informer has
// delivered every deletion, less the live heap once it had synced its empty
// list: what the churn left behind.

// churnParallelism is how many pods of the churn live at a time.
const churnParallelism = 100

// churnListRV is the resource version of the churn's empty list; the
// watch's events follow it.
const churnListRV = 1

// churnResult is the cost of one churn run.
type churnResult struct {
	retainedKiB float64
}

// runChurn is the churn workload: client-go, ours by default and ours with
// Deduplicate, in turn, once each whatever cfg.count: the figure is a
// retained heap, not a timing, and a run of 200,000 cycles takes about a
// minute per side on a loaded 2-core machine.
func runChurn(cfg config) ([]benchkit.Row, error) {
	sides := []struct {
		name  string
		build func(*churnTransport, []*countingHandler) (*informerUnderTest, error)
	}{
		{"client-go", newClientGoChurnInformer},
		{"ours", newOurChurnInformer(false)},
		{"ours with Deduplicate", newOurChurnInformer(true)},
	}
	runs := make([]churnResult, len(sides))
	for s, side := range sides {
		start := time.Now()
		r, err := measureChurn(side.build, cfg.churnCycles)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", side.name, err)
		}
		runs[s] = r
		progress("churn: %s (%d/%d) done in %v", side.name, s+1, len(sides), time.Since(start).Round(time.Millisecond))
	}
	cycles := groupThousands(int64(cfg.churnCycles))
	var rows []benchkit.Row
	for s, kase := range []string{"default", "Deduplicate"} {
		// A change near zero, of either sign: a quotient of two means nothing.
		rows = append(rows, withoutRatio(newRow("churn", cycles+" create/update/delete cycles, nothing cached after; ours: "+kase,
			"retained heap Δ after churn (KiB) (no ratio)", runs[0].retainedKiB, runs[s+1].retainedKiB)))
	}
	return rows, nil
}

// measureChurn builds an informer over a churnTransport of cycles cycles,
// syncs it, releases the watch and measures the live heap before and
// after.
func measureChurn(build func(*churnTransport, []*countingHandler) (*informerUnderTest, error), cycles int) (churnResult, error) {
	handlers := newCountingHandlers(1, 3*cycles, nil)
	t := &churnTransport{cycles: cycles, watches: newWatchScript(nil)}
	it, err := build(t, handlers)
	if err != nil {
		return churnResult{}, err
	}
	stop := it.start()
	defer stop()
	if err := waitFor("HasSynced", it.hasSynced, syncTimeout); err != nil {
		return churnResult{}, err
	}
	before := liveHeap()
	it.watches.release()
	if err := waitAll(handlers, syncTimeout); err != nil {
		return churnResult{}, err
	}
	after := liveHeap()
	if n := it.storeLen(); n != 0 {
		return churnResult{}, fmt.Errorf("store holds %d pods after the churn, want 0", n)
	}
	runtime.KeepAlive(it)
	stop()
	if err := checkCounts(handlers, eventCounts{adds: cycles, updates: cycles, deletes: cycles}); err != nil {
		return churnResult{}, err
	}
	return churnResult{retainedKiB: (float64(after) - float64(before)) / 1024}, nil
}

// settleCleanups is liveHeap's pause after a collection.
const settleCleanups = 20 * time.Millisecond

// newClientGoChurnInformer builds client-go's shared index informer over a
// typed clientset talking to t in protobuf.
func newClientGoChurnInformer(t *churnTransport, handlers []*countingHandler) (*informerUnderTest, error) {
	cs, err := kubernetes.NewForConfigAndClient(&rest.Config{
		Host:          "http://churn.invalid",
		ContentConfig: rest.ContentConfig{ContentType: protoContentType},
	}, &http.Client{Transport: t})
	if err != nil {
		return nil, err
	}
	pods := cs.CoreV1().Pods("")
	lw := clientGoListThenWatch{&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, options metav1.ListOptions) (k8sruntime.Object, error) {
			return pods.List(ctx, options)
		},
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			return pods.Watch(ctx, options)
		},
	}}
	return buildClientGoInformer(lw, t.watches, nil, handlers)
}

// clientGoListThenWatch makes client-go's reflector list and then watch, as
// ours does over listThenWatch.
type clientGoListThenWatch struct{ *cache.ListWatch }

// IsWatchListSemanticsUnSupported makes client-go's reflector list and then
// watch.
func (clientGoListThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

// newOurChurnInformer returns a builder of our informer over our REST
// ListerWatcher talking to t in protobuf, deduplicating if dedup is set.
func newOurChurnInformer(dedup bool) func(*churnTransport, []*countingHandler) (*informerUnderTest, error) {
	return func(t *churnTransport, handlers []*countingHandler) (*informerUnderTest, error) {
		lw, err := informer.NewRESTListerWatcher[*corev1.Pod](&rest.Config{Host: "http://churn.invalid"}, informer.RESTOptions{
			ContentType: informer.ContentTypeProtobuf,
			HTTPClient:  &http.Client{Transport: t},
		})
		if err != nil {
			return nil, err
		}
		return buildOurInformer(listThenWatch{lw}, t.watches, nil, dedup, handlers)
	}
}

// churnTransport answers a REST client's list requests with an empty pod
// list at churnListRV and its first watch request, once the harness
// releases watches, with the churn's events, encoded as they are read;
// later watches, and the first after its events, stay idle.
type churnTransport struct {
	cycles  int
	watches *watchScript
	watched bool
}

// RoundTrip implements http.RoundTripper. The informer makes one request
// at a time.
func (t *churnTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if req.URL.Query().Get("watch") != "true" {
		body, err := encodeProto(&corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(churnListRV)}})
		if err != nil {
			return nil, err
		}
		return prodResponse(req, protoContentType, bytes.NewReader(body), int64(len(body))), nil
	}
	select {
	case <-t.watches.released:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	idle := &idleBody{ctx: ctx, closed: make(chan struct{})}
	var body io.Reader = idle
	if !t.watched {
		t.watched = true
		body = io.MultiReader(&churnEvents{cycles: t.cycles}, idle)
	}
	return prodResponse(req, protoContentType+";stream=watch", struct {
		io.Reader
		io.Closer
	}{body, idle}, -1), nil
}

// churnEvents is the body of the churn's watch: per churnParallelism pods
// (W1's pods, pods.go, numbered on), their Added events, then Modified
// (the pod finished), then Deleted, each at the next resource version.
type churnEvents struct {
	cycles int
	next   int // the first pod of the next batch
	rv     int
	buf    bytes.Buffer
}

// Read implements io.Reader.
func (e *churnEvents) Read(p []byte) (int, error) {
	if e.buf.Len() == 0 {
		if e.next == e.cycles {
			return 0, io.EOF
		}
		if err := e.batch(); err != nil {
			return 0, err
		}
	}
	return e.buf.Read(p)
}

// batch encodes the events of the next batch of pods into buf.
func (e *churnEvents) batch() error {
	n := min(churnParallelism, e.cycles-e.next)
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = newPod(e.next + i)
	}
	e.next += n
	for _, typ := range []watch.EventType{watch.Added, watch.Modified, watch.Deleted} {
		for _, p := range pods {
			if typ == watch.Modified {
				p.Status.Phase = corev1.PodSucceeded
			}
			e.rv++
			p.ResourceVersion = strconv.Itoa(churnListRV + e.rv)
			frame, err := encodeWatchEvents(typ, p)
			if err != nil {
				return err
			}
			e.buf.Write(frame)
		}
	}
	return nil
}
