package main

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/internal/benchkit"
)

// W6 measures memory at rest and in motion on the production-like pods of
// prodpods.go. Every list and watch decodes its objects anew from protobuf
// bytes through client-go's codec, so each implementation caches objects
// that nothing else holds, and pays what a real list or watch costs.
//
// Ours runs in several configurations, each named in its rows' case:
// the default (the REST ListerWatcher served over HTTP by w6_wire.go,
// interning strings on decode, as the factory builds it), Deduplicate
// through the same, and Deduplicate through a ListerWatcher that decodes
// every item with client-go's codec; managed fields dropped on the wire
// (DropFields) or by a transform; (c), a declared projection of the fields
// a typical controller reads dropped on the wire, beside client-go's (a).
// Over HTTP, a relist (d) does not decode the items the cache holds.

// relistGCPercent is the GOGC in force while W6(d) samples the heap during
// a relist: low enough that the sampled heap stays within 10% of what is
// live, so that the peak shows what the relist holds rather than how much
// garbage the collector's pacing lets accumulate.
const relistGCPercent = 10

// prodListRV is the resource version of W6's lists.
const prodListRV = "20000000"

// prodSource serves one informer's lists and watches. Every List call
// decodes its page anew, and counts itself in lists when it starts a list;
// watches come from the script (the first once the harness releases it), or,
// for an informer served over HTTP (w6_wire.go), from stream, the body of
// its first watch.
//
// A list comes in pages of prodPageSize pods, as a server paginating at the
// reflectors' page size of 500 serves them (both reflectors ask for a
// limit), each page's body naming the next in its continue token; a request
// without a limit gets every page as one list.
type prodSource struct {
	pages   [][]byte // PodList bodies
	stream  []byte
	watches *watchScript
	lists   atomic.Int32
}

// prodPageSize is the number of pods in one page of a prodSource's list:
// the page size both reflectors ask for.
const prodPageSize = 500

// encodeProdPages encodes pods as the pages of one list at resourceVersion.
func encodeProdPages(pods []corev1.Pod, resourceVersion string) ([][]byte, error) {
	var pages [][]byte
	for start := 0; start == 0 || start < len(pods); start += prodPageSize {
		end := min(start+prodPageSize, len(pods))
		list := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: resourceVersion}, Items: pods[start:end]}
		if end < len(pods) {
			list.Continue = strconv.Itoa(len(pages) + 1)
		}
		page, err := encodeProto(list)
		if err != nil {
			return nil, err
		}
		pages = append(pages, page)
	}
	return pages, nil
}

// page returns the body of the page a continue token names (the first for
// ""), counting a list when it starts.
func (s *prodSource) page(continueToken string) ([]byte, error) {
	if continueToken == "" {
		s.lists.Add(1)
		return s.pages[0], nil
	}
	i, err := strconv.Atoi(continueToken)
	if err != nil || i <= 0 || i >= len(s.pages) {
		return nil, apierrors.NewResourceExpired("unknown continue token")
	}
	return s.pages[i], nil
}

// listPods serves one List call: the page the continue token names, or
// without a limit every page as one list.
func (s *prodSource) listPods(options metav1.ListOptions) (*corev1.PodList, error) {
	if options.Limit != 0 {
		body, err := s.page(options.Continue)
		if err != nil {
			return nil, err
		}
		return decodeProdPodList(body)
	}
	s.lists.Add(1)
	var all *corev1.PodList
	for _, body := range s.pages {
		list, err := decodeProdPodList(body)
		if err != nil {
			return nil, err
		}
		if all == nil {
			all = list
		} else {
			all.Items = append(all.Items, list.Items...)
		}
	}
	all.Continue = ""
	return all, nil
}

// clientGoProdListerWatcher is prodSource as a cache.ListerWatcher.
type clientGoProdListerWatcher struct{ src *prodSource }

// List implements cache.Lister.
func (lw clientGoProdListerWatcher) List(options metav1.ListOptions) (runtime.Object, error) {
	return lw.ListWithContext(context.Background(), options)
}

// ListWithContext implements cache.ListerWithContext.
func (lw clientGoProdListerWatcher) ListWithContext(_ context.Context, options metav1.ListOptions) (runtime.Object, error) {
	return lw.src.listPods(options)
}

// Watch implements cache.Watcher.
func (lw clientGoProdListerWatcher) Watch(options metav1.ListOptions) (watch.Interface, error) {
	return lw.WatchWithContext(context.Background(), options)
}

// WatchWithContext implements cache.WatcherWithContext.
func (lw clientGoProdListerWatcher) WatchWithContext(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	return lw.src.watches.open(ctx)
}

// IsWatchListSemanticsUnSupported makes client-go's reflector list and then
// watch, as for the other workloads.
func (lw clientGoProdListerWatcher) IsWatchListSemanticsUnSupported() bool { return true }

// ourProdListerWatcher is prodSource as an informer.ListerWatcher. Like the
// library's REST lister-watcher, its items point into the decoded list.
type ourProdListerWatcher struct{ src *prodSource }

// List implements informer.ListerWatcher.
func (lw ourProdListerWatcher) List(_ context.Context, options metav1.ListOptions) (*informer.ListResult[*corev1.Pod], error) {
	list, err := lw.src.listPods(options)
	if err != nil {
		return nil, err
	}
	items := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		items[i] = &list.Items[i]
	}
	return &informer.ListResult[*corev1.Pod]{Items: items, ResourceVersion: list.ResourceVersion, Continue: list.Continue}, nil
}

// Watch implements informer.ListerWatcher.
func (lw ourProdListerWatcher) Watch(ctx context.Context, _ metav1.ListOptions) (watch.Interface, error) {
	return lw.src.watches.open(ctx)
}

// IsWatchListSemanticsUnSupported makes our reflector list and then watch.
func (lw ourProdListerWatcher) IsWatchListSemanticsUnSupported() bool { return true }

// newProdInformerFunc builds one implementation's informer (with the
// namespace index) over src, with managed fields dropped by a transform when
// strip is set, and handlers registered.
type newProdInformerFunc func(src *prodSource, strip bool, handlers []*countingHandler) (*informerUnderTest, error)

// clientGoStripManagedFields is the transform client-go users write (as
// controller-runtime's TransformStripManagedFields): it clears
// metadata.managedFields of every object that has metadata.
func clientGoStripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// newClientGoProdInformer builds client-go's shared index informer over src.
func newClientGoProdInformer(src *prodSource, strip bool, handlers []*countingHandler) (*informerUnderTest, error) {
	var transform cache.TransformFunc
	if strip {
		transform = clientGoStripManagedFields
	}
	return buildClientGoInformer(clientGoProdListerWatcher{src}, src.watches, transform, handlers)
}

// newOurProdInformer builds our informer over src, with Deduplicate (the
// leanest cache this ListerWatcher allows: it decodes with client-go's
// codec, so nothing is interned on decode); it drops managed fields with
// the library's StripManagedFields transform.
func newOurProdInformer(src *prodSource, strip bool, handlers []*countingHandler) (*informerUnderTest, error) {
	var transform informer.TransformFunc[*corev1.Pod]
	if strip {
		transform = informer.StripManagedFields[*corev1.Pod]
	}
	return buildOurInformer(ourProdListerWatcher{src}, src.watches, transform, true, handlers)
}

// cacheResult is the cost of one W6 (a)/(b)/(d) run.
type cacheResult struct {
	retainedPerPod float64
	// relistRatio is the peak heap during the relist over the steady state,
	// both counted above the heap before the informer was built; relistMB
	// is that peak. Both are 0 when the run did not relist.
	relistRatio, relistMB float64
	// relistGCCycles is the number of GC cycles that completed while the
	// relist's heap was sampled. With none, the largest sample is the heap
	// before plus the bytes allocated: an upper bound of the peak, not a
	// peak (a relist over HTTP that decodes nothing may allocate too little
	// to start a cycle, even at GOGC=10).
	relistGCCycles uint64
}

// eventResult is the cost of one W6 (e) run.
type eventResult struct {
	allocsPerEvent, bytesPerEvent float64
}

// runMemory is W6: every configuration measured once per round, rounds
// repeated cfg.count times.
func runMemory(cfg config) ([]benchkit.Row, error) {
	protoBytes, heapBytes, err := prodPodSizes(min(cfg.prodPods, 1000))
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "bench: W6 production-like pod %.0f B as protobuf, %.0f B on the heap once decoded\n", protoBytes, heapBytes)
	pods := newProdPods(cfg.prodPods)
	list, err := encodeProdPages(pods, prodListRV)
	if err != nil {
		return nil, err
	}
	events := min(cfg.prodPods, 10_000)
	stream, err := encodeProdWatch(pods[:events], watch.Added)
	if err != nil {
		return nil, err
	}
	pods = nil // from here on only the protobuf bytes stay
	emptyList, err := encodeProdPages(nil, "1")
	if err != nil {
		return nil, err
	}

	// Each round measures every configuration once, in this order,
	// client-go's first: a configuration's (a) and (d) come from one
	// informer (measureCache relists after measuring the retained heap),
	// its (b) or (c) from another, its (e) from a third.
	var runs memoryRuns
	wireDefault, wireDedup := newOurWireProdInformer(nil, false), newOurWireProdInformer(nil, true)
	caches := []struct {
		what        string
		newInformer newProdInformerFunc
		strip       bool
		runs        *[]cacheResult
	}{
		{"(a, d) client-go", newClientGoProdInformer, false, &runs.clientGo},
		{"(a, d) ours with Deduplicate", newOurProdInformer, false, &runs.decodingDedup},
		{"(a, d) ours default over HTTP", wireDefault, false, &runs.wireDefault},
		{"(a, d) ours with Deduplicate over HTTP", wireDedup, false, &runs.wireDedup},
		{"(b) client-go", newClientGoProdInformer, true, &runs.clientGoStripped},
		{"(b) ours with Deduplicate", newOurProdInformer, true, &runs.decodingDedupStripped},
		{"(b) ours default over HTTP", wireDefault, true, &runs.wireDefaultStripped},
		{"(c) ours", newOurWireProdInformer(typicalControllerDropFields, false), true, &runs.projected},
	}
	watches := []struct {
		what        string
		newInformer newProdInformerFunc
		strip, wire bool
		runs        *[]eventResult
	}{
		{"(e) client-go", newClientGoProdInformer, false, false, &runs.clientGoEvents},
		{"(e) client-go, managed fields dropped", newClientGoProdInformer, true, false, &runs.clientGoStrippedEvents},
		{"(e) ours with Deduplicate", newOurProdInformer, false, false, &runs.decodingDedupEvents},
		{"(e) ours with Deduplicate, managed fields dropped", newOurProdInformer, true, false, &runs.decodingDedupStrippedEvents},
		{"(e) ours default, on the wire", wireDefault, false, true, &runs.wireEvents},
		{"(e) ours default, managed fields dropped on the wire", wireDefault, true, true, &runs.wireStrippedEvents},
	}
	for range cfg.count {
		for _, c := range caches {
			r, err := measureCache(c.newInformer, list, cfg.prodPods, c.strip)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.what, err)
			}
			*c.runs = append(*c.runs, r)
		}
		for _, w := range watches {
			r, err := measureWatchEvents(w.newInformer, emptyList, stream, events, w.strip, w.wire)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", w.what, err)
			}
			*w.runs = append(*w.runs, r)
		}
	}
	return memoryRows(cfg.prodPods, events, runs), nil
}

// W6's configurations of ours, as its case names say them. The default is
// what a user gets from the factory or NewRESTListerWatcher: strings
// interned as the pods are decoded, no Deduplicate. Client-go runs its
// defaults, with a managed-fields transform where fields are dropped.
const (
	oursDefault       = "ours default: REST ListerWatcher over HTTP, strings interned on decode"
	oursDedupWire     = "ours Deduplicate: REST ListerWatcher over HTTP, deduplicated on decode"
	oursDedupDecoding = "ours Deduplicate: a ListerWatcher decoding every item, then deduplicated"
)

// memoryRuns are the runs of every W6 configuration, named by what ours
// runs (see the constants above); client-go's are its own.
type memoryRuns struct {
	clientGo, clientGoStripped                                                       []cacheResult
	wireDefault, wireDedup, decodingDedup                                            []cacheResult
	wireDefaultStripped, decodingDedupStripped, projected                            []cacheResult
	clientGoEvents, clientGoStrippedEvents                                           []eventResult
	wireEvents, decodingDedupEvents, wireStrippedEvents, decodingDedupStrippedEvents []eventResult
}

// memoryRows returns W6's rows for pods cached pods and events decoded
// events: every case names ours' configuration, each figure of (a), (b),
// (d) and (e) has a row for ours' default, and (d)'s peak over each
// side's own steady state has no ratio (client-go's over ours would mean
// nothing).
func memoryRows(pods, events int, runs memoryRuns) []benchkit.Row {
	var rows []benchkit.Row
	retained := func(r cacheResult) float64 { return r.retainedPerPod }
	add := func(kase, metric string, cg, ours []cacheResult, f func(cacheResult) float64) {
		rows = append(rows, newRow("W6", kase, metric, benchkit.MedianOf(cg, f), benchkit.MedianOf(ours, f)))
	}
	n := groupThousands(int64(pods))
	for _, c := range []struct {
		how  string
		runs []cacheResult
	}{{oursDefault, runs.wireDefault}, {oursDedupWire, runs.wireDedup}, {oursDedupDecoding, runs.decodingDedup}} {
		add("(a) "+n+" pods cached; "+c.how, retainedMetric, runs.clientGo, c.runs, retained)
	}
	dropped := "(b) " + n + " pods, managed fields dropped (client-go: its transform); "
	add(dropped+"ours default + DropFields managed fields: REST ListerWatcher over HTTP", retainedMetric, runs.clientGoStripped, runs.wireDefaultStripped, retained)
	add(dropped+"ours Deduplicate + StripManagedFields transform: a ListerWatcher decoding every item", retainedMetric, runs.clientGoStripped, runs.decodingDedupStripped, retained)
	// (c) is ours only: beside client-go's (a), as the acceptance reads it.
	add("(c) "+n+" pods; ours default + DropFields of a controller's projection: REST ListerWatcher over HTTP; client-go: (a), every field",
		retainedMetric, runs.clientGo, runs.projected, retained)
	relist := "(d) relist of the unchanged " + n + " pods, GOGC=" + strconv.Itoa(relistGCPercent) + "; "
	for _, c := range []struct {
		how  string
		runs []cacheResult
	}{{oursDefault, runs.wireDefault}, {oursDedupWire, runs.wireDedup}, {oursDedupDecoding, runs.decodingDedup}} {
		f := func(r cacheResult) float64 { return r.relistRatio }
		ratioMetric, deltaMetric := relistMetrics(runs.clientGo, c.runs)
		rows = append(rows, withoutRatio(newRow("W6", relist+c.how, ratioMetric,
			benchkit.MedianOf(runs.clientGo, f), benchkit.MedianOf(c.runs, f))))
		add(relist+c.how, deltaMetric, runs.clientGo, c.runs, func(r cacheResult) float64 { return r.relistMB })
	}
	addEvents := func(kase string, cg, ours []eventResult) {
		for _, m := range []struct {
			metric string
			f      func(eventResult) float64
		}{
			{"allocs/event", func(r eventResult) float64 { return r.allocsPerEvent }},
			{"B/event", func(r eventResult) float64 { return r.bytesPerEvent }},
		} {
			rows = append(rows, newRow("W6", kase, m.metric, benchkit.MedianOf(cg, m.f), benchkit.MedianOf(ours, m.f)))
		}
	}
	ev := "(e) " + groupThousands(int64(events)) + " watch events decoded"
	addEvents(ev+"; ours default: REST ListerWatcher over HTTP", runs.clientGoEvents, runs.wireEvents)
	addEvents(ev+"; ours Deduplicate: decoding every event with client-go's codec", runs.clientGoEvents, runs.decodingDedupEvents)
	evDropped := ev + ", managed fields dropped (client-go: its transform); "
	addEvents(evDropped+"ours default + DropFields managed fields: REST ListerWatcher over HTTP", runs.clientGoStrippedEvents, runs.wireStrippedEvents)
	addEvents(evDropped+"ours Deduplicate + StripManagedFields transform: decoding every event with client-go's codec", runs.clientGoStrippedEvents, runs.decodingDedupStrippedEvents)
	return rows
}

// relistMetrics names (d)'s two metrics for client-go's runs cg and ours'
// runs: a peak when a GC cycle completed in each run of both sides, and
// otherwise the largest heap sampled, saying whose is an upper bound of
// the peak (bytes allocated, no cycle having completed).
func relistMetrics(cg, ours []cacheResult) (ratio, delta string) {
	var bounds []string
	for _, side := range []struct {
		name string
		runs []cacheResult
	}{{"client-go's", cg}, {"ours'", ours}} {
		if slices.ContainsFunc(side.runs, func(r cacheResult) bool { return r.relistGCCycles == 0 }) {
			bounds = append(bounds, side.name)
		}
	}
	if len(bounds) == 0 {
		return "peak heap ÷ own steady state (no ratio)", "peak heap Δ (MB)"
	}
	bound := " (" + strings.Join(bounds, " and ") + ": no GC cycle completed, so bytes allocated, an upper bound of the peak)"
	return "largest heap ÷ own steady state" + bound + " (no ratio)", "largest heap Δ (MB)" + bound
}

// measureCache syncs an informer over a list of pods and measures the
// retained heap per cached pod. Without strip it then relists the unchanged
// pods (the watch ends with "resource version too old") and samples the
// heap until the informer has processed the whole new list.
func measureCache(newInformer newProdInformerFunc, list [][]byte, pods int, strip bool) (cacheResult, error) {
	// The first handler is done once the list is delivered, the second
	// once the relist's updates are too.
	handlers := append(newCountingHandlers(1, pods, nil), newCountingHandlers(1, 2*pods, nil)...)
	expired := watch.Event{Type: watch.Error, Object: &apierrors.NewResourceExpired("too old resource version").ErrStatus}
	// An informer over HTTP (w6_wire.go) reads the same event from stream.
	stream, err := encodeWatchEvents(watch.Error, expired.Object)
	if err != nil {
		return cacheResult{}, err
	}
	src := &prodSource{pages: list, stream: stream, watches: newWatchScript([]watch.Event{expired})}
	before := liveHeap()
	it, err := newInformer(src, strip, handlers)
	if err != nil {
		return cacheResult{}, err
	}
	stop := it.start()
	defer stop()
	if err := waitAll(handlers[:1], syncTimeout); err != nil {
		return cacheResult{}, err
	}
	if err := waitFor("HasSynced", it.hasSynced, syncTimeout); err != nil {
		return cacheResult{}, err
	}
	steady := liveHeap()
	if n := it.storeLen(); n != pods {
		return cacheResult{}, fmt.Errorf("store holds %d pods, want %d", n, pods)
	}
	r := cacheResult{retainedPerPod: (float64(steady) - float64(before)) / float64(pods)}
	if strip {
		return r, nil
	}

	old := debug.SetGCPercent(relistGCPercent)
	defer debug.SetGCPercent(old)
	sampler := benchkit.StartHeapSampler(2 * time.Millisecond)
	it.watches.release()
	err = waitAll(handlers[1:], syncTimeout)
	peak := sampler.Stop()
	if err != nil {
		return cacheResult{}, fmt.Errorf("relist: %w", err)
	}

	if n := src.lists.Load(); n != 2 {
		return cacheResult{}, fmt.Errorf("%d lists, want 2", n)
	}
	stop()
	if err := checkCounts(handlers[1:], eventCounts{adds: pods, updates: pods}); err != nil {
		return cacheResult{}, err
	}
	r.relistRatio = (float64(peak) - float64(before)) / (float64(steady) - float64(before))
	r.relistMB = (float64(peak) - float64(before)) / (1 << 20)
	r.relistGCCycles = sampler.GCCycles()
	return r, nil
}

// measureWatchEvents runs an informer with an empty list whose watch then
// delivers events Added events decoded from stream, and measures the
// allocations made from releasing the watch until a handler has counted
// every event: decoding, the transform when strip is set, caching and
// dispatch. A wire informer (newOurWireProdInformer) reads stream itself,
// over HTTP; the others read the events client-go's decoders make of it.
func measureWatchEvents(newInformer newProdInformerFunc, emptyList [][]byte, stream []byte, events int, strip, wire bool) (eventResult, error) {
	handlers := newCountingHandlers(1, events, nil)
	script := newWatchScript(nil)
	src := &prodSource{pages: emptyList, watches: script}
	pumped := make(chan struct{})
	if wire {
		src.stream = stream
		close(pumped)
	} else {
		decoded, err := newProdWatch(stream)
		if err != nil {
			return eventResult{}, err
		}
		// The informer reads the scripted watch, fed from the decoding one:
		// no event is decoded before the informer asks for it.
		feed := make(chan watch.Event)
		script.first = &scriptedWatch{events: feed, stopped: make(chan struct{})}
		go func() {
			defer close(pumped)
			defer decoded.Stop()
			for {
				select {
				case e, ok := <-decoded.ResultChan():
					if !ok {
						return
					}
					select {
					case feed <- e:
					case <-script.first.stopped:
						return
					}
				case <-script.first.stopped:
					return
				}
			}
		}()
	}
	it, err := newInformer(src, strip, handlers)
	if err != nil {
		script.first.Stop()
		<-pumped
		return eventResult{}, err
	}
	stop := it.start()
	defer func() {
		stop()
		script.first.Stop() // in case the informer stopped before watching
		<-pumped
	}()
	if err := waitFor("HasSynced", it.hasSynced, syncTimeout); err != nil {
		return eventResult{}, err
	}
	mem := readMemCounters()
	it.watches.release()
	if err := waitAll(handlers, syncTimeout); err != nil {
		return eventResult{}, err
	}
	alloc := mem.since()
	if n := it.storeLen(); n != events {
		return eventResult{}, fmt.Errorf("store holds %d pods, want %d", n, events)
	}
	n := float64(events)
	return eventResult{allocsPerEvent: float64(alloc.mallocs) / n, bytesPerEvent: float64(alloc.bytes) / n}, nil
}
