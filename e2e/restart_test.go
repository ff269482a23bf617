package e2e

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubetyped/informer"
)

// snapshotProvider is a MetricsProvider that keeps the read function of the
// last informer it was given and collects nothing about handlers.
type snapshotProvider struct {
	read atomic.Pointer[func() informer.InformerSnapshot]
}

func (p *snapshotProvider) AddInformer(_ informer.InformerID, read func() informer.InformerSnapshot) informer.InformerMetrics {
	p.read.Store(&read)
	return nil
}

// requests returns the reflector's request counts.
func (p *snapshotProvider) requests() informer.ReflectorRequestStats {
	if read := p.read.Load(); read != nil {
		return (*read)().Requests
	}
	return informer.ReflectorRequestStats{}
}

// TestInformerRecoversFromAPIServerRestart restarts kube-apiserver under a
// synced pod informer, then changes pods: the informer must notice the lost
// watch, come back (re-watching or relisting) and converge with the server.
func TestInformerRecoversFromAPIServerRestart(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	client := newClientset(t)
	ns := newNamespace(ctx, t, client)
	for i := range 3 {
		createPod(ctx, t, client, ns, fmt.Sprintf("pre-%d", i))
	}

	metrics := &snapshotProvider{}
	pods, changed := startPodInformer(ctx, t, informer.FactoryOptions{Metrics: metrics})
	before := metrics.requests()

	restartCtx, cancelRestart := context.WithTimeout(ctx, clusterStartTimeout)
	err := testCluster.RestartAPIServer(restartCtx)
	cancelRestart()
	if err != nil {
		t.Fatalf("restart kube-apiserver: %v", err)
	}

	for i := range 3 {
		createPod(ctx, t, client, ns, fmt.Sprintf("new-%d", i))
	}
	relabelPod(ctx, t, client, ns, "pre-0", "1")
	relabelPod(ctx, t, client, ns, "new-0", "1")
	deletePod(ctx, t, client, ns, "pre-1")
	expectConverged(ctx, t, pods, changed, ns, listPods(ctx, t, client, ns))

	// The informer noticed: it watched again or listed again.
	after := metrics.requests()
	t.Logf("requests before the restart %+v, after %+v", before, after)
	if after.WatchRestarts+relists(after) <= before.WatchRestarts+relists(before) {
		t.Errorf("no watch restart and no relist across the API server's restart: before %+v, after %+v", before, after)
	}
}

// relists counts the requests for the full state made after the initial
// one.
func relists(s informer.ReflectorRequestStats) uint64 {
	return s.Lists.Expired + s.Lists.Error + s.StreamingLists.Expired + s.StreamingLists.Error
}

// etcdOutage is how long TestInformerRidesOutEtcdOutage keeps etcd down.
const etcdOutage = 3 * time.Second

// TestInformerRidesOutEtcdOutage stops etcd under a synced pod informer for
// a few seconds, then changes pods once the API server can reach its
// storage again: the informer must converge with the server.
func TestInformerRidesOutEtcdOutage(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	client := newClientset(t)
	ns := newNamespace(ctx, t, client)
	for i := range 3 {
		createPod(ctx, t, client, ns, fmt.Sprintf("pre-%d", i))
	}

	metrics := &snapshotProvider{}
	pods, changed := startPodInformer(ctx, t, informer.FactoryOptions{Metrics: metrics})

	if err := testCluster.StopEtcd(); err != nil {
		t.Fatalf("stop etcd: %v", err)
	}
	time.Sleep(etcdOutage)
	startCtx, cancelStart := context.WithTimeout(ctx, clusterStartTimeout)
	err := testCluster.StartEtcd(startCtx)
	cancelStart()
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	// The API server reconnects to etcd on its own; wait until it serves
	// from storage again.
	err = wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		_, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: ""})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("the API server did not serve pods again: %v", err)
	}

	for i := range 2 {
		createPod(ctx, t, client, ns, fmt.Sprintf("new-%d", i))
	}
	relabelPod(ctx, t, client, ns, "pre-0", "1")
	deletePod(ctx, t, client, ns, "pre-1")
	expectConverged(ctx, t, pods, changed, ns, listPods(ctx, t, client, ns))
	t.Logf("requests after the outage: %+v", metrics.requests())
}
