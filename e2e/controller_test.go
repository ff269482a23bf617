package e2e

import (
	"context"
	"errors"
	"maps"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kubetyped/informer"
)

// podSeen is what the reconciler last found in the informer's cache for a
// pod: whether it exists and, if so, its version and gen label.
type podSeen struct {
	Exists          bool
	ResourceVersion string
	Gen             string
}

// seenPod is how the reconciler should see pod.
func seenPod(pod *corev1.Pod) podSeen {
	return podSeen{Exists: true, ResourceVersion: pod.ResourceVersion, Gen: pod.Labels[genLabel]}
}

// podRecorder is a reconciler that reads each requested pod through our
// Lister (not controller-runtime's cache) and records what it found, by name.
type podRecorder struct {
	pods    *informer.Lister[*corev1.Pod]
	changed notifier

	mu   sync.Mutex
	seen map[string]podSeen
}

func (r *podRecorder) Reconcile(_ context.Context, req reconcile.Request) (reconcile.Result, error) {
	var seen podSeen
	pod, err := r.pods.Namespace(req.Namespace).Get(req.Name)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return reconcile.Result{}, err
	default:
		seen = seenPod(pod)
	}
	r.mu.Lock()
	r.seen[req.Name] = seen
	r.mu.Unlock()
	r.changed.notify()
	return reconcile.Result{}, nil
}

func (r *podRecorder) snapshot() map[string]podSeen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.seen)
}

// TestControllerRuntimeReconcilesFromInformer runs a controller-runtime
// controller whose only source is our informer, exposed through
// informer.AsSharedIndexInformer, against the real server: pods that existed
// before it started, and pods created, updated and deleted while it runs, are
// all reconciled, and the reconciler finds their latest state in our cache.
func TestControllerRuntimeReconcilesFromInformer(t *testing.T) {
	logger, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	client := newClientset(t)
	ns := newNamespace(ctx, t, client)

	want := map[string]podSeen{}
	for _, name := range []string{"pre-0", "pre-1", "pre-2"} {
		want[name] = seenPod(createPod(ctx, t, client, ns, name))
	}

	factory, err := informer.NewFactory(restConfig, informer.FactoryOptions{Namespace: ns})
	if err != nil {
		t.Fatalf("NewFactory: %v", err)
	}
	defer factory.Shutdown()
	pods, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{})
	if err != nil {
		t.Fatalf("For: %v", err)
	}
	factory.Start(ctx)
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		t.Fatalf("WaitForCacheSync: %v", err)
	}

	mgr, err := manager.New(restConfig, manager.Options{
		Logger:  logger,
		Metrics: metricsserver.Options{BindAddress: "0"}, // no listener
	})
	if err != nil {
		t.Fatalf("manager.New: %v", err)
	}
	rec := &podRecorder{pods: pods.Lister(), changed: newNotifier(), seen: map[string]podSeen{}}
	err = builder.ControllerManagedBy(mgr).
		Named("e2e-pods").
		// Running the test with -count=N builds the controller again in
		// the same process; names are otherwise checked for uniqueness.
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true)}).
		WatchesRawSource(&source.Informer{
			Informer: informer.AsSharedIndexInformer(pods),
			Handler:  &handler.EnqueueRequestForObject{},
		}).
		Complete(rec)
	if err != nil {
		t.Fatalf("building the controller: %v", err)
	}
	mgrCtx, stopMgr := context.WithCancel(ctx)
	mgrDone := make(chan error, 1)
	go func() { mgrDone <- mgr.Start(mgrCtx) }()
	defer func() {
		stopMgr()
		if err := <-mgrDone; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("manager: %v", err)
		}
	}()

	// expect waits until the reconciler has seen want, then compares.
	expect := func(phase string) {
		t.Helper()
		waitFor(ctx, rec.changed, func() bool { return cmp.Equal(want, rec.snapshot()) })
		if diff := cmp.Diff(want, rec.snapshot()); diff != "" {
			t.Fatalf("%s: reconciled state (-want +got):\n%s", phase, diff)
		}
	}
	expect("pods that existed before the controller")

	for _, name := range []string{"new-0", "new-1", "new-2"} {
		want[name] = seenPod(createPod(ctx, t, client, ns, name))
	}
	expect("created pods")

	for _, name := range []string{"pre-0", "new-0"} {
		want[name] = seenPod(relabelPod(ctx, t, client, ns, name, "1"))
	}
	expect("updated pods")

	for _, name := range []string{"pre-1", "new-1"} {
		deletePod(ctx, t, client, ns, name)
		want[name] = podSeen{}
	}
	expect("deleted pods")
}
