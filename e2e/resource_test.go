package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubetyped/informer"
)

var configMapsResource = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// TestEveryFormOfAResourceFollowsServer runs three informers of one
// namespaced factory on config maps: typed, metadata-only (the server
// answers with PartialObjectMetadata) and unstructured (JSON through the
// dynamic client). Each must list what exists, follow creates, updates and
// deletes, and end up equal to a fresh LIST.
func TestEveryFormOfAResourceFollowsServer(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	client := newClientset(t)
	ns := newNamespace(ctx, t, client)
	configMaps := client.CoreV1().ConfigMaps(ns)
	create := func(name string) {
		t.Helper()
		if _, err := configMaps.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Data:       map[string]string{"gen": "0"},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create config map %s: %v", name, err)
		}
	}
	for i := range 3 {
		create(fmt.Sprintf("pre-%d", i))
	}

	factory, err := informer.NewFactory(restConfig, informer.FactoryOptions{Namespace: ns})
	if err != nil {
		t.Fatalf("NewFactory: %v", err)
	}
	defer factory.Shutdown()
	typed, err := informer.For(factory, informer.InformerOptions[*corev1.ConfigMap]{})
	if err != nil {
		t.Fatalf("For: %v", err)
	}
	metadata, err := informer.For(factory, informer.InformerOptions[*metav1.PartialObjectMetadata]{Resource: configMapsResource})
	if err != nil {
		t.Fatalf("For(PartialObjectMetadata): %v", err)
	}
	dynamicInf, err := informer.For(factory, informer.InformerOptions[*unstructured.Unstructured]{Resource: configMapsResource})
	if err != nil {
		t.Fatalf("For(Unstructured): %v", err)
	}
	changed := newNotifier()
	notify := func() { changed.notify() }
	for _, err := range []error{
		addNotifyingHandler(typed, notify),
		addNotifyingHandler(metadata, notify),
		addNotifyingHandler(dynamicInf, notify),
	} {
		if err != nil {
			t.Fatalf("AddEventHandler: %v", err)
		}
	}
	factory.Start(ctx)
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		t.Fatalf("WaitForCacheSync: %v", err)
	}

	for i := range 5 {
		create(fmt.Sprintf("new-%d", i))
	}
	for _, name := range []string{"pre-0", "new-0", "new-1"} {
		patch := []byte(`{"data":{"gen":"1"}}`)
		if _, err := configMaps.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("patch config map %s: %v", name, err)
		}
	}
	for _, name := range []string{"pre-1", "new-2"} {
		if err := configMaps.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete config map %s: %v", name, err)
		}
	}
	list, err := configMaps.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list config maps: %v", err)
	}
	want := resourceVersions{}
	for i := range list.Items {
		want.set(&list.Items[i])
	}

	caches := map[string]func() resourceVersions{
		"typed":    func() resourceVersions { return cachedVersions(typed, "") },
		"metadata": func() resourceVersions { return cachedVersions(metadata, "") },
		"dynamic":  func() resourceVersions { return cachedVersions(dynamicInf, "") },
	}
	converged := func() bool {
		for _, cached := range caches {
			if !cmp.Equal(want, cached()) {
				return false
			}
		}
		return true
	}
	if !waitFor(ctx, changed, converged) {
		for form, cached := range caches {
			if diff := cmp.Diff(want, cached()); diff != "" {
				t.Errorf("%s informer differs from a fresh LIST (-list +cache):\n%s", form, diff)
			}
		}
		t.FailNow()
	}

	// The unstructured form holds the data as JSON decoded it; the
	// metadata-only form holds the server's metadata (its UID, among others)
	// and nothing else.
	pre0, err := dynamicInf.Lister().Namespace(ns).Get("pre-0")
	if err != nil {
		t.Fatalf("dynamic lister Get(pre-0): %v", err)
	}
	if gen, _, _ := unstructured.NestedString(pre0.Object, "data", "gen"); gen != "1" {
		t.Errorf("unstructured pre-0 has data.gen %q, want \"1\"", gen)
	}
	meta0, err := metadata.Lister().Namespace(ns).Get("pre-0")
	if err != nil {
		t.Fatalf("metadata lister Get(pre-0): %v", err)
	}
	if meta0.UID == "" || meta0.UID != pre0.GetUID() {
		t.Errorf("metadata pre-0 has UID %q, want %q", meta0.UID, pre0.GetUID())
	}
}

// TestCustomResourceInformerFollowsServer creates a CustomResourceDefinition
// on the server, then follows its custom resources with an unstructured
// informer from the factory, as an operator without generated Go types
// would.
func TestCustomResourceInformerFollowsServer(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	client := newClientset(t)
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		t.Fatalf("dynamic client: %v", err)
	}
	widgets := createWidgetCRD(ctx, t, dyn)
	ns := newNamespace(ctx, t, client)
	crs := dyn.Resource(widgets).Namespace(ns)
	create := func(name string, size int64) {
		t.Helper()
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": widgets.GroupVersion().String(),
			"kind":       "Widget",
			"metadata":   map[string]any{"name": name},
			"spec":       map[string]any{"size": size},
		}}
		if _, err := crs.Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create widget %s: %v", name, err)
		}
	}
	create("pre-0", 1)

	factory, err := informer.NewFactory(restConfig, informer.FactoryOptions{})
	if err != nil {
		t.Fatalf("NewFactory: %v", err)
	}
	defer factory.Shutdown()
	inf, err := informer.For(factory, informer.InformerOptions[*unstructured.Unstructured]{Resource: widgets})
	if err != nil {
		t.Fatalf("For: %v", err)
	}
	changed := newNotifier()
	if err := addNotifyingHandler(inf, func() { changed.notify() }); err != nil {
		t.Fatalf("AddEventHandler: %v", err)
	}
	factory.Start(ctx)
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		t.Fatalf("WaitForCacheSync: %v", err)
	}
	create("new-0", 2)
	create("new-1", 3)
	patch := []byte(`{"spec":{"size":10}}`)
	if _, err := crs.Patch(ctx, "new-0", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch widget new-0: %v", err)
	}
	if err := crs.Delete(ctx, "pre-0", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete widget pre-0: %v", err)
	}
	list, err := crs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list widgets: %v", err)
	}
	want := resourceVersions{}
	for i := range list.Items {
		want.set(&list.Items[i])
	}
	cached := func() resourceVersions { return cachedVersions(inf, ns) }
	if !waitFor(ctx, changed, func() bool { return cmp.Equal(want, cached()) }) {
		t.Fatalf("widget cache differs from a fresh LIST (-list +cache):\n%s", cmp.Diff(want, cached()))
	}
	new0, err := inf.Lister().Namespace(ns).Get("new-0")
	if err != nil {
		t.Fatalf("Get(new-0): %v", err)
	}
	if size, _, _ := unstructured.NestedInt64(new0.Object, "spec", "size"); size != 10 {
		t.Errorf("cached new-0 has spec.size %d, want 10", size)
	}
}

// createWidgetCRD creates a namespaced Widget custom resource definition
// with a generated group, waits until the server serves it, and deletes it
// at the end of the test. It returns the resource.
func createWidgetCRD(ctx context.Context, t *testing.T, dyn dynamic.Interface) schema.GroupVersionResource {
	t.Helper()
	resource := installWidgetCRD(ctx, t, dyn, fmt.Sprintf("e2e-%d.kubetyped.io", metav1.Now().UnixNano()))
	t.Cleanup(func() {
		err := dyn.Resource(crdsResource).Delete(context.WithoutCancel(ctx), widgetCRDName(resource.Group), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete CRD %s: %v", widgetCRDName(resource.Group), err)
		}
	})
	return resource
}

// crdsResource is the resource of custom resource definitions.
var crdsResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// widgetCRDName is the name of the Widget CRD of group.
func widgetCRDName(group string) string { return "widgets." + group }

// installWidgetCRD creates the namespaced Widget custom resource definition
// of group and waits until the server serves it. It returns the resource.
func installWidgetCRD(ctx context.Context, t *testing.T, dyn dynamic.Interface, group string) schema.GroupVersionResource {
	t.Helper()
	crds := dyn.Resource(crdsResource)
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": widgetCRDName(group)},
		"spec": map[string]any{
			"group": group,
			"scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{"spec": map[string]any{
						"type":       "object",
						"properties": map[string]any{"size": map[string]any{"type": "integer"}},
					}},
				}},
			}},
		},
	}}
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create CRD: %v", err)
	}
	resource := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	// Established: the server serves the resource (a list succeeds).
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, testTimeout, true, func(ctx context.Context) (bool, error) {
		current, err := crds.Get(ctx, crd.GetName(), metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		conditions, _, _ := unstructured.NestedSlice(current.Object, "status", "conditions")
		for _, c := range conditions {
			if c, ok := c.(map[string]any); ok && c["type"] == "Established" && c["status"] == "True" {
				_, err := dyn.Resource(resource).List(ctx, metav1.ListOptions{Limit: 1})
				return err == nil, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("CRD %s not established: %v", crd.GetName(), err)
	}
	return resource
}

// uninstallWidgetCRD deletes the Widget CRD of resource's group and waits
// until the server no longer serves the resource (a list fails with 404).
func uninstallWidgetCRD(ctx context.Context, t *testing.T, dyn dynamic.Interface, resource schema.GroupVersionResource) {
	t.Helper()
	if err := dyn.Resource(crdsResource).Delete(ctx, widgetCRDName(resource.Group), metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete CRD %s: %v", widgetCRDName(resource.Group), err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, testTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(resource).List(ctx, metav1.ListOptions{Limit: 1})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		t.Fatalf("CRD %s still served: %v", widgetCRDName(resource.Group), err)
	}
}
