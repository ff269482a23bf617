package informer_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/informertest"
)

// The examples of docs/operations.md: reading one's own writes, releasing
// an informer, and checking the cache against the server.

// readBack returns the pod a write returned as the cache holds it: that
// state or a newer one, never an older one, waiting (bounded by ctx) until
// the cache has applied the write.
func readBack(ctx context.Context, pods *informer.Informer[*corev1.Pod], written *corev1.Pod) (*corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return pods.Lister().GetAtLeast(ctx, informer.KeyOf(written), written.ResourceVersion)
}

// After a write, the plain Lister.Get may return the state before it, until
// the watch delivers the write; GetAtLeast waits for the write's resource
// version. The in-process fake API server's Update stands in for a client's
// update, which returns the stored object with its new resource version.
func ExampleLister_GetAtLeast() {
	srv, err := startFakeAPIServer()
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	srv.Serve(podsResource, podKind, true)
	srv.Create(podsResource, examplePod("default", "web-1", "web", ""))

	factory, err := informer.NewFactory(srv.Config(), informer.FactoryOptions{})
	if err != nil {
		panic(err)
	}
	defer factory.Shutdown()
	pods, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	factory.Start(ctx)
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		panic(err)
	}

	written := srv.Update(podsResource, examplePod("default", "web-1", "web-v2", "")).(*corev1.Pod)
	pod, err := readBack(ctx, pods, written)
	if err != nil {
		panic(err)
	}
	fmt.Println(pod.Name, pod.Labels["app"])
	// Output:
	// web-1 web-v2
}

// bookmarkHandler is told of the informer's progress: when BookmarkFunc is
// called, the handler has been given every change up to that resource
// version.
func bookmarkHandler(pods *informer.Informer[*corev1.Pod], progress chan<- string) (*informer.Registration, error) {
	return pods.AddEventHandlerWithOptions(informer.ResourceEventHandlerFuncs[*corev1.Pod]{}, informer.HandlerOptions{
		BookmarkFunc: func(resourceVersion string) { progress <- resourceVersion },
	})
}

// A bookmark moves the cache's resource version on when nothing of the
// informer's resource changed, so that a wait for a write to another
// resource ends; a handler with a BookmarkFunc hears of it in order with
// its notifications.
func ExampleHandlerOptions_bookmarkFunc() {
	lw := informertest.NewFakeListerWatcher[*corev1.Pod]()
	lw.SetList("10", examplePod("default", "web-1", "web", "10"))
	pods, err := informer.NewInformer(lw, informer.InformerOptions[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}
	progress := make(chan string, 1)
	if _, err := bookmarkHandler(pods, progress); err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		pods.Run(ctx)
	}()

	// A write to a config map returned resource version 15; the pod
	// informer reaches it with the server's next bookmark.
	waited := make(chan error)
	go func() { waited <- pods.WaitForResourceVersion(ctx, "15") }()
	if err := lw.Bookmark(ctx, "16"); err != nil {
		panic(err)
	}
	fmt.Println("wait:", <-waited)
	fmt.Println("bookmark:", <-progress)
	cancel()
	<-stopped
	// Output:
	// wait: <nil>
	// bookmark: 16
}

// productionFactory returns a factory whose informers wait quietly for a
// resource that goes away (a deleted CRD) and check their caches against
// the server every ten minutes, relisting when they differ.
func productionFactory(config *rest.Config) (*informer.Factory, error) {
	return informer.NewFactory(config, informer.FactoryOptions{
		MissingResourceRetry: time.Minute,
		ConsistencyCheck:     informer.ConsistencyCheckOptions{Period: 10 * time.Minute, Repair: true},
	})
}

// stopWatchingWidgets releases the factory's widget informer, for example
// when its CRD was uninstalled: its goroutines have exited and its handlers
// are told nothing more once Release returns. A later For starts over.
func stopWatchingWidgets(factory *informer.Factory) error {
	widgets, err := informer.For(factory, informer.InformerOptions[*Widget]{})
	if err != nil {
		return err
	}
	return informer.Release(factory, widgets)
}

// Release stops one informer of a running factory; the others run on.
func ExampleRelease() {
	config, stop := exampleCluster()
	defer stop()
	scheme := runtime.NewScheme()
	if err := addWidgetTypes(scheme); err != nil {
		panic(err)
	}
	factory, err := informer.NewFactory(config, informer.FactoryOptions{Scheme: scheme})
	if err != nil {
		panic(err)
	}
	defer factory.Shutdown()
	widgets, err := informer.For(factory, informer.InformerOptions[*Widget]{})
	if err != nil {
		panic(err)
	}
	pods, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	factory.Start(ctx)
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		panic(err)
	}
	if err := stopWatchingWidgets(factory); err != nil {
		panic(err)
	}
	fmt.Println("widgets stopped:", widgets.IsStopped(), "pods stopped:", pods.IsStopped())
	again, err := informer.For(factory, informer.InformerOptions[*Widget]{})
	if err != nil {
		panic(err)
	}
	fmt.Println("a new widget informer:", again != widgets)
	// Output:
	// widgets stopped: true pods stopped: false
	// a new widget informer: true
}

// reportDifferences checks the cache against the server and prints what
// differs.
func reportDifferences(ctx context.Context, pods *informer.Informer[*corev1.Pod]) error {
	report, err := pods.CheckConsistency(ctx)
	if err != nil {
		return err
	}
	fmt.Println("at", report.ResourceVersion, "checked", report.Checked, "consistent:", report.Consistent())
	fmt.Println("missing:", report.Missing, "extra:", report.Extra, "stale:", report.Stale)
	return nil
}

// A consistency check finds the events the informer never received: here
// the fake server deletes db-1 and updates web-1 without telling the
// watch.
func ExampleInformer_CheckConsistency() {
	lw := informertest.NewFakeListerWatcher[*corev1.Pod]()
	lw.SetList("10", examplePod("default", "web-1", "web", "8"), examplePod("default", "db-1", "db", "9"))
	pods, err := informer.NewInformer(lw, informer.InformerOptions[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		pods.Run(ctx)
	}()
	if err := pods.WaitForResourceVersion(ctx, "10"); err != nil {
		panic(err)
	}
	lw.SetList("12", examplePod("default", "web-1", "web", "12"))
	if err = reportDifferences(ctx, pods); err != nil {
		panic(err)
	}
	cancel()
	<-stopped
	// Output:
	// at 10 checked 2 consistent: false
	// missing: [] extra: [default/db-1] stale: [default/web-1]
}

// printCost prints what the informer's cache keeps on the heap, its
// largest fields, and the first field it suggests dropping.
func printCost(ctx context.Context, pods *informer.Informer[*corev1.Pod]) error {
	report, err := pods.Cost(ctx)
	if err != nil {
		return err
	}
	fmt.Printf("%d pods; the largest parts, largest first:\n", report.Objects)
	for _, row := range report.Rows[:4] {
		fmt.Printf("  %s\n", row.Path)
	}
	if len(report.Suggestions) > 0 {
		fmt.Println("drop first:", report.Suggestions[0].Path)
	}
	return nil
}

// Cost walks the cache and reports its retained heap by field, counting
// what the objects share once; its suggestions put the fields only the
// API server reads, such as metadata.managedFields, first. (The example
// prints no shares: they depend on how the allocator charges small
// allocations, which differs under the race detector.)
func ExampleInformer_Cost() {
	lw := informertest.NewFakeListerWatcher[*corev1.Pod]()
	var pods []*corev1.Pod
	for i := range 100 {
		pod := examplePod("default", fmt.Sprint("web-", i), "web", "10")
		pod.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:conditions":{},"f:containerStatuses":{},"f:phase":{},"f:podIP":{}}}`)}}}
		pods = append(pods, pod)
	}
	lw.SetList("10", pods...)
	inf, err := informer.NewInformer(lw, informer.InformerOptions[*corev1.Pod]{})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		inf.Run(ctx)
	}()
	defer func() {
		cancel()
		<-stopped
	}()
	<-inf.HasSyncedChecker().Done()
	if err := printCost(ctx, inf); err != nil {
		panic(err)
	}
	// Output:
	// 100 pods; the largest parts, largest first:
	//   (objects)
	//   metadata.labels
	//   metadata.managedFields
	//   (store) entries
	// drop first: metadata.managedFields
}
