package informer

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubetyped/informer/internal/gcwork"
)

// queueText renders records as "op key@rv" strings for cmp.Diff; a replace
// lists its items, a bookmark shows its resource version.
func queueText(batch *queueChunk[*corev1.Pod]) []string {
	var out []string
	for rec := range queueRecords(batch) {
		s := rec.op.String()
		switch rec.op {
		case opReplace:
			items := make([]string, 0, len(rec.bulk.list))
			for _, p := range rec.bulk.list {
				items = append(items, KeyOf(p)+"@"+p.ResourceVersion)
			}
			s += fmt.Sprintf(" [%s] rv=%s", strings.Join(items, " "), rec.bulk.resourceVersion)
			if rec.firstList {
				s += " first"
			}
		case opBookmark:
			s += " rv=" + rec.bulk.resourceVersion
		case opResync:
		default:
			s += " " + KeyOf(rec.obj) + "@" + rec.obj.ResourceVersion
		}
		out = append(out, s)
	}
	return out
}

// queueRecords iterates over the records of a chain of chunks.
func queueRecords(batch *queueChunk[*corev1.Pod]) func(yield func(queueRecord[*corev1.Pod]) bool) {
	return func(yield func(queueRecord[*corev1.Pod]) bool) {
		for c := batch; c != nil; c = c.next {
			for _, rec := range c.items() {
				if !yield(rec) {
					return
				}
			}
		}
	}
}

// queueNext pops one batch and renders it.
func queueNext(t *testing.T, q *eventQueue[*corev1.Pod]) []string {
	t.Helper()
	batch, ok := q.next()
	if !ok {
		t.Fatal("queue closed")
	}
	out := queueText(batch)
	q.recycle(batch)
	return out
}

func newTestQueue(t *testing.T, transform TransformFunc[*corev1.Pod]) *eventQueue[*corev1.Pod] {
	logger, _ := ktesting.NewTestContext(t)
	return newEventQueue(nil, transform, logger)
}

func TestEventQueueKeepsEveryEventInOrder(t *testing.T) {
	// client-go's TestRealFIFO_detectLineJumpers: no per-key merging, a key
	// never jumps back in line.
	q := newTestQueue(t, nil)
	plMust(t, q.Add(NewPod("", "foo", "10")))
	plMust(t, q.Add(NewPod("", "bar", "1")))
	plMust(t, q.Update(NewPod("", "foo", "11")))
	plMust(t, q.Update(NewPod("", "foo", "13")))
	plMust(t, q.Delete(NewPod("", "zab", "30")))
	want := []string{"add foo@10", "add bar@1", "update foo@11", "update foo@13", "delete zab@30"}
	if diff := cmp.Diff(want, queueNext(t, q)); diff != "" {
		t.Fatalf("first batch (-want +got):\n%s", diff)
	}
	plMust(t, q.Add(NewPod("", "foo", "14")))
	if diff := cmp.Diff([]string{"add foo@14"}, queueNext(t, q)); diff != "" {
		t.Fatalf("second batch (-want +got):\n%s", diff)
	}
}

func TestEventQueueReplaceResyncAndBookmarkAreSingleOrderedRecords(t *testing.T) {
	// client-go's TestRealFIFO_ReplaceAtomic and TestRealFIFO_ResyncAtomic.
	q := newTestQueue(t, nil)
	plMust(t, q.Bookmark("5"))
	plMust(t, q.Add(NewPod("ns", "a", "6")))
	plMust(t, q.Replace([]*corev1.Pod{NewPod("ns", "a", "6"), NewPod("ns", "b", "7")}, "10"))
	plMust(t, q.Resync())
	plMust(t, q.Replace(nil, "20"))
	plMust(t, q.Bookmark("21"))
	want := []string{
		"bookmark rv=5",
		"add ns/a@6",
		"replace [ns/a@6 ns/b@7] rv=10",
		"resync",
		"replace [] rv=20",
		"bookmark rv=21",
	}
	if diff := cmp.Diff(want, queueNext(t, q)); diff != "" {
		t.Fatalf("records (-want +got):\n%s", diff)
	}
}

func TestEventQueueSyncedAfterFirstListIsProcessed(t *testing.T) {
	// client-go's TestRealFIFO_HasSynced, with atomic replaces.
	q := newTestQueue(t, nil)
	if q.hasSynced() {
		t.Fatal("empty queue synced")
	}
	plMust(t, q.Replace([]*corev1.Pod{NewPod("", "a", "1")}, "1"))
	plMust(t, q.Replace([]*corev1.Pod{NewPod("", "a", "1")}, "2"))
	if diff := cmp.Diff([]string{"replace [a@1] rv=1 first", "replace [a@1] rv=2"}, queueNext(t, q)); diff != "" {
		t.Fatalf("only the first list is marked (-want +got):\n%s", diff)
	}
	if q.hasSynced() {
		t.Fatal("synced before the first list was processed")
	}
	q.markSynced()
	if !q.hasSynced() {
		t.Fatal("not synced after the first list was processed")
	}
	select {
	case <-q.syncedCh:
	default:
		t.Fatal("synced channel still open")
	}

	// An event before any list means there is no initial list to wait for.
	q2 := newTestQueue(t, nil)
	plMust(t, q2.Add(NewPod("", "a", "1")))
	if !q2.hasSynced() {
		t.Fatal("queue whose first record is an event is not synced")
	}
	plMust(t, q2.Replace(nil, "2"))
	if diff := cmp.Diff([]string{"add a@1", "replace [] rv=2"}, queueNext(t, q2)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// countingTransform marks each pod it sees with a label counting how many
// times it was transformed, and fails for pods named "bad".
func countingTransform(pod *corev1.Pod) (*corev1.Pod, error) {
	if pod.Name == "bad" {
		return nil, errors.New("cannot transform bad")
	}
	if pod.Name == "empty" {
		return nil, nil
	}
	if pod.Name == "panic" {
		panic("transform bug")
	}
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	n, _ := strconv.Atoi(pod.Labels["transformed"])
	pod.Labels["transformed"] = strconv.Itoa(n + 1)
	return pod, nil
}

func TestEventQueueTransformsOnceAndDropsFailures(t *testing.T) {
	q := newTestQueue(t, countingTransform)
	a, b := NewPod("", "a", "1"), NewPod("", "b", "2")
	plMust(t, q.Add(a))
	plMust(t, q.Add(NewPod("", "bad", "3")))
	plMust(t, q.Update(NewPod("", "empty", "4")))
	plMust(t, q.Replace([]*corev1.Pod{NewPod("", "bad", "5"), b, NewPod("", "empty", "6")}, "7"))
	plMust(t, q.Delete(NewPod("", "bad", "8")))
	plMust(t, q.Update(NewPod("", "panic", "9")))
	want := []string{"add a@1", "replace [b@2] rv=7"}
	if diff := cmp.Diff(want, queueNext(t, q)); diff != "" {
		t.Fatalf("records (-want +got):\n%s", diff)
	}
	for _, p := range []*corev1.Pod{a, b} {
		if got := p.Labels["transformed"]; got != "1" {
			t.Errorf("%s transformed %s times, want 1", p.Name, got)
		}
	}
	if got := q.transformErrors.Load(); got != 6 {
		t.Errorf("transform errors = %d, want 6", got)
	}
}

func TestEventQueueTakesEverythingPendingAcrossChunks(t *testing.T) {
	q := newTestQueue(t, nil)
	var want []string
	for i := range 2*queueChunkSize + 10 {
		plMust(t, q.Add(NewPod("", "p", strconv.Itoa(i))))
		want = append(want, "add p@"+strconv.Itoa(i))
	}
	if got := q.len(); got != len(want) {
		t.Fatalf("len = %d, want %d", got, len(want))
	}
	if diff := cmp.Diff(want, queueNext(t, q)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	// 2,058 records: chunks of 16, 32, …, 1,024 (2,032 records), then one
	// more of 1,024; the two of the chunk size reached are kept.
	if q.len() != 0 || q.freeCount != 2 {
		t.Fatalf("after the batch: len %d, free chunks %d; want 0 and 2", q.len(), q.freeCount)
	}
}

// TestEventQueueChunksGrowFromSixteenRecords checks the sizes of a chain's
// chunks: a queue holding a few records holds a chunk of 16, and each chunk
// made after a full one is twice its size, up to queueChunkSize; the size
// reached serves the next chains until the queue is idle, when it falls
// back to 16.
func TestEventQueueChunksGrowFromSixteenRecords(t *testing.T) {
	q := newTestQueue(t, nil)
	sizes := func() []int {
		q.mu.Lock()
		defer q.mu.Unlock()
		var got []int
		for c := q.head; c != nil; c = c.next {
			got = append(got, len(c.records))
		}
		return got
	}
	plMust(t, q.Add(NewPod("", "p", "0")))
	if diff := cmp.Diff([]int{firstQueueChunkSize}, sizes()); diff != "" {
		t.Fatalf("one record's chunks (-want +got):\n%s", diff)
	}
	for i := 1; i < 3*queueChunkSize; i++ {
		plMust(t, q.Add(NewPod("", "p", strconv.Itoa(i))))
	}
	want := []int{16, 32, 64, 128, 256, 512, 1024, 1024, 1024}
	if diff := cmp.Diff(want, sizes()); diff != "" {
		t.Fatalf("3,072 records' chunks (-want +got):\n%s", diff)
	}
	drain := func() {
		batch, _ := q.next()
		q.recycle(batch)
	}
	drain()
	plMust(t, q.Add(NewPod("", "p", "busy")))
	if diff := cmp.Diff([]int{queueChunkSize}, sizes()); diff != "" {
		t.Fatalf("the next chain's chunks (-want +got):\n%s", diff)
	}
	drain()
	q.releaseIdleChunks() // a chunk was reused since the last call
	q.releaseIdleChunks() // none was: idle
	plMust(t, q.Add(NewPod("", "p", "idle")))
	if diff := cmp.Diff([]int{firstQueueChunkSize}, sizes()); diff != "" {
		t.Fatalf("the chunks of a chain after the queue was idle (-want +got):\n%s", diff)
	}
}

func TestEventQueueNextTakesEverythingAndCloseUnblocks(t *testing.T) {
	q := newTestQueue(t, nil)
	got := make(chan []string)
	go func() {
		batch, ok := q.next()
		if !ok {
			got <- nil
			return
		}
		got <- queueText(batch)
	}()
	select {
	case b := <-got:
		t.Fatalf("next returned %v from an empty queue", b)
	case <-time.After(20 * time.Millisecond):
	}
	plMust(t, q.Add(NewPod("", "a", "1")))
	if diff := cmp.Diff([]string{"add a@1"}, <-got); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}

	closed := make(chan bool)
	go func() {
		_, ok := q.next()
		closed <- ok
	}()
	time.Sleep(10 * time.Millisecond)
	q.close()
	if ok := <-closed; ok {
		t.Fatal("next returned records after close")
	}
	plMust(t, q.Add(NewPod("", "b", "2")))
	if _, ok := q.next(); ok {
		t.Fatal("next returned records after close")
	}
}

func TestEventQueueConcurrentProducersKeepTheirOrder(t *testing.T) {
	// client-go's TestRealFIFO_basic.
	q := newEventQueue[*corev1.Pod](nil, nil, klog.Background())
	const perProducer = 500
	var wg sync.WaitGroup
	for _, producer := range []string{"a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perProducer {
				_ = q.Add(NewPod(producer, "x"+strconv.Itoa(i), strconv.Itoa(i)))
			}
		}()
	}
	last := map[string]int{"a": -1, "b": -1}
	for seen := 0; seen < 2*perProducer; {
		batch, _ := q.next()
		for rec := range queueRecords(batch) {
			n, _ := strconv.Atoi(rec.obj.ResourceVersion)
			if n != last[rec.obj.Namespace]+1 {
				t.Fatalf("producer %s: got %d after %d", rec.obj.Namespace, n, last[rec.obj.Namespace])
			}
			last[rec.obj.Namespace] = n
			seen++
		}
		q.recycle(batch)
	}
	wg.Wait()
}

func TestEventQueueSteadyTrafficAllocatesNothing(t *testing.T) {
	for _, store := range []writeStore[*corev1.Pod]{nil, NewIndexer[*corev1.Pod](nil)} {
		q := newEventQueue(store, nil, klog.Background())
		pod := NewPod("", "a", "1")
		pod.Labels = map[string]string{"app": "a", "tier": "t"}
		allocs := testing.AllocsPerRun(100, func() {
			for range 3 * queueChunkSize / 2 {
				_ = q.Update(pod)
			}
			batch, _ := q.next()
			q.recycle(batch)
		})
		if allocs != 0 {
			t.Errorf("with store %v: allocations per round = %v, want 0", store != nil, allocs)
		}
	}
}

func TestEventQueuePreparesWritesForItsStore(t *testing.T) {
	store := NewIndexer(map[string]IndexFunc[*corev1.Pod]{"byNode": byNode})
	// A selection on app indexes the key: from then on the queue copies
	// labels (TestEventQueueCopiesNoLabelsWhileNoKeyIsIndexed).
	if got := store.selectLabels("", mustParse(t, "app")); got != nil {
		t.Fatalf("the empty store selected %v", keysOf(got))
	}
	q := newEventQueue(store, nil, klog.Background())
	pods := []*corev1.Pod{
		NewPod("ns", "a", "1", PodLabels(map[string]string{"app": "a"}), PodNode("n1")),
		NewPod("ns", "b", "2", PodNode("n2")),
	}
	plMust(t, q.Add(pods[0]))
	plMust(t, q.Update(pods[1]))
	plMust(t, q.Delete(pods[0]))
	if err := q.Add(nil); !errors.Is(err, errNilObject) {
		t.Errorf("Add(nil) = %v, want %v", err, errNilObject)
	}
	batch, _ := q.next()
	defer q.recycle(batch)
	type prepView struct {
		Name       ObjectName
		Hash       bool
		RV         string
		Pairs      []labelPair
		Values     [][]string
		IndexCount int
	}
	var got []prepView
	for rec := range queueRecords(batch) {
		p := rec.prep
		got = append(got, prepView{p.name, p.hash == hashObjectName(store.seed, p.name), p.rv, p.pairs, p.values, p.indexCount})
	}
	want := []prepView{
		{ObjectName{Namespace: "ns", Name: "a"}, true, "1", []labelPair{{"app", "a"}}, [][]string{{"n1"}}, 1},
		{ObjectName{Namespace: "ns", Name: "b"}, true, "2", nil, [][]string{{"n2"}}, 1},
		{ObjectName{Namespace: "ns", Name: "a"}, true, "1", nil, nil, -1},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(labelPair{})); diff != "" {
		t.Errorf("prepared writes (-want +got):\n%s", diff)
	}
}

// TestEventQueueCopiesNoLabelsWhileNoKeyIsIndexed queues labelled objects
// while the store indexes no label key: no labels are copied, since no
// write would read them. A key indexed after they were queued is still
// filed when they are applied, from the objects' label maps. Once a key is
// indexed, the labels of an object with at most maxScannedPairs of them
// are copied, and those of an object with more, which are read from the
// map, are not.
func TestEventQueueCopiesNoLabelsWhileNoKeyIsIndexed(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	inf := MustNewInformer(t, &prefilledLW{}, InformerOptions[*corev1.Pod]{})
	q := inf.queue
	many := map[string]string{"app": "a"}
	for i := range maxScannedPairs {
		many[fmt.Sprintf("k%d", i)] = "v"
	}
	queue := func(rv int) [][]labelPair {
		plMust(t, q.Add(NewPod("ns", "few", fmt.Sprint(rv), PodLabels(map[string]string{"app": "a"}))))
		plMust(t, q.Add(NewPod("ns", "many", fmt.Sprint(rv+1), PodLabels(many))))
		plMust(t, q.Add(NewPod("ns", "none", fmt.Sprint(rv+2))))
		batch, _ := q.next()
		var pairs [][]labelPair
		for rec := range queueRecords(batch) {
			// A copy: recycling the batch clears its arena.
			pairs = append(pairs, slices.Clone(rec.prep.pairs))
		}
		inf.fan.process(logger, batch)
		q.recycle(batch)
		return pairs
	}
	opts := cmp.AllowUnexported(labelPair{})
	if diff := cmp.Diff([][]labelPair{nil, nil, nil}, queue(1), opts); diff != "" {
		t.Errorf("pairs queued while no key is indexed (-want +got):\n%s", diff)
	}

	// The writes above were prepared without pairs: indexing app before
	// they are applied must still file them under it.
	plMust(t, q.Add(NewPod("ns", "late", "4", PodLabels(map[string]string{"app": "a"}))))
	if diff := cmp.Diff([]string{"ns/few", "ns/many"}, keysOf(inf.indexer.selectLabels("", mustParse(t, "app=a")))); diff != "" {
		t.Fatalf("app=a before the last write is applied (-want +got):\n%s", diff)
	}
	batch, _ := q.next()
	var late []writePrep
	for rec := range queueRecords(batch) {
		late = append(late, writePrep{pairs: rec.prep.pairs, copyPairs: rec.prep.copyPairs})
	}
	if diff := cmp.Diff([]writePrep{{}}, late, cmp.AllowUnexported(writePrep{})); diff != "" {
		t.Errorf("labels of the write prepared before app was indexed (-want +got):\n%s", diff)
	}
	inf.fan.process(logger, batch)
	q.recycle(batch)
	mustCheck(t, inf.indexer)
	if diff := cmp.Diff([]string{"ns/few", "ns/late", "ns/many"}, keysOf(inf.indexer.selectLabels("", mustParse(t, "app=a")))); diff != "" {
		t.Errorf("app=a (-want +got):\n%s", diff)
	}

	if diff := cmp.Diff([][]labelPair{{{"app", "a"}}, nil, nil}, queue(5), opts); diff != "" {
		t.Errorf("pairs queued once app is indexed (-want +got):\n%s", diff)
	}
	mustCheck(t, inf.indexer)
}

// TestEventQueuePrepareListedReusesOnlyWhatIsCached checks both sides of
// prepareListed without a transform: a list into the empty store keeps its
// own objects, and a relist of unchanged objects keeps the cached ones.
func TestEventQueuePrepareListedReusesOnlyWhatIsCached(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	store := NewIndexer[*corev1.Pod](nil)
	q := newEventQueue(store, nil, logger)
	a, b := NewPod("", "a", "1"), NewPod("", "b", "1")
	first := q.prepareListed([]*corev1.Pod{a, b}, nil)
	assertSamePods(t, "first list", []*corev1.Pod{a, b}, first)
	plMust(t, store.Replace(first, "1"))

	listedA, listedB := NewPod("", "a", "1"), NewPod("", "b", "2")
	relist := q.prepareListed([]*corev1.Pod{listedA, listedB}, nil)
	assertSamePods(t, "relist", []*corev1.Pod{a, listedB}, relist)
}

// assertSamePods fails t unless got holds exactly the objects of want, the
// same pointers in the same order.
func assertSamePods(t *testing.T, what string, want, got []*corev1.Pod) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s (-want +got):\n%s", what, diff)
	}
	for i := range min(len(want), len(got)) {
		if got[i] != want[i] {
			t.Errorf("%s: item %d is %p, want %p", what, i, got[i], want[i])
		}
	}
}

// TestEventQueuePrepareListedKeepsReusedObjects lists a page of which the
// ListerWatcher returned two cached objects (cachedListed) in place of the
// listed items: they are kept as they are, not transformed again, even the
// one the cache has since replaced; an item listed at its cached version
// becomes the cached object, and the others are transformed once.
func TestEventQueuePrepareListedKeepsReusedObjects(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	store := NewIndexer[*corev1.Pod](nil)
	q := newEventQueue(store, countingTransform, logger)
	a, b, c := NewPod("", "a", "1"), NewPod("", "b", "1"), NewPod("", "c", "1")
	for _, p := range []*corev1.Pod{a, b, c} {
		plMust(t, store.Add(p))
	}
	var reused []*corev1.Pod
	for _, p := range []*corev1.Pod{a, b} {
		obj, ok := q.cachedListed(NameOf(p), "1")
		if !ok || obj != p {
			t.Fatalf("cachedListed(%s, 1) = %p, %v; want the cached %p", NameOf(p), obj, ok, p)
		}
		reused = append(reused, obj)
	}
	if obj, ok := q.cachedListed(NameOf(c), "2"); ok {
		t.Fatalf("cachedListed(%s, 2) = %p, want nothing: the cache holds version 1", NameOf(c), obj)
	}
	plMust(t, store.Update(NewPod("", "b", "2"))) // the cache moves on
	listedC, d := NewPod("", "c", "1"), NewPod("", "d", "1")
	got := q.prepareListed([]*corev1.Pod{a, b, listedC, d}, reused)
	assertSamePods(t, "prepared", []*corev1.Pod{a, b, c, d}, got)
	for _, p := range []*corev1.Pod{a, b, c} {
		if p.Labels != nil {
			t.Errorf("%s was transformed: labels %v", p.Name, p.Labels)
		}
	}
	if got := d.Labels["transformed"]; got != "1" {
		t.Errorf("d transformed %s times, want 1", got)
	}
}

// TestIdleQueueReleasesItsFreeChunks fills a queue over several chunks and
// empties it: the emptied chunks kept for reuse must go after garbage
// collections, as nothing reuses them (releaseIdleChunks), where they were
// kept until the queue closed before.
func TestIdleQueueReleasesItsFreeChunks(t *testing.T) {
	q := newTestQueue(t, nil)
	gcwork.AfterEachGC(q, (*eventQueue[*corev1.Pod]).releaseIdleChunks)
	for i := range 2*queueChunkSize + 10 {
		plMust(t, q.Add(NewPod("", "p", strconv.Itoa(i))))
	}
	queueNext(t, q)
	freeChunks := func() int {
		q.mu.Lock()
		defer q.mu.Unlock()
		return q.freeCount
	}
	Eventually(t, "the idle queue to let its free chunks go", func() bool {
		runtime.GC()
		return freeChunks() == 0
	})
}
