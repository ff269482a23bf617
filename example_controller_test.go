package informer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubetyped/informer"
)

// imageController is the classic controller shape: an informer feeds the names
// of changed pods into a rate-limited workqueue (informer.Enqueue), and
// workers reconcile each name against the informer's cache.
type imageController struct {
	pods  *informer.Lister[*corev1.Pod]
	queue workqueue.TypedRateLimitingInterface[informer.ObjectName]
	// reconcile brings the world in line with pod, which is nil once the pod
	// is deleted. pod is shared with the cache: it must not be modified. An
	// error retries the name later, with a growing delay.
	reconcile func(name informer.ObjectName, pod *corev1.Pod) error
}

// newImageController registers the controller's handler with pods.
func newImageController(pods *informer.Informer[*corev1.Pod], reconcile func(informer.ObjectName, *corev1.Pod) error) (*imageController, error) {
	c := &imageController{
		pods:      pods.Lister(),
		queue:     workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[informer.ObjectName]()),
		reconcile: reconcile,
	}
	if _, err := pods.AddEventHandler(informer.Enqueue[*corev1.Pod](c.queue)); err != nil {
		c.queue.ShutDown()
		return nil, err
	}
	return c, nil
}

// run processes the queue with workers goroutines until ctx is done, then
// shuts the queue down and waits for the workers.
func (c *imageController) run(ctx context.Context, workers int) {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for c.processNextItem() {
			}
		})
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
}

// processNextItem reconciles one name; it returns false once the queue is
// shut down. The workqueue never hands one name to two workers at once.
func (c *imageController) processNextItem() bool {
	name, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(name)
	pod, err := c.pods.Namespace(name.Namespace).Get(name.Name)
	if apierrors.IsNotFound(err) {
		pod, err = nil, nil
	}
	if err == nil {
		err = c.reconcile(name, pod)
	}
	if err != nil {
		c.queue.AddRateLimited(name)
		return true
	}
	c.queue.Forget(name) // reset the name's retry delay
	return true
}

// fakePodInformer returns a pod informer over a fake clientset, for every
// namespace. The list function copies the items out of the list.
func fakePodInformer(client informer.TypedClient[*corev1.PodList], clientset *fake.Clientset) (*informer.Informer[*corev1.Pod], error) {
	lw := informer.NewClientListerWatcher(client,
		func(l *corev1.PodList) ([]*corev1.Pod, error) { return informer.CopyListItems(l.Items), nil },
		// The fake clientset cannot stream lists.
		informer.ClientOptions{DisableWatchList: watchlist.DoesClientNotSupportWatchListSemantics(clientset)})
	return informer.NewInformer[*corev1.Pod](lw, informer.InformerOptions[*corev1.Pod]{Resource: corev1.SchemeGroupVersion.WithResource("pods")})
}

// watchOpened is a pod client that closes opened once a watch is open. A
// real API server replays the changes made after a list; the fake clientset
// only sends changes to watches already open.
type watchOpened struct {
	informer.TypedClient[*corev1.PodList]
	once   sync.Once
	opened chan struct{}
}

func (w *watchOpened) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	wi, err := w.TypedClient.Watch(ctx, opts)
	if err == nil {
		w.once.Do(func() { close(w.opened) })
	}
	return wi, err
}

func podWithImage(namespace, name, image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: image}}},
	}
}

// setImage changes the image of a pod through the clientset.
func setImage(ctx context.Context, clientset *fake.Clientset, namespace, name, image string) error {
	pod, err := clientset.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pod = pod.DeepCopy()
	pod.Spec.Containers[0].Image = image
	_, err = clientset.CoreV1().Pods(namespace).Update(ctx, pod, metav1.UpdateOptions{})
	return err
}

// A controller: a typed informer feeds a rate-limited workqueue through
// Enqueue, and two workers reconcile the queued names against the lister.
// Here each change is reconciled before the next is made, so the output is
// in a fixed order.
func ExampleEnqueue() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clientset := fake.NewClientset(podWithImage("default", "web", "nginx:1.26"))
	client := &watchOpened{TypedClient: clientset.CoreV1().Pods(""), opened: make(chan struct{})}
	pods, err := fakePodInformer(client, clientset)
	if err != nil {
		fmt.Println(err)
		return
	}

	reconciled := make(chan struct{})
	controller, err := newImageController(pods, func(name informer.ObjectName, pod *corev1.Pod) error {
		if pod == nil {
			fmt.Println("deleted", name)
		} else {
			fmt.Println("reconcile", name, "image", pod.Spec.Containers[0].Image)
		}
		select {
		case reconciled <- struct{}{}:
		case <-ctx.Done():
		}
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() { pods.Run(ctx) })
	wg.Go(func() { controller.run(ctx, 2) })

	<-reconciled // the listed pod
	<-client.opened
	if err := setImage(ctx, clientset, "default", "web", "nginx:1.27"); err != nil {
		fmt.Println(err)
	}
	<-reconciled
	if err := clientset.CoreV1().Pods("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		fmt.Println(err)
	}
	<-reconciled
	cancel()
	wg.Wait()
	// Output:
	// reconcile default/web image nginx:1.26
	// reconcile default/web image nginx:1.27
	// deleted default/web
}

func TestExampleControllerReconcilesTheFinalState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		clientset := fake.NewClientset(
			podWithImage("default", "a", "v1"), podWithImage("default", "b", "v1"), podWithImage("kube-system", "c", "v1"))
		pods, err := fakePodInformer(clientset.CoreV1().Pods(""), clientset)
		if err != nil {
			t.Fatal(err)
		}

		// outcomes records, per name, each reconcile's result and how often
		// the name had been requeued by then. flaky fails once.
		var mu sync.Mutex
		outcomes := map[string][]string{}
		var controller *imageController
		controller, err = newImageController(pods, func(name informer.ObjectName, pod *corev1.Pod) error {
			mu.Lock()
			defer mu.Unlock()
			outcome := "deleted"
			if pod != nil {
				outcome = pod.Spec.Containers[0].Image
			}
			var err error
			if name.Name == "flaky" && len(outcomes[name.String()]) == 0 {
				outcome, err = "error", errors.New("transient failure")
			}
			outcomes[name.String()] = append(outcomes[name.String()],
				fmt.Sprintf("%s (requeues %d)", outcome, controller.queue.NumRequeues(name)))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		wg.Go(func() { pods.Run(ctx) })
		wg.Go(func() { controller.run(ctx, 3) })
		synctest.Wait() // listed, reconciled, watching

		// One change at a time, each reconciled before the next, so that
		// every change has its own reconcile.
		steps := []func() error{
			func() error {
				_, err := clientset.CoreV1().Pods("default").Create(ctx, podWithImage("default", "flaky", "v1"), metav1.CreateOptions{})
				return err
			},
			func() error { return setImage(ctx, clientset, "default", "a", "v2") },
			func() error { return clientset.CoreV1().Pods("default").Delete(ctx, "b", metav1.DeleteOptions{}) },
			func() error {
				_, err := clientset.CoreV1().Pods("kube-system").Create(ctx, podWithImage("kube-system", "d", "v1"), metav1.CreateOptions{})
				return err
			},
			func() error { return setImage(ctx, clientset, "kube-system", "c", "v3") },
		}
		for _, step := range steps {
			if err := step(); err != nil {
				t.Fatal(err)
			}
			// The bubble's clock moves past the retry delays only while
			// every goroutine waits.
			time.Sleep(time.Minute)
			synctest.Wait()
		}

		mu.Lock()
		got := outcomes
		mu.Unlock()
		want := map[string][]string{
			"default/a":     {"v1 (requeues 0)", "v2 (requeues 0)"},
			"default/b":     {"v1 (requeues 0)", "deleted (requeues 0)"},
			"kube-system/c": {"v1 (requeues 0)", "v3 (requeues 0)"},
			"default/flaky": {"error (requeues 0)", "v1 (requeues 1)"},
			"kube-system/d": {"v1 (requeues 0)"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("reconciles (-want +got):\n%s", diff)
		}
		flaky := informer.ObjectName{Namespace: "default", Name: "flaky"}
		if n := controller.queue.NumRequeues(flaky); n != 0 {
			t.Errorf("NumRequeues(flaky) = %d after its success, want 0 (forgotten)", n)
		}
		if n := controller.queue.Len(); n != 0 {
			t.Errorf("%d names left in the queue", n)
		}
		cancel()
		wg.Wait()
	})
}
