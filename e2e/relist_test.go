package e2e

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/e2e/internal/cluster"
)

// gatedListerWatcher passes lists and watches through, except that once
// held, new watches wait until released; it can end the current watch as
// the server's timeout would.
type gatedListerWatcher[T informer.Object] struct {
	informer.ListerWatcher[T]
	held    atomic.Bool
	release chan struct{}

	mu      sync.Mutex
	current *endableWatch
	// watchedFrom records the resource version of each watch request.
	watchedFrom []string
}

func newGatedListerWatcher[T informer.Object](lw informer.ListerWatcher[T]) *gatedListerWatcher[T] {
	return &gatedListerWatcher[T]{ListerWatcher: lw, release: make(chan struct{})}
}

func (g *gatedListerWatcher[T]) Watch(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	if g.held.Load() {
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	w, err := g.ListerWatcher.Watch(ctx, options)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.watchedFrom = append(g.watchedFrom, options.ResourceVersion)
	if err != nil {
		return nil, err
	}
	g.current = newEndableWatch(w)
	return g.current, nil
}

// endWatch ends the current watch as the server does when a watch times
// out: its result channel closes, with no error event.
func (g *gatedListerWatcher[T]) endWatch() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.current != nil {
		g.current.Stop()
	}
}

// endableWatch forwards the events of a watch until it is stopped, then
// closes its result channel. (Stopping client-go's stream watcher itself
// may make it report the closed stream as an error event, which is not
// what a server's normal close looks like.)
type endableWatch struct {
	inner   watch.Interface
	out     chan watch.Event
	end     chan struct{}
	endOnce sync.Once
}

func newEndableWatch(inner watch.Interface) *endableWatch {
	w := &endableWatch{inner: inner, out: make(chan watch.Event), end: make(chan struct{})}
	go w.forward()
	return w
}

func (w *endableWatch) forward() {
	defer close(w.out)
	for {
		select {
		case ev, ok := <-w.inner.ResultChan():
			if !ok {
				return
			}
			select {
			case w.out <- ev:
			case <-w.end:
				return
			}
		case <-w.end:
			return
		}
	}
}

func (w *endableWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *endableWatch) Stop() {
	w.endOnce.Do(func() { close(w.end) })
	w.inner.Stop()
}

// TestRelistAfterCompactionDeliversMissedChanges runs a pod informer against
// an API server without watch cache that compacts etcd every second. The
// test holds the informer's next watch, changes pods, waits until etcd has
// compacted past the informer's resource version, and lets the watch go:
// the server answers "410 Gone", the informer relists, and the changes it
// missed arrive as adds, updates and a final-state-unknown delete.
func TestRelistAfterCompactionDeliversMissedChanges(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	config, client := startCompactingCluster(ctx, t, "compacting-")
	ns := newNamespace(ctx, t, client)
	for i := range 3 {
		createPod(ctx, t, client, ns, fmt.Sprintf("pre-%d", i))
	}

	rest, err := informer.NewRESTListerWatcher[*corev1.Pod](config, informer.RESTOptions{Namespace: ns})
	if err != nil {
		t.Fatalf("NewRESTListerWatcher: %v", err)
	}
	lw := newGatedListerWatcher[*corev1.Pod](rest)
	metrics := &snapshotProvider{}
	pods, err := informer.NewInformer(lw, informer.InformerOptions[*corev1.Pod]{Name: "pods", Metrics: metrics})
	if err != nil {
		t.Fatal(err)
	}
	changed := newNotifier()
	var mu sync.Mutex
	var deletes []informer.DeletedObject[*corev1.Pod]
	if _, err := pods.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc:    func(*corev1.Pod, bool) { changed.notify() },
		UpdateFunc: func(_, _ *corev1.Pod) { changed.notify() },
		DeleteFunc: func(d informer.DeletedObject[*corev1.Pod]) {
			mu.Lock()
			deletes = append(deletes, d)
			mu.Unlock()
			changed.notify()
		},
	}); err != nil {
		t.Fatalf("AddEventHandler: %v", err)
	}
	runInformer(ctx, t, pods)
	if !cache.WaitFor(ctx, "pods", pods.HasSyncedChecker()) {
		t.Fatal("informer did not sync")
	}
	// An event on the watch first: a watch that ends within a second
	// without any makes the reflector list again (as client-go's does)
	// instead of resuming from its resource version.
	warm := createPod(ctx, t, client, ns, "warm")
	if !waitFor(ctx, changed, func() bool { return cachedVersions(pods, ns)[ns+"/warm"] == warm.ResourceVersion }) {
		t.Fatal("the informer did not see the warm-up pod")
	}
	// The reflector takes an event's resource version after handing the
	// event on (as client-go's does), so the handler may hear of the pod
	// while LastSyncResourceVersion is still the list's. The warm-up pod is
	// the last change in the namespace, and a watch served from etcd sends
	// no bookmarks: the reflector resumes from exactly its version.
	resumeFrom := warm.ResourceVersion
	if err := pollUntil(ctx, func() bool { return pods.LastSyncResourceVersion() == resumeFrom }); err != nil {
		t.Fatalf("LastSyncResourceVersion is %q, want the warm-up pod's %q: %v", pods.LastSyncResourceVersion(), resumeFrom, err)
	}

	// Hold the next watch and end the current one: the reflector waits to
	// watch again from resumeFrom while the pods change.
	lw.held.Store(true)
	lw.endWatch()
	createPod(ctx, t, client, ns, "new-0")
	relabelPod(ctx, t, client, ns, "pre-0", "1")
	deletePod(ctx, t, client, ns, "pre-1")
	waitCompactedPast(ctx, t, client, ns, resumeFrom)
	close(lw.release)

	expectConverged(ctx, t, pods, changed, ns, listPods(ctx, t, client, ns))

	requests := metrics.requests()
	lw.mu.Lock()
	t.Logf("requests %+v; watches from resource versions %q", requests, lw.watchedFrom)
	lw.mu.Unlock()
	if requests.Lists.Expired+requests.StreamingLists.Expired != 1 {
		t.Errorf("want one relist for an expired resource version: %+v", requests)
	}
	if got := lw.watchedFrom[len(lw.watchedFrom)-2]; got != resumeFrom {
		t.Errorf("the watch before the relist started from %q, want %q", got, resumeFrom)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(deletes) != 1 || deletes[0].Name.String() != ns+"/pre-1" || !deletes[0].FinalStateUnknown {
		t.Errorf("deletes %+v, want one final-state-unknown delete of %s/pre-1", deletes, ns)
	}
}

// startCompactingCluster starts a cluster of the test's own whose API
// server has no watch cache, so that watches are served from etcd, which
// compacts its history every second; it returns its config and a client.
func startCompactingCluster(ctx context.Context, t *testing.T, prefix string) (*rest.Config, kubernetes.Interface) {
	t.Helper()
	config := startClusterOfOwn(ctx, t, prefix, cluster.Options{
		APIServerArgs: []string{"--watch-cache=false", "--etcd-compaction-interval=1s"},
	}).Config()
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	return config, client
}

// waitCompactedPast waits until a watch of the namespace's pods from
// resourceVersion fails with "410 Gone": etcd has compacted the history the
// informer would need to resume from it.
func waitCompactedPast(ctx context.Context, t *testing.T, client kubernetes.Interface, namespace, resourceVersion string) {
	t.Helper()
	for {
		compacted, err := watchExpired(ctx, client, namespace, resourceVersion)
		if err != nil {
			t.Fatalf("probe watch from %s: %v", resourceVersion, err)
		}
		if compacted {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("etcd did not compact past %s: %v", resourceVersion, context.Cause(ctx))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// watchExpired reports whether a watch from resourceVersion is refused as
// expired, either when it starts or by its first event.
func watchExpired(ctx context.Context, client kubernetes.Interface, namespace, resourceVersion string) (bool, error) {
	w, err := client.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: resourceVersion})
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer w.Stop()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			return false, nil
		}
		if ev.Type == watch.Error {
			err := apierrors.FromObject(ev.Object)
			return apierrors.IsResourceExpired(err) || apierrors.IsGone(err), nil
		}
		// History from resourceVersion is still there: the first change
		// after it came through.
		return false, nil
	case <-ctx.Done():
		return false, context.Cause(ctx)
	}
}
