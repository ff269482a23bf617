// Package e2e runs the informer against a real kube-apiserver and etcd,
// started once for the package by TestMain from the binaries in $KUBE_ASSETS
// (built by hack/build-assets.sh; hack/e2e.sh does both).
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubetyped/informer/e2e/internal/cluster"
)

// restConfig reaches the cluster TestMain started, as an administrator. Tests
// must not modify it; rest.CopyConfig first.
var restConfig *rest.Config

// testCluster is the cluster TestMain started, for tests that act on the
// servers themselves (restarts).
var testCluster *cluster.Cluster

// assetsDir holds the server binaries; clusterDir is the directory of
// testCluster, under which tests that start a cluster of their own put it.
var assetsDir, clusterDir string

// clusterStartTimeout bounds etcd's and the API server's start; a cold start
// takes a few seconds, far more on a loaded machine.
const clusterStartTimeout = 3 * time.Minute

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

// runTests starts the cluster, runs the tests and stops the cluster. A
// missing binary fails the run instead of skipping it, so that CI cannot
// pass without the end-to-end tests. If the test binary dies without
// getting here (a panic, a -timeout), the servers die with it; see
// cluster.Start.
func runTests(m *testing.M) int {
	// controller-runtime's sources log through its global logger, which
	// complains with a stack trace if it is never set.
	ctrllog.SetLogger(klog.Background())

	assets := os.Getenv("KUBE_ASSETS")
	if assets == "" {
		fmt.Fprintln(os.Stderr, "e2e: KUBE_ASSETS is not set; run hack/e2e.sh, or hack/build-assets.sh and export KUBE_ASSETS (see hack/README.md)")
		return 1
	}
	// hack/e2e.sh passes a directory of its own so that it can check
	// afterwards that no server is left running from it.
	dir := os.Getenv("E2E_CLUSTER_DIR")
	removeDir := false
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "kubetyped-e2e-"); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		removeDir = true
	}

	ctx, cancel := context.WithTimeout(context.Background(), clusterStartTimeout)
	c, err := cluster.Start(ctx, cluster.Options{Assets: assets, Dir: dir})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the cluster:", err)
		return 1
	}
	restConfig, testCluster = c.Config(), c
	assetsDir, clusterDir = assets, dir

	code := m.Run()

	if err := c.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: stopping the cluster:", err)
		if code == 0 {
			code = 1
		}
	}
	if code != 0 {
		fmt.Fprintln(os.Stderr, "e2e: server logs kept in", dir)
	} else if removeDir {
		os.RemoveAll(dir)
	}
	return code
}
