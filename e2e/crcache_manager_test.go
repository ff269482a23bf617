package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Sizes of TestManagerWithCacheConverges: 4 writers making 100 changes each
// to their own configmaps and pods, spread over 2 namespaces.
const (
	managerNamespaces = 2
	managerWriters    = 4
	managerOps        = 100 // per writer
	managerObjects    = 12  // names per writer and kind
)

// writerLabel is set on each object to the number of the writer that made
// it, for Lists by label.
const writerLabel = "e2e.kubetyped.io/writer"

// versionRecorder is what a reconciler last found in the manager's cache,
// by "namespace/name": the object's resource version, or no entry when the
// cache said it does not exist.
type versionRecorder struct {
	mu      sync.Mutex
	seen    resourceVersions
	changed notifier
}

func newVersionRecorder() *versionRecorder {
	return &versionRecorder{seen: resourceVersions{}, changed: newNotifier()}
}

// record stores what a Get of req from the cache returned.
func (r *versionRecorder) record(req reconcile.Request, obj client.Object, err error) (reconcile.Result, error) {
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	r.mu.Lock()
	if err != nil {
		delete(r.seen, req.Namespace+"/"+req.Name)
	} else {
		r.seen.set(obj)
	}
	r.mu.Unlock()
	r.changed.notify()
	return reconcile.Result{}, nil
}

func (r *versionRecorder) snapshot() resourceVersions {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.seen)
}

// TestManagerWithCacheConverges runs a controller-runtime manager whose
// cache is the one under test (NewCache: newCache, see
// crcache_suite_test.go), watching two namespaces, with two reconcilers
// that read through the manager's client: one typed on ConfigMaps, one on
// Pods as *unstructured.Unstructured. Concurrent writers create, update
// and delete both kinds; once they stop, what each reconciler last saw of
// every object must equal a fresh LIST, and so must the cache's List of
// each kind, of everything and by label.
func TestManagerWithCacheConverges(t *testing.T) {
	logger, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	clientset := newClientset(t)
	namespaces := make([]string, managerNamespaces)
	watched := map[string]cache.Config{}
	for i := range namespaces {
		namespaces[i] = newNamespace(ctx, t, clientset)
		watched[namespaces[i]] = cache.Config{}
		t.Cleanup(func() {
			ctx := context.WithoutCancel(ctx)
			err := clientset.CoreV1().ConfigMaps(namespaces[i]).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
			if err != nil {
				t.Errorf("delete configmaps of %s: %v", namespaces[i], err)
			}
		})
	}

	mgr, err := manager.New(restConfig, manager.Options{
		Logger:   logger,
		Metrics:  metricsserver.Options{BindAddress: "0"}, // no listener
		NewCache: newCache,
		Cache:    cache.Options{DefaultNamespaces: watched},
		// Unstructured reads come from the cache too, not the server.
		Client: client.Options{Cache: &client.CacheOptions{Unstructured: true}},
	})
	if err != nil {
		t.Fatalf("manager.New: %v", err)
	}
	reader := mgr.GetClient()
	// Running the test with -count=N builds the controllers again in the
	// same process; names are otherwise checked for uniqueness.
	opts := controller.Options{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: 2}

	configMaps := newVersionRecorder()
	err = builder.ControllerManagedBy(mgr).
		Named("e2e-configmaps").
		WithOptions(opts).
		For(&corev1.ConfigMap{}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			var cm corev1.ConfigMap
			return configMaps.record(req, &cm, reader.Get(ctx, req.NamespacedName, &cm))
		}))
	if err != nil {
		t.Fatalf("building the configmap controller: %v", err)
	}

	podGVK := corev1.SchemeGroupVersion.WithKind("Pod")
	pods := newVersionRecorder()
	watchedPod := &unstructured.Unstructured{}
	watchedPod.SetGroupVersionKind(podGVK)
	err = builder.ControllerManagedBy(mgr).
		Named("e2e-unstructured-pods").
		WithOptions(opts).
		For(watchedPod).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			pod := &unstructured.Unstructured{}
			pod.SetGroupVersionKind(podGVK)
			return pods.record(req, pod, reader.Get(ctx, req.NamespacedName, pod))
		}))
	if err != nil {
		t.Fatalf("building the pod controller: %v", err)
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
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("the manager's cache did not sync")
	}

	var writers sync.WaitGroup
	errs := make(chan error, managerWriters)
	for w := range managerWriters {
		writers.Go(func() {
			if err := writeConfigMapsAndPods(ctx, clientset, namespaces, w); err != nil {
				errs <- fmt.Errorf("writer %d: %w", w, err)
			}
		})
	}
	writers.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	direct, err := client.New(restConfig, client.Options{})
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	// fromServer lists the kind in the watched namespaces from the server.
	fromServer := func(newList func() client.ObjectList, sel labels.Selector) resourceVersions {
		want := resourceVersions{}
		for _, ns := range namespaces {
			maps.Copy(want, listVersions(ctx, t, direct, newList(), client.InNamespace(ns), client.MatchingLabelsSelector{Selector: sel}))
		}
		return want
	}
	newConfigMapList := func() client.ObjectList { return &corev1.ConfigMapList{} }
	newPodList := func() client.ObjectList {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
		return list
	}

	wantConfigMaps := fromServer(newConfigMapList, labels.Everything())
	wantPods := fromServer(newPodList, labels.Everything())
	t.Logf("%d configmaps and %d pods at the end", len(wantConfigMaps), len(wantPods))
	for _, r := range []struct {
		name string
		want resourceVersions
		rec  *versionRecorder
	}{
		{"configmap reconciler (typed)", wantConfigMaps, configMaps},
		{"pod reconciler (unstructured)", wantPods, pods},
	} {
		if !waitFor(ctx, r.rec.changed, func() bool { return cmp.Equal(r.want, r.rec.snapshot()) }) {
			t.Errorf("%s did not converge (-list +reconciled):\n%s", r.name, cmp.Diff(r.want, r.rec.snapshot()))
		}
	}

	// The reconcilers have seen the final state, so the cache holds it:
	// its List answers as the server's, for every object and by label.
	selectors := map[string]labels.Selector{"everything": labels.Everything()}
	for w := range managerWriters {
		sel := labels.Set{writerLabel: strconv.Itoa(w)}
		selectors[sel.String()] = sel.AsSelector()
	}
	for name, sel := range selectors {
		for kind, newList := range map[string]func() client.ObjectList{"configmaps": newConfigMapList, "pods (unstructured)": newPodList} {
			got := listVersions(ctx, t, mgr.GetCache(), newList(), client.MatchingLabelsSelector{Selector: sel})
			if diff := cmp.Diff(fromServer(newList, sel), got); diff != "" {
				t.Errorf("cache List of %s, %s (-server +cache):\n%s", kind, name, diff)
			}
		}
	}
}

// listVersions lists into list through r and returns the resource versions
// of its items.
func listVersions(ctx context.Context, t *testing.T, r client.Reader, list client.ObjectList, opts ...client.ListOption) resourceVersions {
	t.Helper()
	if err := r.List(ctx, list, opts...); err != nil {
		t.Fatalf("list %T: %v", list, err)
	}
	got := resourceVersions{}
	err := meta.EachListItem(list, func(obj runtime.Object) error {
		item, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		got.set(item)
		return nil
	})
	if err != nil {
		t.Fatalf("items of %T: %v", list, err)
	}
	return got
}

// writeConfigMapsAndPods makes managerOps random changes to writer w's
// configmaps and pods, spread over namespaces: a create (labelled with the
// writer) while absent, then a delete (one time in three) or an update.
func writeConfigMapsAndPods(ctx context.Context, clientset kubernetes.Interface, namespaces []string, w int) error {
	rng := rand.New(rand.NewPCG(uint64(w), 2))
	var cmExists, podExists [managerObjects]bool
	for op := range managerOps {
		i := rng.IntN(managerObjects)
		ns := namespaces[i%len(namespaces)]
		gen := strconv.Itoa(op)
		var err error
		if rng.IntN(2) == 0 {
			name := fmt.Sprintf("w%d-cm%d", w, i)
			cms := clientset.CoreV1().ConfigMaps(ns)
			switch {
			case !cmExists[i]:
				_, err = cms.Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{writerLabel: strconv.Itoa(w)}},
					Data:       map[string]string{"gen": gen},
				}, metav1.CreateOptions{})
				cmExists[i] = err == nil
			case rng.IntN(3) == 0:
				err = cms.Delete(ctx, name, metav1.DeleteOptions{})
				cmExists[i] = err != nil
			default:
				patch := []byte(`{"data":{"gen":"` + gen + `"}}`)
				_, err = cms.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			}
			if err != nil {
				return fmt.Errorf("op %d on configmap %s/%s: %w", op, ns, name, err)
			}
			continue
		}
		name := fmt.Sprintf("w%d-pod%d", w, i)
		pods := clientset.CoreV1().Pods(ns)
		switch {
		case !podExists[i]:
			pod := newPod(name, gen)
			pod.Labels[writerLabel] = strconv.Itoa(w)
			_, err = pods.Create(ctx, pod, metav1.CreateOptions{})
			podExists[i] = err == nil
		case rng.IntN(3) == 0:
			err = pods.Delete(ctx, name, metav1.DeleteOptions{})
			podExists[i] = err != nil
		default:
			patch := []byte(`{"metadata":{"labels":{"` + genLabel + `":"` + gen + `"}}}`)
			_, err = pods.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		}
		if err != nil {
			return fmt.Errorf("op %d on pod %s/%s: %w", op, ns, name, err)
		}
	}
	return nil
}
