package informer_test

import (
	"context"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informer"
)

// ExampleFor shows a typed pod informer: a handler receives *corev1.Pod and
// a lister answers label queries from the cache.
func ExampleFor() {
	config, stop := exampleCluster() // a program uses clientcmd or rest.InClusterConfig
	defer stop()

	factory, err := informer.NewFactory(config, informer.FactoryOptions{Transform: informer.StripManagedFields[metav1.Object]})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer factory.Shutdown()
	pods, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{Indexers: map[string]informer.IndexFunc[*corev1.Pod]{
		"node": func(pod *corev1.Pod) ([]string, error) { return []string{pod.Spec.NodeName}, nil },
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	var added []string // written by the handler's goroutine until it has synced
	registration, err := pods.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc: func(pod *corev1.Pod, isInInitialList bool) { added = append(added, pod.Name) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx)
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		fmt.Println(err)
		return
	}
	cache.WaitFor(ctx, "pod handler", registration.HasSyncedChecker())
	fmt.Println("initial adds:", strings.Join(added, ", "))

	web, err := pods.Lister().Namespace("default").List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	if err != nil {
		fmt.Println(err)
		return
	}
	slices.SortFunc(web, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for _, pod := range web {
		fmt.Printf("web pod %s on %s\n", pod.Name, pod.Spec.NodeName)
	}
	onNode2, err := pods.Lister().ByIndex("node", "node-2")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("pods on node-2:", len(onNode2))
	// Output:
	// initial adds: db-1, web-1, web-2
	// web pod web-1 on node-1
	// web pod web-2 on node-2
	// pods on node-2: 2
}

// ExampleFor_customResource shows an informer for a CRD Go type: register
// the type and its list type in a scheme and give the scheme to the factory.
// Custom resources travel as JSON.
func ExampleFor_customResource() {
	config, stop := exampleCluster()
	defer stop()

	scheme := runtime.NewScheme()
	if err := addWidgetTypes(scheme); err != nil {
		fmt.Println(err)
		return
	}
	factory, err := informer.NewFactory(config, informer.FactoryOptions{Scheme: scheme})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer factory.Shutdown()
	widgets, err := informer.For(factory, informer.InformerOptions[*Widget]{})
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx)
	synced, err := factory.WaitForCacheSync(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for key, ok := range synced {
		fmt.Println(key, "synced:", ok)
	}
	small, err := widgets.Lister().Namespace("default").Get("small")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("small has size", small.Spec.Size)
	_, err = widgets.Lister().Namespace("default").Get("huge")
	fmt.Println(err)
	// Output:
	// *informer_test.Widget example.com/v1/widgets synced: true
	// small has size 1
	// widgets.example.com "huge" not found
}

// ExampleFor_metadataOnly shows a metadata-only informer: the API server sends
// only the metadata of each deployment, which saves memory when the rest of
// the object is never read.
func ExampleFor_metadataOnly() {
	config, stop := exampleCluster()
	defer stop()

	factory, err := informer.NewFactory(config, informer.FactoryOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer factory.Shutdown()
	deployments, err := informer.For(factory, informer.InformerOptions[*metav1.PartialObjectMetadata]{Resource: deploymentsResource})
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx)
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		fmt.Println(err)
		return
	}
	all, _ := deployments.Lister().List(nil)
	for _, deployment := range all {
		fmt.Println(informer.KeyOf(deployment), deployment.Labels)
	}
	// Output:
	// default/api map[tier:backend]
}

var deploymentsResource = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// exampleCluster starts an in-process fake API server with a few pods,
// widgets and a deployment, and returns its config and a function that
// stops it.
func exampleCluster() (*rest.Config, func()) {
	srv, err := startFakeAPIServer(addWidgetTypes)
	if err != nil {
		panic(err)
	}
	srv.Serve(podsResource, podKind, true)
	srv.Serve(widgetsResource, widgetKind, false)
	srv.Serve(deploymentsResource, deploymentsResource.GroupVersion().WithKind("Deployment"), true)
	for _, pod := range []struct{ name, app, node string }{{"web-1", "web", "node-1"}, {"web-2", "web", "node-2"}, {"db-1", "db", "node-2"}} {
		srv.Create(podsResource, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: pod.name, Labels: map[string]string{"app": pod.app}},
			Spec:       corev1.PodSpec{NodeName: pod.node},
		})
	}
	srv.Create(widgetsResource, newWidget("default", "small", 1))
	srv.Create(deploymentsResource, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "api", Labels: map[string]string{"tier": "backend"}},
	})
	return srv.Config(), srv.Close
}

// Widget is a tiny custom resource Go type, shaped like what controller-gen
// generates for a CRD: TypeMeta, ObjectMeta, a spec, and DeepCopyObject.
type Widget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              WidgetSpec `json:"spec"`
}

// WidgetSpec is the desired state of a Widget.
type WidgetSpec struct {
	Size int `json:"size"`
}

// WidgetList is the list type the API server returns for widgets.
type WidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Widget `json:"items"`
}

// DeepCopyObject returns a deep copy of w.
func (w *Widget) DeepCopyObject() runtime.Object {
	out := &Widget{TypeMeta: w.TypeMeta, Spec: w.Spec}
	w.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return out
}

// DeepCopyObject returns a deep copy of l.
func (l *WidgetList) DeepCopyObject() runtime.Object {
	out := &WidgetList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]Widget, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopyObject().(*Widget)
	}
	return out
}

// widgetsGV is the API group and version of Widget.
var widgetsGV = schema.GroupVersion{Group: "example.com", Version: "v1"}

// widgetsResource is the resource that serves widgets.
var widgetsResource = widgetsGV.WithResource("widgets")

// addWidgetTypes registers Widget and WidgetList in a scheme, as a generated
// AddToScheme does.
func addWidgetTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(widgetsGV, &Widget{}, &WidgetList{})
	metav1.AddToGroupVersion(scheme, widgetsGV)
	return nil
}
