package e2e

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/e2e/internal/cluster"
)

// viewer is the user of TestForbiddenListBacksOffUntilGranted, with no
// permission until the test grants one.
const viewer = "e2e-viewer"

// forbiddenWait is how long the test watches the informer fail before
// granting it access.
const forbiddenWait = 3 * time.Second

// TestForbiddenListBacksOffUntilGranted runs a pod informer as a user that
// may not list pods, on a cluster with RBAC: the watch error handler gets
// the server's Forbidden error, the reflector backs off instead of retrying
// in a loop, and once a RoleBinding grants access the informer syncs.
func TestForbiddenListBacksOffUntilGranted(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	c := startClusterOfOwn(ctx, t, "rbac-", cluster.Options{
		APIServerArgs: []string{"--authorization-mode=RBAC"},
		Users:         []string{viewer},
	})
	admin, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	ns := newNamespace(ctx, t, admin)
	createPod(ctx, t, admin, ns, "pod-0")

	viewerConfig, err := c.ConfigFor(viewer)
	if err != nil {
		t.Fatal(err)
	}
	lw, err := informer.NewRESTListerWatcher[*corev1.Pod](viewerConfig, informer.RESTOptions{Namespace: ns})
	if err != nil {
		t.Fatalf("NewRESTListerWatcher: %v", err)
	}
	metrics := &snapshotProvider{}
	var mu sync.Mutex
	var watchErrors []error
	pods, err := informer.NewInformer(lw, informer.InformerOptions[*corev1.Pod]{
		Name:    "pods",
		Metrics: metrics,
		WatchErrorHandler: func(_ context.Context, err error) {
			mu.Lock()
			watchErrors = append(watchErrors, err)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	runInformer(ctx, t, pods)

	time.Sleep(forbiddenWait)
	if pods.HasSynced() {
		t.Fatal("informer synced without permission to list pods")
	}
	requests := metrics.requests()
	attempts := requests.Lists.Initial + requests.Lists.Error + requests.StreamingLists.Initial + requests.StreamingLists.Error
	mu.Lock()
	errs := append([]error(nil), watchErrors...)
	mu.Unlock()
	t.Logf("in %v: requests %+v, %d watch errors, first: %v", forbiddenWait, requests, len(errs), errs[0])
	// The backoff starts at 0.8 s and doubles: a handful of attempts, where
	// a loop without backoff would make hundreds.
	if attempts == 0 || attempts > 10 {
		t.Errorf("%d list attempts in %v, want between 1 and 10", attempts, forbiddenWait)
	}
	for _, err := range errs {
		if !apierrors.IsForbidden(err) {
			t.Errorf("watch error handler got %v, want a Forbidden error", err)
		}
	}

	grantPodReader(ctx, t, admin, ns, viewer)
	// The next attempt comes after the backoff, at most 30 s later.
	if !cache.WaitFor(ctx, "pods", pods.HasSyncedChecker()) {
		t.Fatal("informer did not sync after access was granted")
	}
	if got := cachedVersions(pods, ns); len(got) != 1 {
		t.Errorf("cache holds %v, want pod-0", got)
	}
}

// grantPodReader lets user get, list and watch pods in namespace.
func grantPodReader(ctx context.Context, t *testing.T, admin kubernetes.Interface, namespace, user string) {
	t.Helper()
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}},
	}
	if _, err := admin.RbacV1().Roles(namespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create role: %v", err)
	}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := admin.RbacV1().RoleBindings(namespace).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create role binding: %v", err)
	}
}

// startClusterOfOwn starts a cluster for one test, in a directory named
// after prefix under testCluster's (so that hack/e2e.sh's check for
// leftover servers covers it), and stops it when the test ends.
func startClusterOfOwn(ctx context.Context, t *testing.T, prefix string, opts cluster.Options) *cluster.Cluster {
	t.Helper()
	dir, err := os.MkdirTemp(clusterDir, prefix)
	if err != nil {
		t.Fatal(err)
	}
	opts.Assets, opts.Dir = assetsDir, dir
	startCtx, cancel := context.WithTimeout(ctx, clusterStartTimeout)
	defer cancel()
	c, err := cluster.Start(startCtx, opts)
	if err != nil {
		t.Fatalf("start a cluster of the test's own: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stop the test's cluster: %v", err)
		}
	})
	return c
}
