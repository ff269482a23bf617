package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/e2e/internal/cluster"
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

// TestWarmRestartQuietResumes stops a pod informer (which writes its
// snapshot) and restarts it while nothing of its namespace's pods has
// changed but the cluster has moved on (a ConfigMap written, as
// kube-apiserver's own Lease renewals would): the list of the server's
// versions made beside the resumed watch names exactly the restored pods,
// and the informer syncs from its snapshot without listing them and
// without waiting for a bookmark (issue 32 item 2: it waited 10 s for a
// bookmark, then listed everything; then a second for the bookmark).
func TestWarmRestartQuietResumes(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx := klog.NewContext(context.Background(), logger)
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	client := newClientset(t)
	ns := newNamespace(ctx, t, client)
	for i := range 4 {
		createPod(ctx, t, client, ns, fmt.Sprintf("pre-%d", i))
	}
	dir := filepath.Join(t.TempDir(), "snapshots")
	first, _, cold, stop := runSnapshotInformer(ctx, t, restConfig, ns, dir, nil)
	snapshotRV := first.LastSyncResourceVersion()
	stop()
	moveClusterVersion(ctx, t, client, ns, snapshotRV)
	before := listPods(ctx, t, client, ns)

	pods, m, warm, _ := runSnapshotInformer(ctx, t, restConfig, ns, dir, nil)
	t.Logf("time to synced: cold %v, warm (quiet, resumed watch) %v", cold, warm)
	checkRestarted(ctx, t, client, pods, m, ns, before, informer.SnapshotStats{Restored: 1, ResumedWatches: 1})
	// The start line, logged once synced, says what caught it up.
	caughtUpBy := func() any {
		var by any
		for _, e := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
			if e.Message != "Synced from a snapshot by resuming its watch" {
				continue
			}
			for i := 0; i+1 < len(e.ParameterKVList); i += 2 {
				if e.ParameterKVList[i] == "caughtUpBy" {
					by = e.ParameterKVList[i+1]
				}
			}
		}
		return by
	}
	for wait := time.Now(); caughtUpBy() == nil && time.Since(wait) < time.Minute; {
		time.Sleep(10 * time.Millisecond)
	}
	if by := caughtUpBy(); by != "listedVersions" {
		t.Errorf("the warm start was caught up by %v, want listedVersions", by)
	}
}

// moveClusterVersion writes a ConfigMap in namespace, so that the
// cluster's current resource version is past resourceVersion while no pod
// changed.
func moveClusterVersion(ctx context.Context, t *testing.T, client kubernetes.Interface, namespace, resourceVersion string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "move-"}}
	created, err := client.CoreV1().ConfigMaps(namespace).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create a ConfigMap: %v", err)
	}
	if created.ResourceVersion == resourceVersion {
		t.Fatalf("the ConfigMap's resource version %s is the snapshot's", created.ResourceVersion)
	}
}

// TestWarmRestartAfterEtcdRestore: a snapshot written after the backup
// that etcd is then restored from has a resource version ahead of the
// server's; the restarted informer refuses it (logged, counted in
// Rejected) and starts cold: its cache holds the restored cluster's pods
// only, none of those created after the backup (issue 32 item 1: it took
// the snapshot as caught up and served pods the cluster no longer had).
// The cluster is the same (address, certificate, kube-system namespace):
// only the resource version tells the snapshot is from a future the
// cluster lost.
func TestWarmRestartAfterEtcdRestore(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	c, clusterDir := startRestorableCluster(ctx, t, "warm-restore-")
	config := c.Config()
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	ns := newNamespace(ctx, t, client)
	for i := range 4 {
		createPod(ctx, t, client, ns, fmt.Sprintf("pre-%d", i))
	}
	backup := filepath.Join(clusterDir, "etcd-backup")
	copyEtcdData(ctx, t, c, filepath.Join(clusterDir, "etcd-data"), backup)
	// After the backup: new pods, and enough other writes that the
	// snapshot's resource version stays ahead of what the restored
	// cluster reaches before the informer restarts.
	for i := range 4 {
		createPod(ctx, t, client, ns, fmt.Sprintf("lost-%d", i))
	}
	for i := range 100 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("lost-%d", i)}}
		if _, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create a ConfigMap: %v", err)
		}
	}
	dir := filepath.Join(t.TempDir(), "snapshots")
	first, _, _, stop := runSnapshotInformer(ctx, t, config, ns, dir, nil)
	snapshotRV := first.LastSyncResourceVersion()
	stop()

	restoreEtcdData(ctx, t, c, backup, filepath.Join(clusterDir, "etcd-data"))
	current, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if n, s := mustAtoi(t, current.ResourceVersion), mustAtoi(t, snapshotRV); n >= s {
		t.Fatalf("after the restore the cluster is at %d, not behind the snapshot's %d", n, s)
	}
	before := listPods(ctx, t, client, ns)
	if len(before) != 4 {
		t.Fatalf("pods after the restore: %v, want pre-0..3 only", before)
	}

	pods, m, _, _ := runSnapshotInformer(ctx, t, config, ns, dir, nil)
	cached := cachedVersions(pods, ns)
	if diff := cmp.Diff(before, cached); diff != "" {
		t.Errorf("cache at sync against a LIST made before the start (-want +got):\n%s", diff)
	}
	listed := listPods(ctx, t, client, ns)
	if !waitFor(ctx, m.changed, func() bool { return cmp.Equal(listed, m.get()) }) {
		t.Errorf("handler's map against a fresh LIST (-want +got):\n%s", cmp.Diff(listed, m.get()))
	}
	if diff := cmp.Diff(informer.SnapshotStats{Rejected: 1}, pods.Stats().Snapshot); diff != "" {
		t.Errorf("snapshot stats (-want +got):\n%s", diff)
	}
}

// mustAtoi parses a resource version.
func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatalf("resource version %q: %v", s, err)
	}
	return n
}

// startRestorableCluster starts a cluster of the test's own and returns it
// with its directory, which holds etcd's data in etcd-data.
func startRestorableCluster(ctx context.Context, t *testing.T, prefix string) (*cluster.Cluster, string) {
	t.Helper()
	dir, err := os.MkdirTemp(clusterDir, prefix)
	if err != nil {
		t.Fatal(err)
	}
	startCtx, cancel := context.WithTimeout(ctx, clusterStartTimeout)
	defer cancel()
	c, err := cluster.Start(startCtx, cluster.Options{Assets: assetsDir, Dir: dir})
	if err != nil {
		t.Fatalf("start a cluster of the test's own: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop the test's cluster: %v", err)
		}
	})
	return c, dir
}

// copyEtcdData backs etcd's data directory up into backup: with etcd
// stopped, so that the copy is consistent, and started again.
func copyEtcdData(ctx context.Context, t *testing.T, c *cluster.Cluster, data, backup string) {
	t.Helper()
	if err := c.StopEtcd(); err != nil {
		t.Fatalf("stop etcd: %v", err)
	}
	if err := os.CopyFS(backup, os.DirFS(data)); err != nil {
		t.Fatalf("back etcd's data up: %v", err)
	}
	privateDirs(t, backup)
	if err := c.StartEtcd(ctx); err != nil {
		t.Fatalf("start etcd: %v", err)
	}
}

// restoreEtcdData restores etcd's data directory from backup, as restoring
// a backup of a cluster does, and restarts kube-apiserver, whose watch
// cache still holds what the backup lost.
func restoreEtcdData(ctx context.Context, t *testing.T, c *cluster.Cluster, backup, data string) {
	t.Helper()
	if err := c.StopEtcd(); err != nil {
		t.Fatalf("stop etcd: %v", err)
	}
	if err := os.RemoveAll(data); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(data, os.DirFS(backup)); err != nil {
		t.Fatalf("restore etcd's data: %v", err)
	}
	privateDirs(t, data)
	if err := c.StartEtcd(ctx); err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	restartCtx, cancel := context.WithTimeout(ctx, clusterStartTimeout)
	defer cancel()
	if err := c.RestartAPIServer(restartCtx); err != nil {
		t.Fatalf("restart kube-apiserver: %v", err)
	}
}

// privateDirs makes dir and the directories under it 0700, as etcd wants
// its data directory (os.CopyFS creates them 0777 less the umask).
func privateDirs(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return os.Chmod(path, 0o700)
	})
	if err != nil {
		t.Fatal(err)
	}
}
