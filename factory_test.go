package informer_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer"
)

var (
	podType      = reflect.TypeFor[*corev1.Pod]()
	nodeType     = reflect.TypeFor[*corev1.Node]()
	widgetType   = reflect.TypeFor[*Widget]()
	metadataType = reflect.TypeFor[*metav1.PartialObjectMetadata]()
	unstructType = reflect.TypeFor[*unstructured.Unstructured]()
)

func newFactory(t *testing.T, config *rest.Config, opts informer.FactoryOptions) *informer.Factory {
	t.Helper()
	f, err := informer.NewFactory(config, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Shutdown)
	return f
}

// offline is a config for tests that make no request.
var offline = &rest.Config{Host: "127.0.0.1:1"}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func TestFactoryHasOneInformerPerType(t *testing.T) {
	f := newFactory(t, offline, informer.FactoryOptions{Scheme: widgetScheme(t)})
	pods := must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{}))
	podMeta := must[*informer.Informer[*metav1.PartialObjectMetadata]](t)(informer.For(f, informer.InformerOptions[*metav1.PartialObjectMetadata]{Resource: podsResource}))
	widgets := must[*informer.Informer[*Widget]](t)(informer.For(f, informer.InformerOptions[*Widget]{}))
	widgetsU := must[*informer.Informer[*unstructured.Unstructured]](t)(informer.For(f, informer.InformerOptions[*unstructured.Unstructured]{Resource: widgetsResource}))
	widgetMeta := must[*informer.Informer[*metav1.PartialObjectMetadata]](t)(informer.For(f, informer.InformerOptions[*metav1.PartialObjectMetadata]{Resource: widgetsResource}))

	byName := map[string]informer.IndexFunc[*corev1.Pod]{"node": func(pod *corev1.Pod) ([]string, error) { return []string{pod.Spec.NodeName}, nil }}
	if got := must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{Indexers: byName})); got != pods {
		t.Error("For[*corev1.Pod] returned a second informer")
	}
	if _, ok := pods.Cache().GetIndexers()["node"]; !ok {
		t.Error("Indexers on a later call did not add the index")
	}
	if got := must[*informer.Informer[*metav1.PartialObjectMetadata]](t)(informer.For(f, informer.InformerOptions[*metav1.PartialObjectMetadata]{Resource: podsResource})); got != podMeta {
		t.Error("For[*metav1.PartialObjectMetadata](pods) returned a second informer")
	}
	if got := must[*informer.Informer[*Widget]](t)(informer.For(f, informer.InformerOptions[*Widget]{})); got != widgets {
		t.Error("For[*Widget] returned a second informer")
	}
	if got := must[*informer.Informer[*unstructured.Unstructured]](t)(informer.For(f, informer.InformerOptions[*unstructured.Unstructured]{Resource: widgetsResource})); got != widgetsU {
		t.Error("For[*unstructured.Unstructured](widgets) returned a second informer")
	}
	if podMeta == widgetMeta {
		t.Error("two resources share one metadata informer")
	}
}

func TestFactoryRejectsAtCreation(t *testing.T) {
	f := newFactory(t, offline, informer.FactoryOptions{})
	stopped := newFactory(t, offline, informer.FactoryOptions{})
	stopped.Shutdown()
	for _, tc := range []struct {
		name string
		new  func() error
		want string
	}{{
		name: "type not in scheme",
		new:  func() error { _, err := informer.For(f, informer.InformerOptions[*Widget]{}); return err },
		want: "informer for *informer_test.Widget: list/watch *informer_test.Widget: the type is not registered in the scheme (for a CRD type, register it in a runtime.Scheme with its list type and pass that scheme)",
	}, {
		name: "metadata through For",
		new: func() error {
			_, err := informer.For(f, informer.InformerOptions[*metav1.PartialObjectMetadata]{})
			return err
		},
		want: "informer for *v1.PartialObjectMetadata: InformerOptions.Resource is required for *v1.PartialObjectMetadata",
	}, {
		name: "typed with the resource of another group",
		new: func() error {
			_, err := informer.For(f, informer.InformerOptions[*corev1.Pod]{Resource: widgetsResource})
			return err
		},
		want: "informer for *v1.Pod: list/watch *v1.Pod: the resource example.com/v1/widgets is not of the group and version of the kind /v1, Kind=Pod",
	}, {
		name: "another resource for an existing typed informer",
		new: func() error {
			if _, err := informer.For(f, informer.InformerOptions[*corev1.Pod]{}); err != nil {
				return err
			}
			_, err := informer.For(f, informer.InformerOptions[*corev1.Pod]{Resource: corev1.SchemeGroupVersion.WithResource("pods2")})
			return err
		},
		want: "informer for *v1.Pod v1/pods already exists: a *v1.Pod informer of v1/pods2 needs a factory of its own",
	}, {
		name: "creation options on an existing informer",
		new: func() error {
			if _, err := informer.For(f, informer.InformerOptions[*corev1.Node]{}); err != nil {
				return err
			}
			_, err := informer.For(f, informer.InformerOptions[*corev1.Node]{ResyncPeriod: new(time.Minute), ClusterScoped: true})
			return err
		},
		want: "informer for *v1.Node v1/nodes already exists: InformerOptions.ClusterScoped and InformerOptions.ResyncPeriod apply only when the informer is created",
	}, {
		name: "one creation option on an existing informer",
		new: func() error {
			_, err := informer.For(f, informer.InformerOptions[*corev1.Node]{ResyncPeriod: new(time.Minute)})
			return err
		},
		want: "informer for *v1.Node v1/nodes already exists: InformerOptions.ResyncPeriod applies only when the informer is created",
	}, {
		name: "after shutdown",
		new:  func() error { _, err := informer.For(stopped, informer.InformerOptions[*corev1.Pod]{}); return err },
		want: "informer for *v1.Pod: the factory is shut down",
	}, {
		name: "nil config",
		new:  func() error { _, err := informer.NewFactory(nil, informer.FactoryOptions{}); return err },
		want: "informer factory: rest config is nil",
	}, {
		name: "bad content type",
		new: func() error {
			_, err := informer.NewFactory(offline, informer.FactoryOptions{ContentType: "text/plain"})
			return err
		},
		want: `informer factory: unsupported content type "text/plain"`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.new()
			if err == nil {
				t.Fatal("no error")
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func withManagedFields[T runtime.Object](obj T) T {
	m := any(obj).(metav1.Object)
	m.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}})
	return obj
}

func sortedByName[T metav1.Object](items []T) []T {
	sort.Slice(items, func(i, j int) bool { return items[i].GetName() < items[j].GetName() })
	return items
}

// exchange is a request and the kind of answer it got.
type exchange struct {
	Path, Accept string
	Code         int
	ContentType  string
}

func TestFactoryServesTypedMetadataAndUnstructuredInformers(t *testing.T) {
	const (
		pods          = "/api/v1/namespaces/a/pods"
		widgets       = "/apis/example.com/v1/namespaces/a/widgets"
		json          = "application/json"
		protobuf      = "application/vnd.kubernetes.protobuf"
		protobufWatch = "application/vnd.kubernetes.protobuf;stream=watch"
	)
	streamingExchanges := map[exchange]bool{
		{pods, protobufAccept, 200, protobufWatch}: true,
		{pods, metadataAccept, 200, protobufWatch}: true,
		{widgets, json, 200, json}:                 true,
	}
	t.Run("streaming list", func(t *testing.T) {
		testFactoryInformers(t, false, streamingExchanges)
	})
	t.Run("list and watch", func(t *testing.T) {
		testFactoryInformers(t, true, map[exchange]bool{
			// The refused streaming lists.
			{pods, protobufAccept, 422, json}: true,
			{pods, metadataAccept, 422, json}: true,
			{widgets, json, 422, json}:        true,
			// Lists, then watches.
			{pods, protobufAccept, 200, protobuf}:      true,
			{pods, metadataListAccept, 200, protobuf}:  true,
			{pods, protobufAccept, 200, protobufWatch}: true,
			{pods, metadataAccept, 200, protobufWatch}: true,
			{widgets, json, 200, json}:                 true,
		})
	})
}

// testFactoryInformers runs a typed and a metadata-only pod informer and a
// typed and an unstructured widget informer in a namespaced factory with
// selectors and a transform, and checks their caches and the requests
// (which must be wantExchanges).
func testFactoryInformers(t *testing.T, rejectStreamingLists bool, wantExchanges map[exchange]bool) {
	srv := newFakeAPIServer(t, addWidgetTypes)
	if rejectStreamingLists {
		srv.RejectStreamingLists()
	}
	srv.Serve(podsResource, podKind, true)
	srv.Serve(widgetsResource, widgetKind, false)
	web1 := srv.Create(podsResource, withManagedFields(informer.NewPod("a", "web-1", "", informer.PodLabels(map[string]string{"app": "web"}), informer.PodNode("node-1")))).(*corev1.Pod)
	srv.Create(podsResource, informer.NewPod("a", "db-1", "", informer.PodLabels(map[string]string{"app": "db"}), informer.PodNode("node-1")))
	srv.Create(podsResource, informer.NewPod("a", "web-skip", "", informer.PodLabels(map[string]string{"app": "web"}), informer.PodNode("node-1")))
	srv.Create(podsResource, informer.NewPod("b", "web-2", "", informer.PodLabels(map[string]string{"app": "web"}), informer.PodNode("node-1")))
	small := srv.Create(widgetsResource, withManagedFields(newWidget("a", "small", 1))).(*Widget)
	srv.Create(widgetsResource, newWidget("b", "large", 9))
	checkGoroutines := informer.ExpectNoGoroutineLeak(t)

	f := newFactory(t, srv.Config(), informer.FactoryOptions{
		Namespace: "a", TweakListOptions: selectWeb, Scheme: widgetScheme(t),
		Transform: informer.StripManagedFields[metav1.Object], Name: "test",
	})
	pods := must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{
		Indexers: map[string]informer.IndexFunc[*corev1.Pod]{informer.NamespaceIndex: informer.MetaNamespaceIndexFunc[*corev1.Pod]},
	}))
	podMeta := must[*informer.Informer[*metav1.PartialObjectMetadata]](t)(informer.For(f, informer.InformerOptions[*metav1.PartialObjectMetadata]{Resource: podsResource}))
	widgets := must[*informer.Informer[*Widget]](t)(informer.For(f, informer.InformerOptions[*Widget]{}))
	widgetsU := must[*informer.Informer[*unstructured.Unstructured]](t)(informer.For(f, informer.InformerOptions[*unstructured.Unstructured]{Resource: widgetsResource}))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.Start(ctx)
	f.Start(ctx) // a second Start starts nothing twice
	synced, err := f.WaitForCacheSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantSynced := map[informer.InformerKey]bool{
		{Type: podType, Resource: podsResource}:         true,
		{Type: metadataType, Resource: podsResource}:    true,
		{Type: widgetType, Resource: widgetsResource}:   true,
		{Type: unstructType, Resource: widgetsResource}: true,
	}
	if diff := cmp.Diff(wantSynced, synced); diff != "" {
		t.Errorf("WaitForCacheSync (-want +got):\n%s", diff)
	}

	// The factory's namespace, selectors and transform apply to every
	// informer.
	web1.ManagedFields = nil
	small.ManagedFields = nil
	small.TypeMeta = metav1.TypeMeta{} // dropped by the typed decoder
	if diff := cmp.Diff([]*corev1.Pod{web1}, pods.Cache().List()); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]*metav1.PartialObjectMetadata{{ObjectMeta: web1.ObjectMeta}}, podMeta.Cache().List()); diff != "" {
		t.Errorf("pod metadata (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]*Widget{small}, widgets.Cache().List()); diff != "" {
		t.Errorf("widgets (-want +got):\n%s", diff)
	}
	wantU := toUnstructured(t, small)
	wantU.SetAPIVersion(widgetsGV.String())
	wantU.SetKind("Widget")
	if diff := cmp.Diff([]*unstructured.Unstructured{wantU}, widgetsU.Cache().List()); diff != "" {
		t.Errorf("unstructured widgets (-want +got):\n%s", diff)
	}

	// Watch events reach the caches.
	web3 := srv.Create(podsResource, informer.NewPod("a", "web-3", "", informer.PodLabels(map[string]string{"app": "web"}), informer.PodNode("node-1"))).(*corev1.Pod)
	informer.Eventually(t, "web-3 in the pod caches", func() bool {
		_, typed, _ := pods.Cache().GetByKey("a/web-3")
		_, meta, _ := podMeta.Cache().GetByKey("a/web-3")
		return typed && meta
	})
	got := must[[]*corev1.Pod](t)(pods.Lister().Namespace("a").List(labels.Everything()))
	if diff := cmp.Diff([]*corev1.Pod{web1, web3}, sortedByName(got)); diff != "" {
		t.Errorf("pod lister (-want +got):\n%s", diff)
	}

	// Built-in types travel as protobuf, CRD types as JSON, metadata as
	// protobuf.
	seen := map[exchange]bool{}
	for _, req := range srv.Requests() {
		seen[exchange{req.Path, req.Accept, req.Code, req.ContentType}] = true
	}
	if diff := cmp.Diff(wantExchanges, seen); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}

	f.Shutdown()
	f.Shutdown()
	checkGoroutines()
}

func TestFactoryStartsLateInformersOnTheNextStart(t *testing.T) {
	srv := newFakeAPIServer(t)
	srv.Serve(podsResource, podKind, true)
	srv.Serve(corev1.SchemeGroupVersion.WithResource("nodes"), corev1.SchemeGroupVersion.WithKind("Node"), true)
	checkGoroutines := informer.ExpectNoGoroutineLeak(t)
	f := newFactory(t, srv.Config(), informer.FactoryOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	pods := must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{}))
	f.Start(ctx)
	if _, err := f.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	nodes := must[*informer.Informer[*corev1.Node]](t)(informer.For(f, informer.InformerOptions[*corev1.Node]{}))
	// The node informer would never sync: WaitForCacheSync says so at once
	// rather than waiting, or leaving it out.
	synced, err := f.WaitForCacheSync(ctx)
	nodeKey := informer.InformerKey{Type: nodeType, Resource: corev1.SchemeGroupVersion.WithResource("nodes")}
	if diff := cmp.Diff(map[informer.InformerKey]bool{podKey: true, nodeKey: false}, synced); diff != "" {
		t.Errorf("before the second Start (-want +got):\n%s", diff)
	}
	wantErr := "informers not synced: *v1.Node v1/nodes (created after the last Start: call Start again to run it): not every informer is running"
	if err == nil || err.Error() != wantErr {
		t.Errorf("WaitForCacheSync before the second Start: error %v, want %s", err, wantErr)
	}
	if nodes.HasSynced() {
		t.Error("an informer created after Start runs before the next Start")
	}

	f.Start(ctx)
	synced, err = f.WaitForCacheSync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[informer.InformerKey]bool{podKey: true, nodeKey: true}, synced); diff != "" {
		t.Errorf("after the second Start (-want +got):\n%s", diff)
	}

	f.Shutdown()
	if !pods.IsStopped() || !nodes.IsStopped() {
		t.Error("Shutdown left an informer running")
	}
	f.Start(ctx) // does nothing after Shutdown
	checkGoroutines()
}

func TestFactoryWaitForCacheSyncHonoursContext(t *testing.T) {
	srv := newFakeAPIServer(t)
	srv.Serve(podsResource, podKind, true) // nodes are not served: never synced
	checkGoroutines := informer.ExpectNoGoroutineLeak(t)
	f := newFactory(t, srv.Config(), informer.FactoryOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{}))
	f.Start(ctx)
	if _, err := f.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	// Stop waiting once the node informer's first list has failed (then its
	// error is known: the message below does not depend on timing).
	waitCtx, stopWaiting := context.WithCancelCause(ctx)
	must[*informer.Informer[*corev1.Node]](t)(informer.For(f, informer.InformerOptions[*corev1.Node]{
		WatchErrorHandler: func(context.Context, error) { stopWaiting(errGaveUp) },
	}))
	f.Start(ctx)
	synced, err := f.WaitForCacheSync(waitCtx)

	want := map[informer.InformerKey]bool{
		{Type: podType, Resource: podsResource}:                                     true,
		{Type: nodeType, Resource: corev1.SchemeGroupVersion.WithResource("nodes")}: false,
	}
	if diff := cmp.Diff(want, synced); diff != "" {
		t.Errorf("WaitForCacheSync (-want +got):\n%s", diff)
	}
	if !errors.Is(err, errGaveUp) {
		t.Errorf("error %v does not wrap the context's cause", err)
	}
	wantErr := "informers not synced: *v1.Node v1/nodes (last error: failed to list *v1.Node: list nodes: the server could not find the requested resource; " +
		"the server does not serve v1/nodes: if it is a custom resource, check that its CRD is installed): gave up"
	if diff := cmp.Diff(wantErr, err.Error()); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}

	f.Shutdown()
	checkGoroutines()
}

func TestFactoryShutdownStopsInformersWithoutCancel(t *testing.T) {
	srv := newFakeAPIServer(t)
	srv.Serve(podsResource, podKind, true)
	checkGoroutines := informer.ExpectNoGoroutineLeak(t)
	f := newFactory(t, srv.Config(), informer.FactoryOptions{})
	pods := must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{}))
	f.Start(context.Background()) // a context that never ends
	if _, err := f.WaitForCacheSync(context.Background()); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(f.Shutdown)
	}
	wg.Wait()
	if !pods.IsStopped() {
		t.Error("Shutdown left the informer running")
	}
	checkGoroutines()
}

func TestFactoryIndexFunctionOfALaterForMayCallTheFactory(t *testing.T) {
	// For adds a later call's Indexers to a running informer, which calls
	// the new index function on every cached object: not under the
	// factory's lock, so that the function may use the factory.
	srv := newFakeAPIServer(t)
	srv.Serve(podsResource, podKind, true)
	srv.Create(podsResource, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p1"}, Spec: corev1.PodSpec{NodeName: "node-1"}})
	f := newFactory(t, srv.Config(), informer.FactoryOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{}))
	f.Start(ctx)
	if _, err := f.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	byNode := func(pod *corev1.Pod) ([]string, error) {
		// An index function that looks up the factory's informer.
		if _, err := informer.For(f, informer.InformerOptions[*corev1.Pod]{}); err != nil {
			return nil, err
		}
		return []string{pod.Spec.NodeName}, nil
	}
	done := make(chan error, 1)
	go func() {
		_, err := informer.For(f, informer.InformerOptions[*corev1.Pod]{Indexers: map[string]informer.IndexFunc[*corev1.Pod]{"node": byNode}})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second): // a failure guard, not a timing assertion
		t.Fatal("For deadlocked: the index function waited for the factory's lock")
	}
	got, err := pods.Lister().ByIndex("node", "node-1")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, pod := range got {
		keys = append(keys, informer.KeyOf(pod))
	}
	if diff := cmp.Diff([]string{"ns/p1"}, keys); diff != "" {
		t.Errorf("ByIndex(node, node-1) (-want +got):\n%s", diff)
	}
}

func TestNamespacedFactoryListsBuiltinClusterScopedTypesClusterWide(t *testing.T) {
	nodes := corev1.SchemeGroupVersion.WithResource("nodes")
	srv := newFakeAPIServer(t)
	srv.Serve(nodes, corev1.SchemeGroupVersion.WithKind("Node"), true)
	srv.Create(nodes, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}})
	// As with client-go's factory.Core().V1().Nodes() in a factory made
	// WithNamespace: the namespace does not apply to nodes.
	f := newFactory(t, srv.Config(), informer.FactoryOptions{Namespace: "ns"})
	inf := must[*informer.Informer[*corev1.Node]](t)(informer.For(f, informer.InformerOptions[*corev1.Node]{}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.Start(ctx)
	if _, err := f.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, node := range must[[]*corev1.Node](t)(inf.Lister().List(labels.Everything())) {
		names = append(names, node.Name)
	}
	if diff := cmp.Diff([]string{"node-1"}, names); diff != "" {
		t.Errorf("cached nodes (-want +got):\n%s", diff)
	}
	var paths []string
	for _, r := range srv.Requests() {
		paths = append(paths, r.Path)
	}
	sort.Strings(paths)
	if diff := cmp.Diff([]string{"/api/v1/nodes"}, slices.Compact(paths)); diff != "" {
		t.Errorf("paths of the list and watch requests (-want +got):\n%s", diff)
	}
}

// TestFactoryShutdownLeavesOtherClientsConnections checks that the HTTP
// client a factory makes for itself has a transport of its own: its
// Shutdown closes the factory's idle connections, not those of the user's
// other clients. client-go hands every plain-HTTP config the process-wide
// http.DefaultTransport, whose idle connections a Shutdown closed.
func TestFactoryShutdownLeavesOtherClientsConnections(t *testing.T) {
	var mu sync.Mutex
	dialed := 0
	other := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	other.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			mu.Lock()
			dialed++
			mu.Unlock()
		}
	}
	other.Start()
	defer other.Close()
	get := func() {
		t.Helper()
		resp, err := http.DefaultClient.Get(other.URL)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	get() // leaves one idle connection in http.DefaultTransport

	srv := newFakeAPIServer(t)
	srv.Serve(podsResource, podKind, true)
	f, err := informer.NewFactory(srv.Config(), informer.FactoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{}))
	f.Start(context.Background())
	if _, err := f.WaitForCacheSync(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.Shutdown()

	get() // reuses the idle connection unless the Shutdown closed it
	mu.Lock()
	defer mu.Unlock()
	if dialed != 1 {
		t.Errorf("the other client dialed %d connections, want 1: the factory's Shutdown closed its idle connection", dialed)
	}
}
