package informer_test

// The code of docs/migrating-from-client-go.md, uses 1–5: each client-go
// function is followed by its equivalent here, and an Example runs both
// against the same fake API server. docs_test.go checks that every code block
// of the document appears in one of these files.

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/informertest"
)

// Use 1: a shared informer factory and a pod informer.

func webPodsClientGo(ctx context.Context, clientset kubernetes.Interface) ([]*corev1.Pod, error) {
	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactory(clientset, 0)
	defer factory.Shutdown() // waits for the informers, which stop when ctx ends
	defer cancel()

	podInformer := factory.Core().V1().Pods()
	podInformer.Informer() // creates the informer, so that Start runs it
	factory.StartWithContext(ctx)
	if err := factory.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		return nil, err
	}
	return podInformer.Lister().Pods("default").List(labels.SelectorFromSet(labels.Set{"app": "web"}))
}

func webPods(ctx context.Context, config *rest.Config) ([]*corev1.Pod, error) {
	factory, err := informer.NewFactory(config, informer.FactoryOptions{})
	if err != nil {
		return nil, err
	}
	defer factory.Shutdown() // stops the informers, then waits for them

	pods, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{}) // creates the informer, so that Start runs it
	if err != nil {
		return nil, err
	}
	factory.Start(ctx)
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		return nil, err
	}
	return pods.Lister().Namespace("default").List(labels.SelectorFromSet(labels.Set{"app": "web"}))
}

// Both sides of use 1 list the same pods from the same API server.
func Example_migrateFactory() {
	srv := docsCluster()
	defer srv.Close()
	clientset := kubernetes.NewForConfigOrDie(srv.Config())
	ctx := context.Background()

	theirs, err := webPodsClientGo(ctx, clientset)
	fmt.Println("client-go:", podNames(theirs), err)
	ours, err := webPods(ctx, srv.Config())
	fmt.Println("ours:     ", podNames(ours), err)
	// Output:
	// client-go: [default/web-1 default/web-2] <nil>
	// ours:      [default/web-1 default/web-2] <nil>
}

// Use 2: event handlers.

func logPodChangesClientGo(podInformer cache.SharedIndexInformer, logf func(format string, args ...any)) (cache.ResourceEventHandlerRegistration, error) {
	return podInformer.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj interface{}, isInInitialList bool) {
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				return
			}
			logf("added %s/%s (initial list: %t)", pod.Namespace, pod.Name, isInInitialList)
		},
		UpdateFunc: func(oldObj, newObj interface{}) {
			oldPod, ok := oldObj.(*corev1.Pod)
			if !ok {
				return
			}
			pod, ok := newObj.(*corev1.Pod)
			if !ok {
				return
			}
			logf("%s/%s: %s -> %s", pod.Namespace, pod.Name, oldPod.Status.Phase, pod.Status.Phase)
		},
	})
}

func logPodChanges(pods *informer.Informer[*corev1.Pod], logf func(format string, args ...any)) (*informer.Registration, error) {
	return pods.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc: func(pod *corev1.Pod, isInInitialList bool) {
			logf("added %s/%s (initial list: %t)", pod.Namespace, pod.Name, isInInitialList)
		},
		UpdateFunc: func(oldPod, pod *corev1.Pod) {
			logf("%s/%s: %s -> %s", pod.Namespace, pod.Name, oldPod.Status.Phase, pod.Status.Phase)
		},
	})
}

// Both handlers of use 2 see the same initial adds and the same update.
func Example_migrateHandlers() {
	srv := docsCluster()
	defer srv.Close()
	f, err := newDocsFactories(srv)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.stop()
	pods, err := informer.For(f.ours, informer.InformerOptions[*corev1.Pod]{})
	if err != nil {
		fmt.Println(err)
		return
	}

	theirLines, ourLines := make(chan string, 10), make(chan string, 10)
	if _, err := logPodChangesClientGo(f.theirs.Core().V1().Pods().Informer(), sendLines(theirLines)); err != nil {
		fmt.Println(err)
		return
	}
	if _, err := logPodChanges(pods, sendLines(ourLines)); err != nil {
		fmt.Println(err)
		return
	}
	f.start()
	// Both informers stream their initial list over their watch (the
	// default of both), so once the adds are in, a change reaches both.
	receiveLines("client-go", theirLines, 4)
	receiveLines("ours", ourLines, 4)
	running := docsPod("default", "web-1", "web", "node-1")
	running.Status.Phase = corev1.PodRunning
	srv.Update(podsResource, running)
	receiveLines("client-go", theirLines, 1)
	receiveLines("ours", ourLines, 1)
	// Output:
	// client-go: added default/db-1 (initial list: true)
	// client-go: added default/web-1 (initial list: true)
	// client-go: added default/web-2 (initial list: true)
	// client-go: added shop/cart-1 (initial list: true)
	// ours: added default/db-1 (initial list: true)
	// ours: added default/web-1 (initial list: true)
	// ours: added default/web-2 (initial list: true)
	// ours: added shop/cart-1 (initial list: true)
	// client-go: default/web-1: Pending -> Running
	// ours: default/web-1: Pending -> Running
}

// sendLines returns a logf that sends each line to lines.
func sendLines(lines chan<- string) func(format string, args ...any) {
	return func(format string, args ...any) { lines <- fmt.Sprintf(format, args...) }
}

// receiveLines prints the next n lines of lines, sorted, prefixed with side.
// They are sorted because client-go delivers the adds of a streamed initial
// list in no particular order.
func receiveLines(side string, lines <-chan string, n int) {
	batch := make([]string, n)
	for i := range batch {
		batch[i] = <-lines
	}
	slices.Sort(batch)
	for _, line := range batch {
		fmt.Println(side+":", line)
	}
}

// Use 3: deletions and tombstones.

func onPodDeleteClientGo(obj interface{}) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		tombstone, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			utilruntime.HandleError(fmt.Errorf("unexpected object of type %T", obj))
			return
		}
		pod, ok = tombstone.Obj.(*corev1.Pod)
		if !ok {
			utilruntime.HandleError(fmt.Errorf("tombstone %s holds an object of type %T", tombstone.Key, tombstone.Obj))
			return
		}
		fmt.Printf("%s/%s deleted while the watch was down; last seen at %s\n", pod.Namespace, pod.Name, pod.ResourceVersion)
		return
	}
	fmt.Printf("%s/%s deleted at %s\n", pod.Namespace, pod.Name, pod.ResourceVersion)
}

func onPodDelete(d informer.DeletedObject[*corev1.Pod]) {
	if d.FinalStateUnknown {
		fmt.Printf("%s deleted while the watch was down; last seen at %s\n", d.Name, d.Object.ResourceVersion)
		return
	}
	fmt.Printf("%s deleted at %s\n", d.Name, d.Object.ResourceVersion)
}

// The two shapes of a deletion, handed to the handlers of use 3 directly.
func Example_migrateTombstones() {
	pod := docsPod("default", "web-1", "web", "node-1")
	pod.ResourceVersion = "42"

	onPodDeleteClientGo(pod)
	onPodDeleteClientGo(cache.DeletedFinalStateUnknown{Key: "default/web-1", Obj: pod})

	onPodDelete(informer.DeletedObject[*corev1.Pod]{Name: informer.NameOf(pod), Object: pod})
	onPodDelete(informer.DeletedObject[*corev1.Pod]{Name: informer.NameOf(pod), Object: pod, FinalStateUnknown: true})
	// Output:
	// default/web-1 deleted at 42
	// default/web-1 deleted while the watch was down; last seen at 42
	// default/web-1 deleted at 42
	// default/web-1 deleted while the watch was down; last seen at 42
}

// A deletion the watch missed: the relist after "410 Gone" no longer holds
// db-1, so the handler gets its last cached state with FinalStateUnknown.
func ExampleDeletedObject() {
	lw := informertest.NewFakeListerWatcher[*corev1.Pod]()
	lw.SetDisableWatchList(true) // list, then watch
	web, db := docsPod("default", "web-1", "web", "node-1"), docsPod("default", "db-1", "db", "node-2")
	web.ResourceVersion, db.ResourceVersion = "8", "9"
	lw.SetList("10", web, db)
	pods, err := informer.NewInformer(lw, informer.InformerOptions[*corev1.Pod]{})
	if err != nil {
		fmt.Println(err)
		return
	}
	deleted := make(chan struct{})
	_, err = pods.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		DeleteFunc: func(d informer.DeletedObject[*corev1.Pod]) {
			onPodDelete(d)
			close(deleted)
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		pods.Run(ctx)
	}()

	cache.WaitForCacheSync(ctx.Done(), pods.HasSynced)

	lw.SetList("20", web) // db-1 was deleted while nobody watched
	_ = lw.FailWatch(ctx, apierrors.NewResourceExpired("too old resource version"))
	<-deleted
	cancel()
	<-stopped
	// Output:
	// default/db-1 deleted while the watch was down; last seen at 9
}

// docsCluster starts the fake API server the migration examples run
// against: four pods in two namespaces, two nodes, a widget (a custom
// resource) and a deployment.
func docsCluster() *fakeAPIServer {
	srv, err := startFakeAPIServer(addWidgetTypes)
	if err != nil {
		panic(err)
	}
	srv.Serve(podsResource, podKind, true)
	srv.Serve(nodesResource, corev1.SchemeGroupVersion.WithKind("Node"), true)
	srv.Serve(widgetsResource, widgetKind, false)
	srv.Serve(deploymentsResource, deploymentsResource.GroupVersion().WithKind("Deployment"), true)
	for _, p := range []struct{ namespace, name, app, node string }{
		{"default", "web-1", "web", "node-1"},
		{"default", "web-2", "web", "node-2"},
		{"default", "db-1", "db", "node-2"},
		{"shop", "cart-1", "cart", "node-1"},
	} {
		srv.Create(podsResource, docsPod(p.namespace, p.name, p.app, p.node))
	}
	for _, name := range []string{"node-1", "node-2"} {
		srv.Create(nodesResource, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	srv.Create(widgetsResource, newWidget("default", "small", 1))
	srv.Create(deploymentsResource, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "api", UID: "uid-of-api"}})
	return srv
}

// docsFactories are a client-go factory and one of ours for the same API
// server, both with their defaults, run with one context.
type docsFactories struct {
	theirs informers.SharedInformerFactory
	ours   *informer.Factory
	ctx    context.Context
	cancel context.CancelFunc
}

func newDocsFactories(srv *fakeAPIServer) (*docsFactories, error) {
	ours, err := informer.NewFactory(srv.Config(), informer.FactoryOptions{})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &docsFactories{
		theirs: informers.NewSharedInformerFactory(kubernetes.NewForConfigOrDie(srv.Config()), 0),
		ours:   ours, ctx: ctx, cancel: cancel,
	}, nil
}

// start starts the informers created so far in both factories.
func (f *docsFactories) start() {
	f.theirs.StartWithContext(f.ctx)
	f.ours.Start(f.ctx)
}

// startAndSync starts both factories and waits until every informer synced.
func (f *docsFactories) startAndSync() error {
	f.start()
	if err := f.theirs.WaitForCacheSyncWithContext(f.ctx).AsError(); err != nil {
		return err
	}
	_, err := f.ours.WaitForCacheSync(f.ctx)
	return err
}

// stop stops both factories and waits for their goroutines.
func (f *docsFactories) stop() {
	f.cancel()
	f.theirs.Shutdown()
	f.ours.Shutdown()
}

// docsPod returns a pending pod as kubectl apply leaves it: with the
// last-applied annotation and managed fields.
func docsPod(namespace, name, app, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: namespace, Name: name, Labels: map[string]string{"app": app},
			Annotations:   map[string]string{lastApplied: "{}"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}},
		},
		Spec:   corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
}

var nodesResource = corev1.SchemeGroupVersion.WithResource("nodes")

// lastApplied is the annotation kubectl apply writes.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"
