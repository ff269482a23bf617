package informer_test

// The code of docs/migrating-from-client-go.md, use 7 (a workqueue
// controller) and handing our informer to code written for client-go. See
// example_migration_test.go.

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubetyped/informer"
)

// Use 7: informer → rate-limited workqueue → reconcile from the lister.

// reconcileFunc does the controller's work for one pod; pod is nil once the
// pod is gone.
type reconcileFunc func(ctx context.Context, name cache.ObjectName, pod *corev1.Pod) error

type podControllerClientGo struct {
	queue     workqueue.TypedRateLimitingInterface[cache.ObjectName]
	pods      corev1listers.PodLister
	reconcile reconcileFunc
}

func newPodControllerClientGo(podInformer coreinformers.PodInformer, reconcile reconcileFunc) (*podControllerClientGo, error) {
	c := &podControllerClientGo{
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[cache.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[cache.ObjectName]{Name: "pods"}),
		pods:      podInformer.Lister(),
		reconcile: reconcile,
	}
	enqueue := func(obj interface{}) {
		name, err := cache.DeletionHandlingObjectToName(obj) // unwraps tombstones
		if err != nil {
			utilruntime.HandleError(err)
			return
		}
		c.queue.Add(name)
	}
	_, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, newObj interface{}) { enqueue(newObj) },
		DeleteFunc: enqueue,
	})
	return c, err
}

func (c *podControllerClientGo) processNextItem(ctx context.Context) bool {
	name, shutdown := c.queue.Get()
	if shutdown {
		return false
	}
	defer c.queue.Done(name)
	pod, err := c.pods.Pods(name.Namespace).Get(name.Name)
	if apierrors.IsNotFound(err) {
		pod, err = nil, nil
	}
	if err == nil {
		err = c.reconcile(ctx, name, pod)
	}
	if err != nil {
		c.queue.AddRateLimited(name)
		return true
	}
	c.queue.Forget(name)
	return true
}

type podController struct {
	queue     workqueue.TypedRateLimitingInterface[informer.ObjectName]
	pods      *informer.Lister[*corev1.Pod]
	reconcile reconcileFunc
}

func newPodController(pods *informer.Informer[*corev1.Pod], reconcile reconcileFunc) (*podController, error) {
	c := &podController{
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[informer.ObjectName](),
			workqueue.TypedRateLimitingQueueConfig[informer.ObjectName]{Name: "pods"}),
		pods:      pods.Lister(),
		reconcile: reconcile,
	}
	_, err := pods.AddEventHandler(informer.Enqueue[*corev1.Pod](c.queue))
	return c, err
}

func (c *podController) processNextItem(ctx context.Context) bool {
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
		err = c.reconcile(ctx, name, pod)
	}
	if err != nil {
		c.queue.AddRateLimited(name)
		return true
	}
	c.queue.Forget(name)
	return true
}

// Both controllers of use 7 reconcile the four pods of the initial list,
// then the deleted one.
func Example_migrateController() {
	srv := docsCluster()
	defer srv.Close()
	f, err := newDocsFactories(srv)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.stop()
	var lines []string // written by the Example's goroutine only
	reconcile := func(side string) reconcileFunc {
		return func(ctx context.Context, name cache.ObjectName, pod *corev1.Pod) error {
			if pod == nil {
				lines = append(lines, fmt.Sprintf("%s: %s is gone", side, name))
				return nil
			}
			lines = append(lines, fmt.Sprintf("%s: %s is %s", side, name, pod.Status.Phase))
			return nil
		}
	}
	theirs, err := newPodControllerClientGo(f.theirs.Core().V1().Pods(), reconcile("client-go"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer theirs.queue.ShutDown()
	pods, err := informer.For(f.ours, informer.InformerOptions[*corev1.Pod]{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ours, err := newPodController(pods, reconcile("ours"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ours.queue.ShutDown()
	if err := f.startAndSync(); err != nil {
		fmt.Println(err)
		return
	}
	printReconciled := func(n int) {
		for range n {
			theirs.processNextItem(f.ctx)
			ours.processNextItem(f.ctx)
		}
		slices.Sort(lines)
		for _, line := range lines {
			fmt.Println(line)
		}
		lines = nil
	}
	printReconciled(4)
	srv.Delete(podsResource, docsPod("default", "db-1", "db", "node-2"))
	printReconciled(1)
	// Output:
	// client-go: default/db-1 is Pending
	// client-go: default/web-1 is Pending
	// client-go: default/web-2 is Pending
	// client-go: shop/cart-1 is Pending
	// ours: default/db-1 is Pending
	// ours: default/web-1 is Pending
	// ours: default/web-2 is Pending
	// ours: shop/cart-1 is Pending
	// client-go: default/db-1 is gone
	// ours: default/db-1 is gone
}

func clientGoViews(pods *informer.Informer[*corev1.Pod], nodes *informer.Informer[*corev1.Node]) (cache.SharedIndexInformer, corev1listers.PodLister, corev1listers.NodeLister) {
	podInformer := informer.AsSharedIndexInformer(pods) // handlers get the *corev1.Pod values as interface{}
	podLister := corev1listers.NewPodLister(informer.AsSharedIndexInformer(pods).GetIndexer())
	nodeLister := corev1listers.NewNodeLister(informer.AsSharedIndexInformer(nodes).GetIndexer())
	return podInformer, podLister, nodeLister
}

// Handing our informer to code written for client-go: the client-go
// functions of uses 2, 4 and 6 run unchanged on our informers.
func Example_migrateAdapter() {
	srv := docsCluster()
	defer srv.Close()
	f, err := newDocsFactories(srv)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.stop()
	pods, err := nodeIndexedPods(f.ours)
	if err != nil {
		fmt.Println(err)
		return
	}
	nodes, err := informer.For(f.ours, informer.InformerOptions[*corev1.Node]{})
	if err != nil {
		fmt.Println(err)
		return
	}
	podInformer, podLister, nodeLister := clientGoViews(pods, nodes)

	lines := make(chan string, 10)
	if _, err := logPodChangesClientGo(podInformer, sendLines(lines)); err != nil {
		fmt.Println(err)
		return
	}
	if err := f.startAndSync(); err != nil {
		fmt.Println(err)
		return
	}
	receiveLines("handler", lines, 4)
	fmt.Println(describeWeb1ClientGo(podLister, nodeLister))
	onNode1, err := podsOnNodeClientGo(podInformer, "node-1")
	fmt.Println(podNames(onNode1), err)
	// Output:
	// handler: added default/db-1 (initial list: true)
	// handler: added default/web-1 (initial list: true)
	// handler: added default/web-2 (initial list: true)
	// handler: added shop/cart-1 (initial list: true)
	// web-1 runs on node-1; 3 pods in default; web-9 not found: true <nil>
	// [default/web-1 shop/cart-1] <nil>
}
