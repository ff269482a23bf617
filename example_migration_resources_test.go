package informer_test

// The code of docs/migrating-from-client-go.md, use 10: metadata-only,
// unstructured and custom resource informers. See example_migration_test.go.

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer"
)

// Use 10a: metadata only.

func deploymentUIDClientGo(ctx context.Context, config *rest.Config) (string, error) {
	client, err := metadata.NewForConfig(config)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithCancel(ctx)
	factory := metadatainformer.NewSharedInformerFactory(client, 0)
	defer factory.Shutdown()
	defer cancel()

	deployments := factory.ForResource(appsv1.SchemeGroupVersion.WithResource("deployments"))
	deployments.Informer() // creates the informer, so that Start runs it
	factory.Start(ctx.Done())
	for gvr, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return "", fmt.Errorf("%v not synced: %w", gvr, context.Cause(ctx))
		}
	}
	obj, err := deployments.Lister().ByNamespace("default").Get("api")
	if err != nil {
		return "", err
	}
	deployment, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return "", fmt.Errorf("unexpected object of type %T", obj)
	}
	return string(deployment.UID), nil
}

func deploymentUID(ctx context.Context, config *rest.Config) (string, error) {
	factory, err := informer.NewFactory(config, informer.FactoryOptions{})
	if err != nil {
		return "", err
	}
	defer factory.Shutdown()

	deployments, err := informer.For(factory, informer.InformerOptions[*metav1.PartialObjectMetadata]{Resource: appsv1.SchemeGroupVersion.WithResource("deployments")})
	if err != nil {
		return "", err
	}
	factory.Start(ctx)
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		return "", err
	}
	deployment, err := deployments.Lister().Namespace("default").Get("api")
	if err != nil {
		return "", err
	}
	return string(deployment.UID), nil
}

// Use 10b: unstructured objects, and a custom resource Go type.

var widgetsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

func widgetSizeClientGo(ctx context.Context, config *rest.Config) (int64, error) {
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithCancel(ctx)
	factory := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	defer factory.Shutdown()
	defer cancel()

	widgets := factory.ForResource(widgetsGVR)
	widgets.Informer() // creates the informer, so that Start runs it
	factory.Start(ctx.Done())
	for gvr, synced := range factory.WaitForCacheSync(ctx.Done()) {
		if !synced {
			return 0, fmt.Errorf("%v not synced: %w", gvr, context.Cause(ctx))
		}
	}
	obj, err := widgets.Lister().ByNamespace("default").Get("small")
	if err != nil {
		return 0, err
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return 0, fmt.Errorf("unexpected object of type %T", obj)
	}
	// Unstructured, or converted to the Go type on every read:
	var widget Widget
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &widget); err != nil {
		return 0, err
	}
	return int64(widget.Spec.Size), nil
}

func widgetSizeUnstructured(ctx context.Context, config *rest.Config) (int64, error) {
	factory, err := informer.NewFactory(config, informer.FactoryOptions{})
	if err != nil {
		return 0, err
	}
	defer factory.Shutdown()

	widgets, err := informer.For(factory, informer.InformerOptions[*unstructured.Unstructured]{Resource: widgetsGVR})
	if err != nil {
		return 0, err
	}
	factory.Start(ctx)
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		return 0, err
	}
	widget, err := widgets.Lister().Namespace("default").Get("small")
	if err != nil {
		return 0, err
	}
	size, _, err := unstructured.NestedInt64(widget.Object, "spec", "size")
	return size, err
}

func widgetSize(ctx context.Context, config *rest.Config) (int64, error) {
	scheme := runtime.NewScheme()
	if err := addWidgetTypes(scheme); err != nil { // a generated AddToScheme
		return 0, err
	}
	factory, err := informer.NewFactory(config, informer.FactoryOptions{Scheme: scheme})
	if err != nil {
		return 0, err
	}
	defer factory.Shutdown()

	widgets, err := informer.For(factory, informer.InformerOptions[*Widget]{})
	if err != nil {
		return 0, err
	}
	factory.Start(ctx)
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		return 0, err
	}
	widget, err := widgets.Lister().Namespace("default").Get("small")
	if err != nil {
		return 0, err
	}
	return int64(widget.Spec.Size), nil
}

// The functions of use 10 read the same metadata and the same widget.
func Example_migrateResources() {
	srv := docsCluster()
	defer srv.Close()
	ctx := context.Background()

	fmt.Println(deploymentUIDClientGo(ctx, srv.Config()))
	fmt.Println(deploymentUID(ctx, srv.Config()))
	fmt.Println(widgetSizeClientGo(ctx, srv.Config()))
	fmt.Println(widgetSizeUnstructured(ctx, srv.Config()))
	fmt.Println(widgetSize(ctx, srv.Config()))
	// Output:
	// uid-of-api <nil>
	// uid-of-api <nil>
	// 1 <nil>
	// 1 <nil>
	// 1 <nil>
}
