package e2e

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubetyped/informer"
)

// genLabel is the label the tests change to make an update.
const genLabel = "e2e.kubetyped.io/gen"

// newClientset returns a clientset for the test cluster.
func newClientset(t *testing.T) *kubernetes.Clientset {
	t.Helper()
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	return client
}

// newNamespace creates a namespace of its own for the test and deletes its
// pods at the end. (The namespace itself stays, terminating: without a
// controller manager nothing finalizes it.)
func newNamespace(ctx context.Context, t *testing.T, client kubernetes.Interface) string {
	t.Helper()
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		// The test's context may be over; cleanup gets its own.
		ctx := context.WithoutCancel(ctx)
		// At once: a pod bound to a node is otherwise only marked for
		// deletion, waiting for a kubelet this cluster does not have, and
		// stays for the next tests' lists of every namespace to see.
		immediately := int64(0)
		if err := client.CoreV1().Pods(ns.Name).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &immediately}, metav1.ListOptions{}); err != nil {
			t.Errorf("delete pods of %s: %v", ns.Name, err)
		}
		if err := client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete namespace %s: %v", ns.Name, err)
		}
	})
	return ns.Name
}

// newPod returns a pod to create, labelled with gen. Nothing schedules it;
// it stays pending, and a delete removes it at once.
func newPod(name, gen string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{genLabel: gen}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:  "main",
			Image: "registry.invalid/none:latest",
		}}},
	}
}

// createPod creates newPod(name, "0") and returns it as stored.
func createPod(ctx context.Context, t *testing.T, client kubernetes.Interface, namespace, name string) *corev1.Pod {
	t.Helper()
	pod, err := client.CoreV1().Pods(namespace).Create(ctx, newPod(name, "0"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s/%s: %v", namespace, name, err)
	}
	return pod
}

// relabelPod sets the pod's gen label and returns the pod as stored.
func relabelPod(ctx context.Context, t *testing.T, client kubernetes.Interface, namespace, name, gen string) *corev1.Pod {
	t.Helper()
	patch := []byte(`{"metadata":{"labels":{"` + genLabel + `":"` + gen + `"}}}`)
	pod, err := client.CoreV1().Pods(namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patch pod %s/%s: %v", namespace, name, err)
	}
	return pod
}

// deletePod deletes the pod.
func deletePod(ctx context.Context, t *testing.T, client kubernetes.Interface, namespace, name string) {
	t.Helper()
	if err := client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod %s/%s: %v", namespace, name, err)
	}
}

// notifier is a wake-up signal: notify never blocks, and a waiter woken by
// it sees at least every change made before the notify.
type notifier chan struct{}

func newNotifier() notifier { return make(notifier, 1) }

func (n notifier) notify() {
	select {
	case n <- struct{}{}:
	default:
	}
}

// waitFor checks cond at once and after every notification until it holds;
// it returns false if ctx ends first.
func waitFor(ctx context.Context, changed notifier, cond func() bool) bool {
	for !cond() {
		select {
		case <-ctx.Done():
			return false
		case <-changed:
		}
	}
	return true
}

// startPodInformer starts a factory with opts and its pod informer, with a
// handler that notifies the returned notifier of every notification, and
// waits until it has synced. The factory shuts down when the test ends.
func startPodInformer(ctx context.Context, t *testing.T, opts informer.FactoryOptions) (*informer.Informer[*corev1.Pod], notifier) {
	t.Helper()
	factory, err := informer.NewFactory(restConfig, opts)
	if err != nil {
		t.Fatalf("NewFactory: %v", err)
	}
	t.Cleanup(factory.Shutdown)
	pods, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{})
	if err != nil {
		t.Fatalf("For: %v", err)
	}
	changed := newNotifier()
	if err := addNotifyingHandler(pods, changed.notify); err != nil {
		t.Fatalf("AddEventHandler: %v", err)
	}
	factory.Start(ctx)
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		t.Fatalf("WaitForCacheSync: %v", err)
	}
	return pods, changed
}

// addNotifyingHandler adds a handler to inf that calls notify on every
// notification.
func addNotifyingHandler[T informer.Object](inf *informer.Informer[T], notify func()) error {
	_, err := inf.AddEventHandler(informer.ResourceEventHandlerFuncs[T]{
		AddFunc:    func(T, bool) { notify() },
		UpdateFunc: func(_, _ T) { notify() },
		DeleteFunc: func(informer.DeletedObject[T]) { notify() },
	})
	return err
}

// runInformer runs inf until the test ends, then waits for Run to return.
func runInformer[T informer.Object](ctx context.Context, t *testing.T, inf *informer.Informer[T]) {
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.Run(runCtx)
	}()
	t.Cleanup(func() {
		stop()
		<-done
	})
}

// listPods returns the resource versions of a fresh LIST of the pods of
// namespace ("" for all).
func listPods(ctx context.Context, t *testing.T, client kubernetes.Interface, namespace string) resourceVersions {
	t.Helper()
	_, listed := listPodsWithVersions(ctx, t, client, namespace)
	return listed
}

// listPodsWithVersions returns a fresh LIST of the pods of namespace ("" for
// all) and their resource versions.
func listPodsWithVersions(ctx context.Context, t *testing.T, client kubernetes.Interface, namespace string) (*corev1.PodList, resourceVersions) {
	t.Helper()
	list, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	listed := resourceVersions{}
	for i := range list.Items {
		listed.set(&list.Items[i])
	}
	return list, listed
}

// expectConverged waits, at each notification, until the informer's cache
// of namespace equals want, and fails the test if ctx ends first.
func expectConverged(ctx context.Context, t *testing.T, pods *informer.Informer[*corev1.Pod], changed notifier, namespace string, want resourceVersions) {
	t.Helper()
	if !waitFor(ctx, changed, func() bool { return cmp.Equal(want, cachedVersions(pods, namespace)) }) {
		t.Fatalf("cache did not converge (-list +cache):\n%s", cmp.Diff(want, cachedVersions(pods, namespace)))
	}
}

// resourceVersions maps "namespace/name" to resourceVersion.
type resourceVersions map[string]string

func (rv resourceVersions) set(obj metav1.Object) {
	rv[obj.GetNamespace()+"/"+obj.GetName()] = obj.GetResourceVersion()
}

// cachedVersions returns the resource versions of the objects in inf's
// cache, of one namespace or, for "", all of them.
func cachedVersions[T informer.Object](inf *informer.Informer[T], namespace string) resourceVersions {
	objs, _ := inf.Lister().Namespace(namespace).List(nil)
	got := resourceVersions{}
	for _, obj := range objs {
		got.set(obj)
	}
	return got
}
