package informer_test

import (
	"context"
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/internal/prodpods"
)

var (
	podsResource = corev1.SchemeGroupVersion.WithResource("pods")
	podKind      = corev1.SchemeGroupVersion.WithKind("Pod")
	widgetKind   = widgetsGV.WithKind("Widget")
)

const (
	protobufAccept = "application/vnd.kubernetes.protobuf,application/json"
	metadataAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1," +
		"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
	metadataListAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," +
		"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
)

func newWidget(namespace, name string, size int) *Widget {
	return &Widget{
		TypeMeta:   metav1.TypeMeta{APIVersion: widgetsGV.String(), Kind: "Widget"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": "web"}},
		Spec:       WidgetSpec{Size: size},
	}
}

// widgetScheme returns a scheme that knows Widget and WidgetList.
func widgetScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := addWidgetTypes(scheme); err != nil {
		t.Fatal(err)
	}
	return scheme
}

// selectWeb is a TweakListOptions that keeps the "web" objects except
// "web-skip".
func selectWeb(options *metav1.ListOptions) {
	options.LabelSelector = "app=web"
	options.FieldSelector = "metadata.name!=web-skip"
}

// nextEvent returns the next event of w, failing the test if none arrives.
func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(20 * time.Second):
		t.Fatal("timed out waiting for a watch event")
		return watch.Event{}
	}
}

// testListerWatcher lists at "0", then watches from the list's resource
// version and returns the list and the first watch event after the objects
// made by write (which must include objects the options filter out before the
// one they select).
func testListerWatcher[T informer.Object](t *testing.T, srv *fakeAPIServer, resource schema.GroupVersionResource, lw informer.ListerWatcher[T], write func()) (*informer.ListResult[T], watch.Event) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	list, err := lw.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	w, err := lw.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("Watch: %v", err)
	}
	defer w.Stop()
	srv.WaitForWatches(t, resource, 1)
	write()
	return list, nextEvent(t, w)
}

func TestRESTListerWatcherPods(t *testing.T) {
	for _, tc := range []struct {
		name        string
		contentType informer.ContentType
		accept      string
		listType    string
		watchType   string
	}{
		{"default is protobuf", informer.ContentTypeDefault, protobufAccept, "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf;stream=watch"},
		{"protobuf", informer.ContentTypeProtobuf, protobufAccept, "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf;stream=watch"},
		{"json", informer.ContentTypeJSON, "application/json", "application/json", "application/json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newFakeAPIServer(t)
			srv.Serve(podsResource, podKind, true)
			web1 := srv.Create(podsResource, informer.NewPod("a", "web-1", "", informer.PodLabels(map[string]string{"app": "web"}), informer.PodNode("node-1")))
			srv.Create(podsResource, informer.NewPod("a", "db-1", "", informer.PodLabels(map[string]string{"app": "db"}), informer.PodNode("node-1")))
			srv.Create(podsResource, informer.NewPod("a", "web-skip", "", informer.PodLabels(map[string]string{"app": "web"}), informer.PodNode("node-1")))
			srv.Create(podsResource, informer.NewPod("b", "web-2", "", informer.PodLabels(map[string]string{"app": "web"}), informer.PodNode("node-1")))
			lw, err := informer.NewRESTListerWatcher[*corev1.Pod](srv.Config(), informer.RESTOptions{
				Namespace: "a", TweakListOptions: selectWeb, ContentType: tc.contentType,
			})
			if err != nil {
				t.Fatal(err)
			}
			var web3 runtime.Object
			list, ev := testListerWatcher(t, srv, podsResource, lw, func() {
				srv.Create(podsResource, informer.NewPod("a", "db-2", "", informer.PodLabels(map[string]string{"app": "db"}), informer.PodNode("node-1")))
				srv.Create(podsResource, informer.NewPod("b", "web-4", "", informer.PodLabels(map[string]string{"app": "web"}), informer.PodNode("node-1")))
				web3 = srv.Create(podsResource, informer.NewPod("a", "web-3", "", informer.PodLabels(map[string]string{"app": "web"}), informer.PodNode("node-1")))
			})

			if diff := cmp.Diff(podsResource, informer.ResourceOf(lw)); diff != "" {
				t.Errorf("Resource() (-want +got):\n%s", diff)
			}
			wantList := &informer.ListResult[*corev1.Pod]{Items: []*corev1.Pod{web1.(*corev1.Pod)}, ResourceVersion: "104"}
			if diff := cmp.Diff(wantList, list); diff != "" {
				t.Errorf("List (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(watch.Event{Type: watch.Added, Object: web3}, ev); diff != "" {
				t.Errorf("watch event (-want +got):\n%s", diff)
			}
			const query = "labelSelector=app=web&fieldSelector=metadata.name!=web-skip"
			wantRequests := []fakeRequest{
				{Path: "/api/v1/namespaces/a/pods", Query: query, Accept: tc.accept, Code: 200, ContentType: tc.listType},
				{Path: "/api/v1/namespaces/a/pods", Watch: true, Query: query, Accept: tc.accept, Code: 200, ContentType: tc.watchType},
			}
			if diff := cmp.Diff(wantRequests, srv.Requests()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRESTListerWatcherCRDTypeUsesJSON(t *testing.T) {
	srv := newFakeAPIServer(t, addWidgetTypes)
	srv.Serve(widgetsResource, widgetKind, false)
	small := srv.Create(widgetsResource, newWidget("a", "small", 1))
	lw, err := informer.NewRESTListerWatcher[*Widget](srv.Config(), informer.RESTOptions{Scheme: widgetScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	var large runtime.Object
	list, ev := testListerWatcher(t, srv, widgetsResource, lw, func() {
		large = srv.Create(widgetsResource, newWidget("b", "large", 9))
	})

	if diff := cmp.Diff(widgetsResource, informer.ResourceOf(lw)); diff != "" {
		t.Errorf("Resource() (-want +got):\n%s", diff)
	}
	// Typed objects come without apiVersion and kind (which custom resources
	// carry), from lists as from watches.
	wantListed := small.(*Widget)
	wantListed.TypeMeta = metav1.TypeMeta{}
	wantList := &informer.ListResult[*Widget]{Items: []*Widget{wantListed}, ResourceVersion: "101"}
	if diff := cmp.Diff(wantList, list); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	wantAdded := large.(*Widget)
	wantAdded.TypeMeta = metav1.TypeMeta{}
	if diff := cmp.Diff(watch.Event{Type: watch.Added, Object: wantAdded}, ev); diff != "" {
		t.Errorf("watch event (-want +got):\n%s", diff)
	}
	wantRequests := []fakeRequest{
		{Path: "/apis/example.com/v1/widgets", Accept: "application/json", Code: 200, ContentType: "application/json"},
		{Path: "/apis/example.com/v1/widgets", Watch: true, Accept: "application/json", Code: 200, ContentType: "application/json"},
	}
	if diff := cmp.Diff(wantRequests, srv.Requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestRESTListerWatcherExplicitResource(t *testing.T) {
	lw, err := informer.NewRESTListerWatcher[*Widget](&rest.Config{Host: "127.0.0.1:1"}, informer.RESTOptions{Scheme: widgetScheme(t), Resource: widgetsGV.WithResource("gadgets")})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(widgetsGV.WithResource("gadgets"), informer.ResourceOf(lw)); diff != "" {
		t.Errorf("Resource() (-want +got):\n%s", diff)
	}
}

func TestRESTListerWatcherErrors(t *testing.T) {
	widgets := widgetScheme(t)
	noList := runtime.NewScheme()
	noList.AddKnownTypes(widgetsGV, &Widget{})
	metav1.AddToGroupVersion(noList, widgetsGV)
	noMeta := runtime.NewScheme()
	noMeta.AddKnownTypes(widgetsGV, &Widget{}, &WidgetList{})
	_, noListErr := noList.New(widgetsGV.WithKind("WidgetList"))
	config := &rest.Config{Host: "127.0.0.1:1"}
	for _, tc := range []struct {
		name string
		new  func() error
		want string
	}{{
		name: "type not in scheme",
		new:  newRESTLW[*Widget](config, informer.RESTOptions{}),
		want: "list/watch *informer_test.Widget: the type is not registered in the scheme (for a CRD type, register it in a runtime.Scheme with its list type and pass that scheme)",
	}, {
		name: "no list type",
		new:  newRESTLW[*Widget](config, informer.RESTOptions{Scheme: noList}),
		want: "list/watch *informer_test.Widget: the scheme has no list type example.com/v1, Kind=WidgetList: " + noListErr.Error(),
	}, {
		name: "no meta types",
		new:  newRESTLW[*Widget](config, informer.RESTOptions{Scheme: noMeta}),
		want: `list/watch *informer_test.Widget: the scheme cannot decode the Status of watch errors: register the meta types with metav1.AddToGroupVersion(scheme, schema.GroupVersion{Group:"example.com", Version:"v1"})`,
	}, {
		name: "protobuf for a CRD type",
		new:  newRESTLW[*Widget](config, informer.RESTOptions{Scheme: widgets, ContentType: informer.ContentTypeProtobuf}),
		want: "list/watch *informer_test.Widget: content type application/vnd.kubernetes.protobuf: *informer_test.WidgetList cannot be decoded from protobuf",
	}, {
		name: "unknown content type",
		new:  newRESTLW[*corev1.Pod](config, informer.RESTOptions{ContentType: "application/yaml"}),
		want: `list/watch *v1.Pod: unsupported content type "application/yaml" (use "application/json" or "application/vnd.kubernetes.protobuf")`,
	}, {
		name: "metadata",
		new:  newRESTLW[*metav1.PartialObjectMetadata](config, informer.RESTOptions{}),
		want: "list/watch *v1.PartialObjectMetadata: metadata-only objects need a GroupVersionResource: use NewMetadataListerWatcher, or For with InformerOptions.Resource",
	}, {
		name: "unstructured",
		new:  newRESTLW[*unstructured.Unstructured](config, informer.RESTOptions{}),
		want: "list/watch *unstructured.Unstructured: unstructured objects need a GroupVersionResource: use NewDynamicListerWatcher, or For with InformerOptions.Resource",
	}, {
		name: "invalid namespace",
		new:  newRESTLW[*corev1.Pod](config, informer.RESTOptions{Namespace: "a/b"}),
		want: `list/watch *v1.Pod: invalid namespace "a/b": [may not contain '/']`,
	}, {
		name: "nil config",
		new:  newRESTLW[*corev1.Pod](nil, informer.RESTOptions{}),
		want: "list/watch *v1.Pod: rest config is nil",
	}, {
		name: "metadata without resource",
		new: func() error {
			_, err := informer.NewMetadataListerWatcher(config, informer.RESTOptions{Resource: schema.GroupVersionResource{Version: "v1"}})
			return err
		},
		want: "list/watch metadata of v1/: the GroupVersionResource needs a version and a resource",
	}, {
		name: "dynamic in protobuf",
		new: func() error {
			_, err := informer.NewDynamicListerWatcher(config, informer.RESTOptions{Resource: widgetsResource, ContentType: informer.ContentTypeProtobuf})
			return err
		},
		want: `list/watch example.com/v1/widgets: unstructured objects are served only as JSON, not "application/vnd.kubernetes.protobuf"`,
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

func newRESTLW[T informer.Object](config *rest.Config, opts informer.RESTOptions) func() error {
	return func() error {
		_, err := informer.NewRESTListerWatcher[T](config, opts)
		return err
	}
}

func TestMetadataListerWatcher(t *testing.T) {
	srv := newFakeAPIServer(t)
	srv.Serve(podsResource, podKind, true)
	web1 := srv.Create(podsResource, informer.NewPod("a", "web-1", "", informer.PodLabels(map[string]string{"app": "web"}), informer.PodNode("node-1")))
	srv.Create(podsResource, informer.NewPod("a", "db-1", "", informer.PodLabels(map[string]string{"app": "db"}), informer.PodNode("node-1")))
	lw, err := informer.NewMetadataListerWatcher(srv.Config(), informer.RESTOptions{Resource: podsResource, Namespace: "a", TweakListOptions: selectWeb})
	if err != nil {
		t.Fatal(err)
	}
	var web2 runtime.Object
	list, ev := testListerWatcher(t, srv, podsResource, lw, func() {
		srv.Create(podsResource, informer.NewPod("a", "db-2", "", informer.PodLabels(map[string]string{"app": "db"}), informer.PodNode("node-1")))
		web2 = srv.Create(podsResource, informer.NewPod("a", "web-2", "", informer.PodLabels(map[string]string{"app": "web"}), informer.PodNode("node-1")))
	})

	wantList := &informer.ListResult[*metav1.PartialObjectMetadata]{
		Items:           []*metav1.PartialObjectMetadata{{ObjectMeta: web1.(*corev1.Pod).ObjectMeta}},
		ResourceVersion: "102",
	}
	if diff := cmp.Diff(wantList, list); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	wantAdded := &metav1.PartialObjectMetadata{ObjectMeta: web2.(*corev1.Pod).ObjectMeta}
	if diff := cmp.Diff(watch.Event{Type: watch.Added, Object: wantAdded}, ev); diff != "" {
		t.Errorf("watch event (-want +got):\n%s", diff)
	}
	const query = "labelSelector=app=web&fieldSelector=metadata.name!=web-skip"
	wantRequests := []fakeRequest{
		{Path: "/api/v1/namespaces/a/pods", Query: query, Accept: metadataListAccept, Code: 200, ContentType: "application/vnd.kubernetes.protobuf"},
		{Path: "/api/v1/namespaces/a/pods", Watch: true, Query: query, Accept: metadataAccept, Code: 200, ContentType: "application/vnd.kubernetes.protobuf;stream=watch"},
	}
	if diff := cmp.Diff(wantRequests, srv.Requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestDynamicListerWatcher(t *testing.T) {
	srv := newFakeAPIServer(t, addWidgetTypes)
	srv.Serve(widgetsResource, widgetKind, false)
	small := srv.Create(widgetsResource, newWidget("a", "small", 1))
	lw, err := informer.NewDynamicListerWatcher(srv.Config(), informer.RESTOptions{Resource: widgetsResource, TweakListOptions: selectWeb})
	if err != nil {
		t.Fatal(err)
	}
	var large runtime.Object
	list, ev := testListerWatcher(t, srv, widgetsResource, lw, func() {
		large = srv.Create(widgetsResource, newWidget("b", "large", 9))
	})

	wantList := &informer.ListResult[*unstructured.Unstructured]{
		Items:           []*unstructured.Unstructured{toUnstructured(t, small)},
		ResourceVersion: "101",
	}
	if diff := cmp.Diff(wantList, list); diff != "" {
		t.Errorf("List (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(watch.Event{Type: watch.Added, Object: toUnstructured(t, large)}, ev); diff != "" {
		t.Errorf("watch event (-want +got):\n%s", diff)
	}
	const query = "labelSelector=app=web&fieldSelector=metadata.name!=web-skip"
	wantRequests := []fakeRequest{
		{Path: "/apis/example.com/v1/widgets", Query: query, Accept: "application/json", Code: 200, ContentType: "application/json"},
		{Path: "/apis/example.com/v1/widgets", Watch: true, Query: query, Accept: "application/json", Code: 200, ContentType: "application/json"},
	}
	if diff := cmp.Diff(wantRequests, srv.Requests()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func toUnstructured(t *testing.T, obj runtime.Object) *unstructured.Unstructured {
	t.Helper()
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return &unstructured.Unstructured{Object: content}
}

func TestRESTListerWatcherWatchErrorCarriesStatus(t *testing.T) {
	gone := &metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"}
	srv := newFakeAPIServer(t, addWidgetTypes)
	srv.Serve(podsResource, podKind, true)
	srv.Serve(widgetsResource, widgetKind, false)
	pods, err := informer.NewRESTListerWatcher[*corev1.Pod](srv.Config(), informer.RESTOptions{})
	if err != nil {
		t.Fatal(err)
	}
	widgets, err := informer.NewRESTListerWatcher[*Widget](srv.Config(), informer.RESTOptions{Scheme: widgetScheme(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		resource schema.GroupVersionResource
		watch    func(context.Context, metav1.ListOptions) (watch.Interface, error)
	}{
		{"protobuf", podsResource, pods.Watch},
		{"json", widgetsResource, widgets.Watch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			w, err := tc.watch(ctx, metav1.ListOptions{ResourceVersion: "1"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			srv.WaitForWatches(t, tc.resource, 1)
			srv.SendError(tc.resource, gone)
			if diff := cmp.Diff(watch.Event{Type: watch.Error, Object: gone}, nextEvent(t, w)); diff != "" {
				t.Errorf("watch event (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRESTListerWatcherErrorsKeepTheAPIStatus(t *testing.T) {
	srv := newFakeAPIServer(t) // serves nothing
	lw, err := informer.NewRESTListerWatcher[*corev1.Pod](srv.Config(), informer.RESTOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, listErr := lw.List(context.Background(), metav1.ListOptions{})
	_, watchErr := lw.Watch(context.Background(), metav1.ListOptions{})
	for _, tc := range []struct {
		err  error
		want string
	}{
		{listErr, "list pods: the server could not find the requested resource"},
		{watchErr, "watch pods: the server could not find the requested resource"},
	} {
		if tc.err == nil {
			t.Errorf("no error, want %q", tc.want)
			continue
		}
		if diff := cmp.Diff(tc.want, tc.err.Error()); diff != "" {
			t.Errorf("error (-want +got):\n%s", diff)
		}
		if !apierrors.IsNotFound(tc.err) {
			t.Errorf("apierrors.IsNotFound(%v) = false", tc.err)
		}
	}
}

// TestRESTRelistKeepsCachedObjects relists pods over protobuf after the
// watch expires: every pod comes back at its cached version, so each
// handler gets an update whose old and new objects are the one cached
// before, the object the ListerWatcher returned without decoding it.
func TestRESTRelistKeepsCachedObjects(t *testing.T) {
	srv := newFakeAPIServer(t)
	srv.Serve(podsResource, podKind, true)
	srv.RejectStreamingLists()
	for i := range 3 {
		srv.Create(podsResource, informer.NewPod("a", fmt.Sprintf("web-%d", i), "", informer.PodNode("node-1")))
	}
	f := newFactory(t, srv.Config(), informer.FactoryOptions{})
	pods := must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{}))
	capture := informer.NewUpdateCapture()
	must[*informer.Registration](t)(pods.AddEventHandler(capture))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.Start(ctx)
	if _, err := f.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	cached := map[string][2]*corev1.Pod{}
	for _, pod := range pods.Cache().List() {
		cached[informer.KeyOf(pod)] = [2]*corev1.Pod{pod, pod}
	}
	srv.WaitForWatches(t, podsResource, 1)
	srv.SendError(podsResource, &metav1.Status{Status: metav1.StatusFailure, Message: "too old", Reason: metav1.StatusReasonExpired, Code: 410})
	informer.Eventually(t, "the relist's updates", func() bool { return len(capture.Snapshot()) == len(cached) })
	if diff := cmp.Diff(cached, capture.Snapshot()); diff != "" {
		t.Errorf("relist updates (-cached before +got):\n%s", diff)
	}
	for key, u := range capture.Snapshot() {
		if u[0] != cached[key][0] || u[1] != cached[key][0] {
			t.Errorf("%s: update (%p, %p), want the object cached before, %p, as both", key, u[0], u[1], cached[key][0])
		}
	}
	lists := 0
	for _, req := range srv.Requests() {
		if !req.Watch {
			lists++
		}
	}
	if lists != 2 {
		t.Errorf("%d list requests, want 2", lists)
	}
}

// TestRESTListerWatcherInternsPodStrings checks that pods decoded from
// protobuf, listed or watched, share the strings they repeat: from its
// second sighting on (the table copies a string when it sees it again), a
// label value is one copy in every pod.
func TestRESTListerWatcherInternsPodStrings(t *testing.T) {
	srv := newFakeAPIServer(t)
	srv.Serve(podsResource, podKind, true)
	for _, name := range []string{"web-1", "web-2", "web-3"} {
		srv.Create(podsResource, informer.NewPod("a", name, "", informer.PodLabels(map[string]string{"app": "web-frontend"})))
	}
	lw, err := informer.NewRESTListerWatcher[*corev1.Pod](srv.Config(), informer.RESTOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list, ev := testListerWatcher(t, srv, podsResource, lw, func() {
		srv.Create(podsResource, informer.NewPod("a", "web-4", "", informer.PodLabels(map[string]string{"app": "web-frontend"})))
	})
	pods := append(list.Items, ev.Object.(*corev1.Pod))
	var got []string
	for _, p := range pods {
		got = append(got, p.Name)
	}
	if diff := cmp.Diff([]string{"web-1", "web-2", "web-3", "web-4"}, got); diff != "" {
		t.Fatalf("pods (-want +got):\n%s", diff)
	}
	shared := unsafe.StringData(pods[1].Labels["app"])
	for _, p := range pods[2:] {
		if unsafe.StringData(p.Labels["app"]) != shared {
			t.Errorf("pod %s: the label value is not the copy pod web-2 holds", p.Name)
		}
	}
}

// TestRESTListerWatcherInternsNodeStrings lists then watches nodes over
// protobuf: the nodes equal the server's, and their label values and
// image names are the same copy.
func TestRESTListerWatcherInternsNodeStrings(t *testing.T) {
	nodesResource := corev1.SchemeGroupVersion.WithResource("nodes")
	srv := newFakeAPIServer(t)
	srv.Serve(nodesResource, corev1.SchemeGroupVersion.WithKind("Node"), true)
	node := func(name string) *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"topology.kubernetes.io/zone": "eu-west-1a"}},
			Status: corev1.NodeStatus{Images: []corev1.ContainerImage{
				{Names: []string{"registry.example.com/team/service@sha256:0123", "registry.example.com/team/service:v1"}, SizeBytes: 1 << 20},
			}},
		}
	}
	var want []*corev1.Node
	for _, name := range []string{"node-1", "node-2", "node-3"} {
		want = append(want, srv.Create(nodesResource, node(name)).(*corev1.Node))
	}
	lw, err := informer.NewRESTListerWatcher[*corev1.Node](srv.Config(), informer.RESTOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list, ev := testListerWatcher(t, srv, nodesResource, lw, func() {
		want = append(want, srv.Create(nodesResource, node("node-4")).(*corev1.Node))
	})
	nodes := append(list.Items, ev.Object.(*corev1.Node))
	if diff := informer.DiffLarge(want, nodes); diff != "" {
		t.Fatalf("nodes (-server +listed and watched):\n%s", diff)
	}
	label, image := unsafe.StringData(nodes[1].Labels["topology.kubernetes.io/zone"]), unsafe.StringData(nodes[1].Status.Images[0].Names[0])
	for _, n := range nodes[2:] {
		if unsafe.StringData(n.Labels["topology.kubernetes.io/zone"]) != label {
			t.Errorf("node %s: the label value is not the copy node-2 holds", n.Name)
		}
		if unsafe.StringData(n.Status.Images[0].Names[0]) != image {
			t.Errorf("node %s: the image name is not the copy node-2 holds", n.Name)
		}
	}
}

// runPodInformer runs an informer with opts over the REST ListerWatcher of
// srv's pods (in protobuf) until the test ends, and returns it once it has
// synced and watches.
func runPodInformer(t *testing.T, srv *fakeAPIServer, opts informer.InformerOptions[*corev1.Pod]) *informer.Informer[*corev1.Pod] {
	t.Helper()
	lw, err := informer.NewRESTListerWatcher[*corev1.Pod](srv.Config(), informer.RESTOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return runInformerOf(t, srv, podsResource, lw, opts)
}

// runInformerOf runs an informer over lw, a ListerWatcher of srv's
// resource, until the test ends, and returns it once it has synced and
// watches.
func runInformerOf[T informer.Object](t *testing.T, srv *fakeAPIServer, resource schema.GroupVersionResource, lw informer.ListerWatcher[T], opts informer.InformerOptions[T]) *informer.Informer[T] {
	t.Helper()
	inf := informer.MustNewInformer(t, lw, opts)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	informer.Eventually(t, "the informer synced", inf.HasSynced)
	srv.WaitForWatches(t, resource, 1)
	return inf
}

// TestInformerDeduplicatesOnDecode runs an informer deduplicating the
// production-like pods of a protobuf server, listed then watched: its
// decoder shares their sub-objects (here a container's env list) between
// the replicas of a template, and every cached pod equals the server's.
func TestInformerDeduplicatesOnDecode(t *testing.T) {
	srv := newFakeAPIServer(t)
	srv.Serve(podsResource, podKind, true)
	pods := prodpods.New(60)
	want := map[string]*corev1.Pod{}
	for i := range pods[:40] {
		p := srv.Create(podsResource, &pods[i]).(*corev1.Pod)
		want[p.Namespace+"/"+p.Name] = p
	}
	inf := runPodInformer(t, srv, informer.InformerOptions[*corev1.Pod]{Deduplicate: new(true), DisableWatchList: true})
	for i := range pods[40:] {
		p := srv.Create(podsResource, &pods[40+i]).(*corev1.Pod)
		want[p.Namespace+"/"+p.Name] = p
	}
	var cached []*corev1.Pod
	informer.Eventually(t, "the informer cached every pod", func() bool {
		var err error
		cached, err = inf.Lister().List(nil)
		return err == nil && len(cached) == len(want)
	})

	got := map[string]*corev1.Pod{}
	byEnv := map[*corev1.EnvVar][]string{}
	for _, p := range cached {
		key := p.Namespace + "/" + p.Name
		got[key] = p
		byEnv[unsafe.SliceData(p.Spec.Containers[0].Env)] = append(byEnv[unsafe.SliceData(p.Spec.Containers[0].Env)], key)
	}
	if diff := informer.DiffLarge(want, got); diff != "" {
		t.Fatalf("cached pods (-server +cache):\n%s", diff)
	}
	// Each template's env list is kept once, but by the first replica
	// decoded (a sub-object is shared from its second sighting).
	templates := map[string]bool{}
	for _, p := range want {
		templates[p.Labels["app"]] = true
	}
	if len(byEnv) > 2*len(templates) {
		t.Errorf("%d env lists for %d templates, want at most 2 each", len(byEnv), len(templates))
	}
}

// TestRESTListerWatcherWatchTooOld watches from a resource version older
// than the window of changes the server keeps (fakeAPIServer.LimitHistory):
// the watch gets "410 Gone" as an Error event, as from the real server,
// and from a version within the window, the changes after it.
func TestRESTListerWatcherWatchTooOld(t *testing.T) {
	srv := newFakeAPIServer(t)
	srv.Serve(podsResource, podKind, true)
	srv.LimitHistory(podsResource, 4)
	var rvs []string
	for i := range 10 {
		rvs = append(rvs, srv.Create(podsResource, informer.NewPod("a", fmt.Sprintf("p-%d", i), "")).(*corev1.Pod).ResourceVersion)
	}
	lw, err := informer.NewRESTListerWatcher[*corev1.Pod](srv.Config(), informer.RESTOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watchFrom := func(rv string) watch.Event {
		w, err := lw.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		if err != nil {
			t.Fatalf("Watch from %s: %v", rv, err)
		}
		defer w.Stop()
		return nextEvent(t, w)
	}
	ev := watchFrom(rvs[0])
	if status, ok := ev.Object.(*metav1.Status); ev.Type != watch.Error || !ok || !apierrors.IsResourceExpired(apierrors.FromObject(status)) {
		t.Errorf("watch from %s, out of the window: got %s %#v, want an Error event with 410 Gone", rvs[0], ev.Type, ev.Object)
	}
	ev = watchFrom(rvs[8])
	if p, ok := ev.Object.(*corev1.Pod); ev.Type != watch.Added || !ok || p.Name != "p-9" {
		t.Errorf("watch from %s, in the window: got %s %#v, want p-9 added", rvs[8], ev.Type, ev.Object)
	}
}
