package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubetyped/informer"
)

const dropAnnotation = "example.com/dropped"

// TestDropFieldsAgainstServer runs three pod informers of one factory that
// drops managed fields on the wire: typed (protobuf, streaming list),
// metadata-only (protobuf PartialObjectMetadata) and unstructured (JSON),
// the typed one dropping more. Once they follow creates and updates, every
// cached object must equal the server's (from a fresh LIST) without the
// dropped fields, and no more.
func TestDropFieldsAgainstServer(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	client := newClientset(t)
	ns := newNamespace(ctx, t, client)
	pods := client.CoreV1().Pods(ns)
	create := func(name string) {
		t.Helper()
		pod := newPod(name, "0")
		pod.Annotations = map[string]string{dropAnnotation: "x", "kept": "y"}
		pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}}
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", name, err)
		}
	}
	for i := range 3 {
		create(fmt.Sprintf("pre-%d", i))
	}

	factory, err := informer.NewFactory(restConfig, informer.FactoryOptions{Namespace: ns, DropFields: []string{informer.ManagedFields}})
	if err != nil {
		t.Fatalf("NewFactory: %v", err)
	}
	defer factory.Shutdown()
	podsResource := corev1.SchemeGroupVersion.WithResource("pods")
	typed, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{DropFields: []string{
		"metadata.annotations[" + dropAnnotation + "]", "spec.containers.env", "status.conditions",
	}})
	if err != nil {
		t.Fatalf("For: %v", err)
	}
	metadata, err := informer.For(factory, informer.InformerOptions[*metav1.PartialObjectMetadata]{Resource: podsResource})
	if err != nil {
		t.Fatalf("For(PartialObjectMetadata): %v", err)
	}
	dynamicInf, err := informer.For(factory, informer.InformerOptions[*unstructured.Unstructured]{Resource: podsResource})
	if err != nil {
		t.Fatalf("For(Unstructured): %v", err)
	}
	changed := newNotifier()
	notify := func() { changed.notify() }
	for _, err := range []error{addNotifyingHandler(typed, notify), addNotifyingHandler(metadata, notify), addNotifyingHandler(dynamicInf, notify)} {
		if err != nil {
			t.Fatalf("AddEventHandler: %v", err)
		}
	}
	factory.Start(ctx)
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		t.Fatalf("WaitForCacheSync: %v", err)
	}
	create("live-0")
	relabelPod(ctx, t, client, ns, "pre-1", "1")

	list, want := listPodsWithVersions(ctx, t, client, ns)
	for i := range list.Items {
		if len(list.Items[i].ManagedFields) == 0 {
			t.Fatalf("the server keeps no managed fields for %s: nothing to drop", list.Items[i].Name)
		}
	}
	converged := func() bool {
		return cmp.Equal(want, cachedVersions(typed, "")) && cmp.Equal(want, cachedVersions(metadata, "")) && cmp.Equal(want, cachedVersions(dynamicInf, ""))
	}
	if !waitFor(ctx, changed, converged) {
		t.Fatalf("caches did not converge: typed %v, metadata %v, unstructured %v, list %v",
			cachedVersions(typed, ""), cachedVersions(metadata, ""), cachedVersions(dynamicInf, ""), want)
	}

	for i := range list.Items {
		listed := &list.Items[i]
		name := listed.Name

		wantTyped := listed.DeepCopy()
		wantTyped.ManagedFields = nil
		delete(wantTyped.Annotations, dropAnnotation)
		for c := range wantTyped.Spec.Containers {
			wantTyped.Spec.Containers[c].Env = nil
		}
		wantTyped.Status.Conditions = nil
		gotTyped, err := typed.Lister().Namespace(ns).Get(name)
		if err != nil {
			t.Fatalf("typed Get(%s): %v", name, err)
		}
		if diff := cmp.Diff(wantTyped, gotTyped, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("typed %s (-LIST without the dropped fields +cache):\n%s", name, diff)
		}

		wantMeta := &metav1.PartialObjectMetadata{ObjectMeta: *listed.ObjectMeta.DeepCopy()}
		wantMeta.ManagedFields = nil
		gotMeta, err := metadata.Lister().Namespace(ns).Get(name)
		if err != nil {
			t.Fatalf("metadata Get(%s): %v", name, err)
		}
		if diff := cmp.Diff(wantMeta, gotMeta, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("metadata %s (-LIST without the dropped fields +cache):\n%s", name, diff)
		}

		content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(listed)
		if err != nil {
			t.Fatal(err)
		}
		wantUnstructured := &unstructured.Unstructured{Object: content}
		unstructured.RemoveNestedField(wantUnstructured.Object, "metadata", "managedFields")
		gotUnstructured, err := dynamicInf.Lister().Namespace(ns).Get(name)
		if err != nil {
			t.Fatalf("unstructured Get(%s): %v", name, err)
		}
		// The dynamic client's objects carry apiVersion and kind.
		gotContent := gotUnstructured.DeepCopy()
		unstructured.RemoveNestedField(gotContent.Object, "apiVersion")
		unstructured.RemoveNestedField(gotContent.Object, "kind")
		if diff := cmp.Diff(wantUnstructured, gotContent, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("unstructured %s (-LIST without the dropped fields +cache):\n%s", name, diff)
		}
	}
}
