package e2e

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubetyped/informer"
)

// handlerMap is what a handler built from its notifications: the resource
// version of each object by key.
type handlerMap struct {
	mu      sync.Mutex
	objects resourceVersions
	changed notifier
}

func newHandlerMap() *handlerMap {
	return &handlerMap{objects: resourceVersions{}, changed: newNotifier()}
}

func (m *handlerMap) set(p *corev1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objects.set(p)
	m.changed.notify()
}

func (m *handlerMap) handler() informer.ResourceEventHandlerFuncs[*corev1.Pod] {
	return informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc:    func(p *corev1.Pod, _ bool) { m.set(p) },
		UpdateFunc: func(_, p *corev1.Pod) { m.set(p) },
		DeleteFunc: func(d informer.DeletedObject[*corev1.Pod]) {
			m.mu.Lock()
			defer m.mu.Unlock()
			delete(m.objects, d.Name.String())
			m.changed.notify()
		},
	}
}

func (m *handlerMap) get() resourceVersions {
	m.mu.Lock()
	defer m.mu.Unlock()
	return maps.Clone(m.objects)
}

// runSnapshotInformer starts a factory over namespace with snapshots in dir
// and a handlerMap, calls duringSync (if set), and waits until the
// informer has synced. stop shuts the factory down (a clean stop, which
// writes the snapshot) and waits for it.
func runSnapshotInformer(ctx context.Context, t *testing.T, config *rest.Config, namespace, dir string, duringSync func()) (pods *informer.Informer[*corev1.Pod], m *handlerMap, synced time.Duration, stop func()) {
	t.Helper()
	start := time.Now()
	factory, err := informer.NewFactory(config, informer.FactoryOptions{Namespace: namespace, Snapshot: informer.SnapshotOptions{Dir: dir}})
	if err != nil {
		t.Fatalf("NewFactory: %v", err)
	}
	pods, err = informer.For(factory, informer.InformerOptions[*corev1.Pod]{})
	if err != nil {
		t.Fatalf("For: %v", err)
	}
	m = newHandlerMap()
	if _, err := pods.AddEventHandler(m.handler()); err != nil {
		t.Fatalf("AddEventHandler: %v", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	factory.Start(runCtx)
	if duringSync != nil {
		duringSync()
	}
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		t.Fatalf("WaitForCacheSync: %v", err)
	}
	synced = time.Since(start)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			factory.Shutdown()
		})
	}
	t.Cleanup(stop)
	return pods, m, synced, stop
}

// changeWhileDown creates, relabels and deletes pods of namespace (which
// holds pre-0..pre-3) and returns the resource version of the last change.
func changeWhileDown(ctx context.Context, t *testing.T, client kubernetes.Interface, namespace string) string {
	createPod(ctx, t, client, namespace, "new-0")
	createPod(ctx, t, client, namespace, "new-1")
	relabelPod(ctx, t, client, namespace, "pre-0", "1")
	deletePod(ctx, t, client, namespace, "pre-1")
	return relabelPod(ctx, t, client, namespace, "pre-2", "1").ResourceVersion
}

// checkRestarted checks that the restarted informer's cache, when it
// synced, held the state listed before it started (before; a pod created
// during the sync, live-0, may or may not be there yet), and that its
// handler's map converges to a fresh LIST.
func checkRestarted(ctx context.Context, t *testing.T, client kubernetes.Interface, pods *informer.Informer[*corev1.Pod], m *handlerMap, namespace string, before resourceVersions, want informer.SnapshotStats) {
	t.Helper()
	cached := cachedVersions(pods, namespace)
	delete(cached, namespace+"/live-0")
	if diff := cmp.Diff(before, cached); diff != "" {
		t.Errorf("cache at sync against a LIST made before the start (-want +got):\n%s", diff)
	}
	listed := listPods(ctx, t, client, namespace)
	if !waitFor(ctx, m.changed, func() bool { return cmp.Equal(listed, m.get()) }) {
		t.Errorf("handler's map against a fresh LIST (-want +got):\n%s", cmp.Diff(listed, m.get()))
	}
	got := pods.Stats().Snapshot
	want.RestoredObjects = got.RestoredObjects
	if diff := cmp.Diff(want, got); diff != "" || got.RestoredObjects != 4 {
		t.Errorf("snapshot stats (-want +got), restored objects %d (want 4):\n%s", got.RestoredObjects, diff)
	}
}

// TestWarmRestartResumesWatch stops a pod informer (which writes its
// snapshot), changes pods while it is down, and starts a new one from the
// snapshot while a pod is created: it resumes the watch, and its handler
// ends up with a fresh LIST's content. The current resource version the
// restarted informer must reach is the cluster's (the API server's own
// lease updates move it too), so on a namespace without changes only a
// bookmark would show it has caught up; the pod created during the sync
// plays the writer of a busy cluster.
func TestWarmRestartResumesWatch(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	client := newClientset(t)
	ns := newNamespace(ctx, t, client)
	for i := range 4 {
		createPod(ctx, t, client, ns, fmt.Sprintf("pre-%d", i))
	}
	dir := filepath.Join(t.TempDir(), "snapshots")
	_, _, cold, stop := runSnapshotInformer(ctx, t, restConfig, ns, dir, nil)
	stop()
	changeWhileDown(ctx, t, client, ns)
	before := listPods(ctx, t, client, ns)

	pods, m, warm, _ := runSnapshotInformer(ctx, t, restConfig, ns, dir, func() {
		createPod(ctx, t, client, ns, "live-0")
	})
	t.Logf("time to synced: cold %v, warm (resumed watch) %v", cold, warm)
	checkRestarted(ctx, t, client, pods, m, ns, before, informer.SnapshotStats{Restored: 1, ResumedWatches: 1})
}

// TestWarmRestartAfterCompaction is TestWarmRestartResumesWatch with the
// history the snapshot needs compacted away (an API server without watch
// cache over an etcd that compacts every second): the resumed watch gets
// "410 Gone", the informer lists, and the handler's map still ends up
// equal to a fresh LIST.
func TestWarmRestartAfterCompaction(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	config, client := startCompactingCluster(ctx, t, "warm-compacting-")
	ns := newNamespace(ctx, t, client)
	for i := range 4 {
		createPod(ctx, t, client, ns, fmt.Sprintf("pre-%d", i))
	}
	dir := filepath.Join(t.TempDir(), "snapshots")
	first, _, _, stop := runSnapshotInformer(ctx, t, config, ns, dir, nil)
	snapshotRV := first.LastSyncResourceVersion()
	stop()
	changeWhileDown(ctx, t, client, ns)
	waitCompactedPast(ctx, t, client, ns, snapshotRV)
	before := listPods(ctx, t, client, ns)

	pods, m, _, _ := runSnapshotInformer(ctx, t, config, ns, dir, nil)
	checkRestarted(ctx, t, client, pods, m, ns, before, informer.SnapshotStats{Restored: 1, RestoreRelists: 1})
}
