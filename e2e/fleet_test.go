package e2e

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/e2e/internal/cluster"
)

// The durations of TestFleetFaults.
const (
	// fleetStopDuration is how long one API server stays stopped with
	// SIGSTOP (issue 34, E6 (b): 60 s).
	fleetStopDuration = 60 * time.Second
	// fleetBaselineDuration is how long the event latency is measured
	// without a fault, before the stop.
	fleetBaselineDuration = 20 * time.Second
	// fleetWriteInterval is the pace of the latency measurement's writes,
	// one pod per healthy cluster each time.
	fleetWriteInterval = 250 * time.Millisecond
	// fleetSyncTimeout is the fleet's SyncTimeout: a cluster not synced
	// this long after its start is failed for the fleet's readiness.
	fleetSyncTimeout = 5 * time.Second
	// fleetTestTimeout bounds the whole test: the stop and the baseline,
	// five servers starting and one restarting twice on a loaded machine.
	fleetTestTimeout = 8 * time.Minute
)

// fleetDeniedUser is the user the fleet reaches the "denied" cluster as: it
// may not list pods there.
const fleetDeniedUser = "e2e-fleet-denied"

// fleetNamespace is the namespace of the test's pods in each cluster (each
// cluster is the test's own).
const fleetNamespace = "fleet"

// TestFleetFaults is issue 34's E6 (b): four kube-apiservers over one etcd,
// each its own cluster (its own --etcd-prefix), under one Fleet of pods
// with SyncTimeout fleetSyncTimeout and a handler that builds a map of
// each cluster's pods, one cluster per fault:
//   - "denied" refuses the fleet's user (RBAC, 403): it is Failed after
//     SyncTimeout with the Forbidden error in Stats, the others Synced, and
//     stays so throughout;
//   - "paused" is stopped with SIGSTOP for fleetStopDuration: meanwhile the
//     healthy clusters' event latency (create → handler) is measured, as it
//     was without the fault just before, and logged (not asserted);
//     AddCluster of two more clusters over the stopped server and
//     RemoveCluster of one over a healthy server and of one over the
//     stopped server return; the clusters added become Failed and the
//     fleet ready; after SIGCONT they are Synced and converge;
//   - "restarted"'s server is killed and started again: it converges;
//   - "compacted" is reached through a second server of the cluster
//     without watch cache, killed while the pods change through the
//     first and etcd is compacted, then started again: the fleet's watch
//     from its old resource version is refused ("410 Gone"), the cluster
//     relists and converges.
//
// Converging is the handler's map of a cluster equal to a fresh LIST of
// it. The test costs about fleetBaselineDuration + fleetStopDuration plus
// the servers' starts (1.5 to 3 minutes).
func TestFleetFaults(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, fleetTestTimeout)
	defer cancel()
	began := time.Now()

	// The etcd and the cluster's own server, through which "compacted"'s
	// pods are written; then the four servers the fleet reaches, started
	// together.
	c := startClusterOfOwn(ctx, t, "fleet-", cluster.Options{Users: []string{fleetDeniedUser}})
	servers := map[string]*cluster.APIServer{}
	serverOpts := map[string]cluster.APIServerOptions{
		"paused":    {EtcdPrefix: "/fleet-paused"},
		"restarted": {EtcdPrefix: "/fleet-restarted"},
		"compacted": {Args: []string{"--watch-cache=false"}},
		"denied":    {EtcdPrefix: "/fleet-denied", Args: []string{"--authorization-mode=RBAC"}},
	}
	var startMu sync.Mutex
	var starting sync.WaitGroup
	for name, opts := range serverOpts {
		opts.Name = name
		starting.Go(func() {
			startCtx, cancel := context.WithTimeout(ctx, clusterStartTimeout)
			defer cancel()
			s, err := c.StartAPIServer(startCtx, opts)
			startMu.Lock()
			defer startMu.Unlock()
			if err != nil {
				t.Errorf("start API server %s: %v", name, err)
				return
			}
			servers[name] = s
		})
	}
	starting.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("etcd and 5 API servers started in %v", time.Since(began).Round(time.Millisecond))

	// What the test writes through, and lists each cluster with.
	clients := map[string]kubernetes.Interface{
		"paused":    newClientsetFor(t, servers["paused"].Config()),
		"restarted": newClientsetFor(t, servers["restarted"].Config()),
		"compacted": newClientsetFor(t, c.Config()),
		"denied":    newClientsetFor(t, servers["denied"].Config()),
	}
	for name, client := range clients {
		if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetNamespace}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create namespace in %s: %v", name, err)
		}
		for i := range 3 {
			createPod(ctx, t, client, fleetNamespace, fmt.Sprintf("pre-%d", i))
		}
	}

	metrics := &fleetMetrics{}
	fleet, err := informer.NewFleet(informer.FleetOptions[*corev1.Pod]{
		Informer:    informer.InformerOptions[*corev1.Pod]{Name: "pods", Metrics: metrics},
		SyncTimeout: fleetSyncTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	rec := newFleetRecorder()
	if _, err := fleet.AddEventHandler(rec.handler()); err != nil {
		t.Fatal(err)
	}
	deniedConfig, err := servers["denied"].ConfigFor(fleetDeniedUser)
	if err != nil {
		t.Fatal(err)
	}
	configs := map[string]*rest.Config{
		"paused":    servers["paused"].Config(),
		"restarted": servers["restarted"].Config(),
		"compacted": servers["compacted"].Config(),
		"denied":    deniedConfig,
		// A second cluster over "restarted"'s server, removed during the
		// stop.
		"spare": servers["restarted"].Config(),
	}
	for name, config := range configs {
		if err := fleet.AddCluster(name, config); err != nil {
			t.Fatal(err)
		}
	}
	runFleet(ctx, t, fleet)

	// The readiness policy: "denied" Failed with its 403, the others
	// Synced, and the fleet ready.
	want := map[string]informer.ClusterState{
		"compacted": informer.ClusterSynced,
		"denied":    informer.ClusterFailed,
		"paused":    informer.ClusterSynced,
		"restarted": informer.ClusterSynced,
		"spare":     informer.ClusterSynced,
	}
	expectFleetStates(ctx, t, fleet, want)
	expectForbidden(t, fleet, "denied")
	listOf := func(name string) resourceVersions { return listPods(ctx, t, clients[name], "") }
	expectFleetConverged(ctx, t, rec, map[string]resourceVersions{
		"compacted": listOf("compacted"),
		"paused":    listOf("paused"),
		"restarted": listOf("restarted"),
		"spare":     listOf("restarted"),
	})
	t.Logf("fleet ready, %v from the start", time.Since(began).Round(time.Millisecond))

	// Event latency without a fault, then with "paused" stopped.
	healthy := map[string]kubernetes.Interface{"restarted": clients["restarted"], "compacted": clients["compacted"]}
	baseline := measureFleetLatency(ctx, t, rec, healthy, "base", time.Now().Add(fleetBaselineDuration))
	// Every pod written is in spare's map too before the stop, so that its
	// removal's deletes are those of this list.
	restartedPods := listOf("restarted")
	expectFleetConverged(ctx, t, rec, map[string]resourceVersions{"restarted": restartedPods, "spare": restartedPods})
	sparePods := len(restartedPods)

	timed := func(what string, f func() error) {
		t.Helper()
		start := time.Now()
		err := f()
		t.Logf("%s returned in %v", what, time.Since(start).Round(time.Microsecond))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// Removed before the stop, while no pod is written: the removal
	// delivers a delete for each of spare's objects. (The latency writer
	// writes into spare's cluster during the stop.)
	timed(`RemoveCluster("spare")`, func() error { return fleet.RemoveCluster("spare") })
	delete(want, "spare")
	if !waitFor(ctx, rec.changed, func() bool { return rec.removedOf("spare") == sparePods && len(rec.versionsOf("spare")) == 0 }) {
		t.Fatalf("spare: %d deletes of a removed cluster and %d objects left, want %d and 0", rec.removedOf("spare"), len(rec.versionsOf("spare")), sparePods)
	}
	if err := servers["paused"].Pause(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	t.Logf("paused stopped with SIGSTOP for %v", fleetStopDuration)
	latencyDone := make(chan []time.Duration, 1)
	go func() {
		latencyDone <- measureFleetLatency(ctx, t, rec, healthy, "stop", stopped.Add(fleetStopDuration))
	}()
	timed(`AddCluster("late") over the stopped server`, func() error { return fleet.AddCluster("late", servers["paused"].Config()) })
	timed(`AddCluster("hung") over the stopped server`, func() error { return fleet.AddCluster("hung", servers["paused"].Config()) })
	want["late"], want["hung"] = informer.ClusterFailed, informer.ClusterFailed
	expectFleetStates(ctx, t, fleet, want)
	timed(`RemoveCluster("hung") (Failed, its list hanging)`, func() error { return fleet.RemoveCluster("hung") })
	delete(want, "hung")
	expectFleetStates(ctx, t, fleet, want)
	faulted := <-latencyDone
	if t.Failed() {
		t.FailNow()
	}
	if err := servers["paused"].Resume(); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	t.Logf("paused continued with SIGCONT after %v", time.Since(stopped).Round(time.Millisecond))
	logFleetLatency(t, "without a fault", baseline)
	logFleetLatency(t, fmt.Sprintf("while paused was stopped for %v", fleetStopDuration), faulted)
	if p99b, p99f := percentile(baseline, 0.99), percentile(faulted, 0.99); p99b > 0 {
		t.Logf("event latency p99 with the fault / without: %.2f", float64(p99f)/float64(p99b))
	}

	// After SIGCONT: late syncs, and paused's events flow again.
	want["late"] = informer.ClusterSynced
	expectFleetStates(ctx, t, fleet, want)
	t.Logf("late Synced %v after SIGCONT", time.Since(resumed).Round(time.Millisecond))
	createPod(ctx, t, clients["paused"], fleetNamespace, "after-stop")
	relabelPod(ctx, t, clients["paused"], fleetNamespace, "pre-0", "1")
	expectFleetConverged(ctx, t, rec, map[string]resourceVersions{"paused": listOf("paused"), "late": listOf("paused")})
	t.Logf("paused and late converged %v after SIGCONT; requests of paused %+v, of late %+v", time.Since(resumed).Round(time.Millisecond), metrics.requests("pods/paused"), metrics.requests("pods/late"))

	// "restarted": killed, started again, then changed.
	restartedAt := time.Now()
	if err := servers["restarted"].Kill(); err != nil {
		t.Fatal(err)
	}
	startServer(ctx, t, servers["restarted"])
	createPod(ctx, t, clients["restarted"], fleetNamespace, "after-restart")
	relabelPod(ctx, t, clients["restarted"], fleetNamespace, "pre-0", "1")
	deletePod(ctx, t, clients["restarted"], fleetNamespace, "pre-1")
	expectFleetConverged(ctx, t, rec, map[string]resourceVersions{"restarted": listOf("restarted")})
	t.Logf("restarted converged %v after its server was killed; requests %+v", time.Since(restartedAt).Round(time.Millisecond), metrics.requests("pods/restarted"))

	// "compacted": its server killed, pods changed through the cluster's
	// other server, etcd compacted, the server started again.
	compactedAt := time.Now()
	before := metrics.requests("pods/compacted")
	if err := servers["compacted"].Kill(); err != nil {
		t.Fatal(err)
	}
	createPod(ctx, t, clients["compacted"], fleetNamespace, "while-down")
	relabelPod(ctx, t, clients["compacted"], fleetNamespace, "pre-0", "1")
	deletePod(ctx, t, clients["compacted"], fleetNamespace, "pre-1")
	revision, err := c.CompactEtcd(ctx)
	if err != nil {
		t.Fatal(err)
	}
	startServer(ctx, t, servers["compacted"])
	expectFleetConverged(ctx, t, rec, map[string]resourceVersions{"compacted": listOf("compacted")})
	after := metrics.requests("pods/compacted")
	t.Logf("compacted (etcd at revision %d) converged %v after its server was killed; requests before %+v, after %+v", revision, time.Since(compactedAt).Round(time.Millisecond), before, after)
	if expired := after.Lists.Expired - before.Lists.Expired; expired != 1 {
		t.Errorf("compacted: %d relists for an expired resource version, want 1", expired)
	}

	// In the end: every cluster converged, denied still Failed with its
	// 403, and the fleet ready.
	expectFleetStates(ctx, t, fleet, want)
	expectForbidden(t, fleet, "denied")
	expectFleetConverged(ctx, t, rec, map[string]resourceVersions{
		"compacted": listOf("compacted"),
		"late":      listOf("paused"),
		"paused":    listOf("paused"),
		"restarted": listOf("restarted"),
	})
	if !fleet.HasSynced() {
		t.Error("fleet not ready at the end")
	}
	t.Logf("TestFleetFaults took %v", time.Since(began).Round(time.Millisecond))
}

// newClientsetFor returns a clientset for config.
func newClientsetFor(t *testing.T, config *rest.Config) kubernetes.Interface {
	t.Helper()
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	return client
}

// startServer starts s again after Kill, failing the test if it does not
// become ready.
func startServer(ctx context.Context, t *testing.T, s *cluster.APIServer) {
	t.Helper()
	startCtx, cancel := context.WithTimeout(ctx, clusterStartTimeout)
	defer cancel()
	if err := s.Start(startCtx); err != nil {
		t.Fatalf("start the API server again: %v", err)
	}
}

// runFleet runs fleet until the test ends, and then fails it if Run does
// not return: a cluster's goroutine left behind.
func runFleet(ctx context.Context, t *testing.T, fleet *informer.Fleet[*corev1.Pod]) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		fleet.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(testTimeout):
			t.Errorf("Fleet.Run did not return within %v of its context's end", testTimeout)
		}
	})
}

// expectFleetStates polls the fleet's Stats until its clusters' states are
// want and the fleet is ready, and fails the test if ctx ends first.
func expectFleetStates(ctx context.Context, t *testing.T, fleet *informer.Fleet[*corev1.Pod], want map[string]informer.ClusterState) {
	t.Helper()
	states := func() map[string]informer.ClusterState {
		got := map[string]informer.ClusterState{}
		for _, c := range fleet.Stats().Clusters {
			got[c.Name] = c.State
		}
		return got
	}
	if err := pollUntil(ctx, func() bool { return cmp.Equal(want, states()) && fleet.HasSynced() }); err != nil {
		t.Fatalf("cluster states (-want +got):\n%s\nfleet ready: %v; stats %+v", cmp.Diff(want, states()), fleet.HasSynced(), fleet.Stats())
	}
}

// expectForbidden fails the test unless cluster's last error is the
// server's 403.
func expectForbidden(t *testing.T, fleet *informer.Fleet[*corev1.Pod], cluster string) {
	t.Helper()
	for _, c := range fleet.Stats().Clusters {
		if c.Name == cluster {
			if !apierrors.IsForbidden(c.LastError) {
				t.Errorf("%s: last error %v, want a 403 Forbidden", cluster, c.LastError)
			}
			return
		}
	}
	t.Errorf("no cluster %s in the fleet", cluster)
}

// expectFleetConverged waits, at each notification, until the handler's
// map of each cluster of want equals want's, and fails the test with the
// difference if ctx ends first.
func expectFleetConverged(ctx context.Context, t *testing.T, rec *fleetRecorder, want map[string]resourceVersions) {
	t.Helper()
	got := func() map[string]resourceVersions {
		m := map[string]resourceVersions{}
		for name := range want {
			m[name] = rec.versionsOf(name)
		}
		return m
	}
	// Each notification wakes the wait; a poll as well, in case the last
	// one came before.
	wake, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		ticker := time.NewTicker(100 * time.Millisecond)
		defer ticker.Stop()
		for {
			select {
			case <-wake.Done():
				return
			case <-ticker.C:
				rec.changed.notify()
			}
		}
	}()
	if !waitFor(ctx, rec.changed, func() bool { return cmp.Equal(want, got()) }) {
		t.Fatalf("the handler's maps did not converge with the servers' lists (-list +handler):\n%s", cmp.Diff(want, got()))
	}
	if diff := cmp.Diff(want, got()); diff != "" {
		t.Fatalf("handler's maps (-list +handler):\n%s", diff)
	}
}

// fleetRecorder is a fleet handler's record: each cluster's pods and their
// resource versions, when each pod was first added, and the deletes of
// removed clusters.
type fleetRecorder struct {
	mu       sync.Mutex
	versions map[string]resourceVersions // by cluster
	added    map[string]time.Time        // by cluster + "/" + namespace/name
	removed  map[string]int              // ClusterRemoved deletes by cluster
	changed  notifier
}

func newFleetRecorder() *fleetRecorder {
	return &fleetRecorder{versions: map[string]resourceVersions{}, added: map[string]time.Time{}, removed: map[string]int{}, changed: newNotifier()}
}

func (r *fleetRecorder) handler() informer.FleetEventHandlerFuncs[*corev1.Pod] {
	return informer.FleetEventHandlerFuncs[*corev1.Pod]{
		AddFunc: func(cluster string, pod *corev1.Pod, _ bool) {
			now := time.Now()
			r.mu.Lock()
			r.set(cluster, pod)
			if key := cluster + "/" + pod.Namespace + "/" + pod.Name; r.added[key].IsZero() {
				r.added[key] = now
			}
			r.mu.Unlock()
			r.changed.notify()
		},
		UpdateFunc: func(cluster string, _, pod *corev1.Pod) {
			r.mu.Lock()
			r.set(cluster, pod)
			r.mu.Unlock()
			r.changed.notify()
		},
		DeleteFunc: func(cluster string, d informer.DeletedObject[*corev1.Pod]) {
			r.mu.Lock()
			delete(r.versions[cluster], d.Name.String())
			if d.ClusterRemoved {
				r.removed[cluster]++
			}
			r.mu.Unlock()
			r.changed.notify()
		},
	}
}

// set records pod of cluster; r.mu held.
func (r *fleetRecorder) set(cluster string, pod *corev1.Pod) {
	if r.versions[cluster] == nil {
		r.versions[cluster] = resourceVersions{}
	}
	r.versions[cluster].set(pod)
}

// versionsOf returns a copy of cluster's map.
func (r *fleetRecorder) versionsOf(cluster string) resourceVersions {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := resourceVersions{}
	for k, v := range r.versions[cluster] {
		m[k] = v
	}
	return m
}

// removedOf returns the number of deletes of removed cluster.
func (r *fleetRecorder) removedOf(cluster string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removed[cluster]
}

// addedAt returns when the pod of cluster was first added, or false.
func (r *fleetRecorder) addedAt(key string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	at, ok := r.added[key]
	return at, ok
}

// measureFleetLatency creates a pod in each cluster of clients every
// fleetWriteInterval until deadline, named after phase, and returns each
// pod's latency: from just before its create to its add in the handler.
func measureFleetLatency(ctx context.Context, t *testing.T, rec *fleetRecorder, clients map[string]kubernetes.Interface, phase string, deadline time.Time) []time.Duration {
	var mu sync.Mutex
	written := map[string]time.Time{}
	var writers sync.WaitGroup
	for name, client := range clients {
		writers.Go(func() {
			ticker := time.NewTicker(fleetWriteInterval)
			defer ticker.Stop()
			for i := 0; time.Now().Before(deadline); i++ {
				pod := fmt.Sprintf("%s-%d", phase, i)
				start := time.Now()
				if _, err := client.CoreV1().Pods(fleetNamespace).Create(ctx, newPod(pod, "0"), metav1.CreateOptions{}); err != nil {
					t.Errorf("create pod %s in %s: %v", pod, name, err)
					return
				}
				mu.Lock()
				written[name+"/"+fleetNamespace+"/"+pod] = start
				mu.Unlock()
				select {
				case <-ctx.Done():
					return
				case <-ticker.C:
				}
			}
		})
	}
	writers.Wait()
	latencies := make([]time.Duration, 0, len(written))
	err := pollUntil(ctx, func() bool {
		latencies = latencies[:0]
		for key, start := range written {
			at, ok := rec.addedAt(key)
			if !ok {
				return false
			}
			latencies = append(latencies, at.Sub(start))
		}
		return true
	})
	if err != nil {
		t.Errorf("%s: the handler did not receive every pod written: %v", phase, err)
	}
	return latencies
}

// percentile returns the q-quantile of latencies (nearest rank), 0 for
// none.
func percentile(latencies []time.Duration, q float64) time.Duration {
	if len(latencies) == 0 {
		return 0
	}
	sorted := slices.Clone(latencies)
	slices.Sort(sorted)
	rank := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(rank, 0)]
}

// logFleetLatency logs the event latency figures of one phase.
func logFleetLatency(t *testing.T, phase string, latencies []time.Duration) {
	t.Helper()
	t.Logf("event latency %s: %d pods, p50 %v, p99 %v, max %v", phase, len(latencies),
		percentile(latencies, 0.5).Round(time.Microsecond), percentile(latencies, 0.99).Round(time.Microsecond), percentile(latencies, 1).Round(time.Microsecond))
}

// fleetMetrics keeps each cluster informer's snapshot reader by informer
// name ("pods/<cluster>").
type fleetMetrics struct {
	mu   sync.Mutex
	read map[string]func() informer.InformerSnapshot
}

func (m *fleetMetrics) AddInformer(id informer.InformerID, read func() informer.InformerSnapshot) informer.InformerMetrics {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.read == nil {
		m.read = map[string]func() informer.InformerSnapshot{}
	}
	m.read[id.Name] = read
	return nil
}

// requests returns the request counts of the informer named name.
func (m *fleetMetrics) requests(name string) informer.ReflectorRequestStats {
	m.mu.Lock()
	read := m.read[name]
	m.mu.Unlock()
	if read == nil {
		return informer.ReflectorRequestStats{}
	}
	return read().Requests
}
