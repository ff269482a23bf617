package replayserver

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informer"
)

func TestMain(m *testing.M) {
	RunIfChild()
	os.Exit(m.Run())
}

// startServer starts an in-process server, closed with the test.
func startServer(t *testing.T, opts Options) *Server {
	t.Helper()
	s, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// clientset returns a protobuf clientset for c.
func clientset(t *testing.T, c Cluster) *kubernetes.Clientset {
	t.Helper()
	config := c.Config()
	config.ContentType = runtime.ContentTypeProtobuf
	cs, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// keyRV is a cached pod as the comparisons see it.
type keyRV struct{ Key, RV string }

// sorted returns pods as sorted keyRVs.
func sorted(pods []*corev1.Pod) []keyRV {
	out := make([]keyRV, len(pods))
	for i, p := range pods {
		out[i] = keyRV{p.Namespace + "/" + p.Name, p.ResourceVersion}
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Key < out[b].Key })
	return out
}

// expected returns what the server holds now, by a consistent list.
func expected(t *testing.T, cs *kubernetes.Clientset) []keyRV {
	t.Helper()
	list, err := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	return sorted(pods)
}

// cacheSide is one informer under test: its cache's content.
type cacheSide struct {
	name string
	list func() []*corev1.Pod
}

// startClientGo starts client-go's shared informer for c; listWatch makes
// it list and watch instead of streaming its lists.
func startClientGo(t *testing.T, ctx context.Context, c Cluster, listWatch bool) cacheSide {
	t.Helper()
	cs := clientset(t, c)
	lw := cache.ToListWatcherWithWatchListSemantics(cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", "", fields.Everything()), cs)
	var lwAny cache.ListerWatcher = lw
	if listWatch {
		lwAny = noWatchList{lw}
	}
	inf := cache.NewSharedIndexInformer(lwAny, &corev1.Pod{}, 0, cache.Indexers{})
	go inf.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("client-go's informer did not sync")
	}
	return cacheSide{name: "client-go", list: func() []*corev1.Pod {
		var out []*corev1.Pod
		for _, obj := range inf.GetStore().List() {
			out = append(out, obj.(*corev1.Pod))
		}
		return out
	}}
}

// noWatchList makes client-go's reflector list and watch.
type noWatchList struct{ cache.ListerWatcher }

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// startOurs starts this library's informer for c.
func startOurs(t *testing.T, ctx context.Context, c Cluster, listWatch bool) cacheSide {
	t.Helper()
	lw, err := informer.NewRESTListerWatcher[*corev1.Pod](c.Config(), informer.RESTOptions{ContentType: informer.ContentTypeProtobuf})
	if err != nil {
		t.Fatal(err)
	}
	if listWatch {
		lw = ourNoWatchList{lw}
	}
	inf, err := informer.NewInformer(lw, informer.InformerOptions[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { inf.Run(ctx) })
	t.Cleanup(wg.Wait)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("our informer did not sync")
	}
	return cacheSide{name: "ours", list: func() []*corev1.Pod {
		pods, err := inf.Lister().List(labels.Everything())
		if err != nil {
			t.Fatal(err)
		}
		return pods
	}}
}

// ourNoWatchList makes our reflector list and watch.
type ourNoWatchList struct {
	informer.ListerWatcher[*corev1.Pod]
}

func (ourNoWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// waitAgree waits until every side's cache holds want.
func waitAgree(t *testing.T, sides []cacheSide, want []keyRV) {
	t.Helper()
	defer func(start time.Time) { t.Logf("agreed after %v", time.Since(start)) }(time.Now())
	for _, side := range sides {
		var diff string
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if diff = cmp.Diff(want, sorted(side.list())); diff == "" {
				break
			}
		}
		if diff != "" {
			t.Fatalf("%s's cache differs from the server's pods after a minute (-server +cache):\n%.3000s", side.name, diff)
		}
	}
}

// TestInformersSyncAndAgree syncs client-go's informer and ours from the
// replay server, by streaming list and by list and watch, and checks that
// both hold what the server holds: after the sync, after writes, and after
// an expiry that makes both list again.
func TestInformersSyncAndAgree(t *testing.T) {
	for _, listWatch := range []bool{false, true} {
		t.Run(fmt.Sprintf("listWatch=%v", listWatch), func(t *testing.T) {
			s := startServer(t, Options{Pods: 1100, BookmarkInterval: 50 * time.Millisecond})
			c := s.Clusters()[0]
			cs := clientset(t, c)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			sides := []cacheSide{startClientGo(t, ctx, c, listWatch), startOurs(t, ctx, c, listWatch)}
			want := expected(t, cs)
			if len(want) != 1100 {
				t.Fatalf("the server lists %d pods, want 1100", len(want))
			}
			waitAgree(t, sides, want)

			writes, err := c.Write(ctx, 200)
			if err != nil {
				t.Fatal(err)
			}
			if len(writes) != 200 {
				t.Fatalf("%d writes, want 200", len(writes))
			}
			waitAgree(t, sides, expected(t, cs))

			before, err := c.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.Expire(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write(ctx, 50); err != nil {
				t.Fatal(err)
			}
			waitAgree(t, sides, expected(t, cs))
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
				after, err := c.Stats(ctx)
				if err != nil {
					t.Fatal(err)
				}
				// Two relists (one per side) beside the test's own lists.
				relists := after.Lists - before.Lists - 1
				if !listWatch {
					relists = after.WatchLists - before.WatchLists
				}
				if relists >= 2 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after an expiry, %d relists, want 2 (stats before %+v, after %+v)", relists, before, after)
				}
			}
		})
	}
}

// isTooLarge reports a "too large resource version" error.
func isTooLarge(err error) bool {
	return apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
}

// isGone reports a "410 Gone" error.
func isGone(err error) bool { return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) }

// TestListPages checks paginated lists: pages follow continue tokens to
// the whole list at one resource version, an exact resource version shows
// the pods as they were, and a compacted one is "410 Gone".
func TestListPages(t *testing.T) {
	s := startServer(t, Options{Pods: 523})
	c := s.Clusters()[0]
	cs := clientset(t, c)
	ctx := context.Background()
	pods := cs.CoreV1().Pods("")
	listAll := func(opts metav1.ListOptions) ([]keyRV, string, int) {
		t.Helper()
		var all []*corev1.Pod
		pages := 0
		rv := ""
		for {
			list, err := pods.List(ctx, opts)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if rv == "" {
				rv = list.ResourceVersion
			} else if list.ResourceVersion != rv {
				t.Fatalf("page %d at resource version %s, the first at %s", pages, list.ResourceVersion, rv)
			}
			for i := range list.Items {
				all = append(all, &list.Items[i])
			}
			if list.Continue == "" {
				return sorted(all), rv, pages
			}
			if list.RemainingItemCount == nil || int(*list.RemainingItemCount) != 523-len(all) {
				t.Fatalf("page %d: remaining item count %v, want %d", pages, list.RemainingItemCount, 523-len(all))
			}
			opts = metav1.ListOptions{Limit: opts.Limit, Continue: list.Continue}
		}
	}
	whole, rv0, pages := listAll(metav1.ListOptions{ResourceVersion: "0", Limit: 200})
	if len(whole) != 523 || pages != 3 {
		t.Fatalf("%d pods in %d pages, want 523 in 3", len(whole), pages)
	}
	// A write in the middle of a paginated list does not show in its pages.
	first, err := pods.List(ctx, metav1.ListOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(ctx, 523); err != nil {
		t.Fatal(err)
	}
	rest, err := pods.List(ctx, metav1.ListOptions{Limit: 1000, Continue: first.Continue})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rest.Items {
		if p.ResourceVersion > rv0 {
			t.Fatalf("pod %s at resource version %s in a list at %s", p.Name, p.ResourceVersion, rv0)
		}
	}
	if got := len(first.Items) + len(rest.Items); got != 523 {
		t.Fatalf("%d pods across the continued list, want 523", got)
	}
	// The list at the old resource version, exactly, is the first one.
	old, _, _ := listAll(metav1.ListOptions{ResourceVersion: rv0, ResourceVersionMatch: metav1.ResourceVersionMatchExact, Limit: 200})
	if diff := cmp.Diff(whole, old); diff != "" {
		t.Errorf("exact list at %s differs from the list then:\n%.2000s", rv0, diff)
	}
	latest, rv1, _ := listAll(metav1.ListOptions{Limit: 150})
	if cmp.Equal(latest, whole) || rv1 == rv0 {
		t.Error("the latest list shows none of the writes")
	}
	// Not older than a future version: too large.
	future := strconv.FormatUint(s.clusters[0].history.current()+10, 10)
	if _, err := pods.List(ctx, metav1.ListOptions{ResourceVersion: future}); err == nil || !isTooLarge(err) {
		t.Errorf("list at a future resource version: %v, want too large", err)
	}
	// After an expiry, the old version and the old token are gone.
	if _, err := c.Expire(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := pods.List(ctx, metav1.ListOptions{ResourceVersion: rv0, ResourceVersionMatch: metav1.ResourceVersionMatchExact}); !isGone(err) {
		t.Errorf("exact list at a compacted version: %v, want 410", err)
	}
	if _, err := pods.List(ctx, metav1.ListOptions{Limit: 100, Continue: first.Continue}); !isGone(err) {
		t.Errorf("list continued at a compacted version: %v, want 410", err)
	}
	// One namespace.
	ns, _, _ := strings.Cut(whole[0].Key, "/")
	inNS, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 7})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range inNS.Items {
		if p.Namespace != ns {
			t.Errorf("pod %s/%s in a list of namespace %s", p.Namespace, p.Name, ns)
		}
	}
	if len(inNS.Items) != 7 || inNS.Continue == "" {
		t.Errorf("namespace %s: %d pods, continue %q; want 7 and a token", ns, len(inNS.Items), inNS.Continue)
	}
}

// TestWatch checks watches: changes after a resource version, a streaming
// list's end bookmark, idle bookmarks, and "410 Gone" once compacted.
func TestWatch(t *testing.T) {
	s := startServer(t, Options{Pods: 300, BookmarkInterval: 20 * time.Millisecond})
	c := s.Clusters()[0]
	cs := clientset(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pods := cs.CoreV1().Pods("")
	rv := strconv.FormatUint(s.clusters[0].history.current(), 10)

	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	writes, err := c.Write(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	bookmarks := 0
	for len(got) < 3 || bookmarks == 0 {
		ev := <-w.ResultChan()
		pod, _ := ev.Object.(*corev1.Pod)
		switch {
		case ev.Type == watch.Modified:
			got = append(got, pod.Namespace+"/"+pod.Name+"@"+pod.ResourceVersion)
		case ev.Type == watch.Bookmark:
			bookmarks++
		default:
			t.Fatalf("unexpected event %s %v", ev.Type, ev.Object)
		}
	}
	w.Stop()
	var want []string
	for _, wr := range writes {
		want = append(want, wr.Namespace+"/"+wr.Name+"@"+strconv.FormatUint(wr.ResourceVersion, 10))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("watched changes (-written +watched):\n%s", diff)
	}

	stream, err := pods.Watch(ctx, metav1.ListOptions{SendInitialEvents: new(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	added := 0
	for ev := range stream.ResultChan() {
		if ev.Type == watch.Added {
			added++
			continue
		}
		pod, _ := ev.Object.(*corev1.Pod)
		if ev.Type != watch.Bookmark || pod.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
			t.Fatalf("after %d added: %s event %v, want the initial-events-end bookmark", added, ev.Type, ev.Object)
		}
		if pod.ResourceVersion != strconv.FormatUint(writes[2].ResourceVersion, 10) {
			t.Errorf("initial events end at %s, want %d", pod.ResourceVersion, writes[2].ResourceVersion)
		}
		break
	}
	stream.Stop()
	if added != 300 {
		t.Errorf("%d initial events, want 300", added)
	}

	if _, err := c.Expire(ctx); err != nil {
		t.Fatal(err)
	}
	old, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-old.ResultChan()
	old.Stop()
	if st, ok := ev.Object.(*metav1.Status); ev.Type != watch.Error || !ok || st.Code != 410 {
		t.Errorf("watch from a compacted version: %s %v, want an ERROR event 410", ev.Type, ev.Object)
	}
}

// TestProcess runs the server in a process of its own, with clusters that
// each answer on their own address.
func TestProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := StartProcess(ctx, Options{Clusters: 3, Pods: 40, Common: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	clusters := p.Clusters()
	if len(clusters) != 3 {
		t.Fatalf("%d clusters, want 3", len(clusters))
	}
	uids := map[string]int{}
	for i, c := range clusters {
		list, err := clientset(t, c).CoreV1().Pods("").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("cluster %d: %v", i, err)
		}
		if len(list.Items) != 40 {
			t.Errorf("cluster %d lists %d pods, want 40", i, len(list.Items))
		}
		for _, pod := range list.Items {
			uids[string(pod.UID)]++
		}
	}
	if len(uids) != 120 {
		t.Errorf("%d distinct UIDs among 3 clusters of 40 pods", len(uids))
	}
	if err := p.Close(); err != nil {
		t.Error(err)
	}
}
