package informer_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer"
)

// ExampleInformerOptions_dropFields drops fields on the wire, before they
// are decoded: here every informer's managed fields, and for pods what a
// controller that follows pods' identity, labels, owners, node, phase and
// IPs does not read (a network-policy agent, say). The cached pods never
// hold the dropped fields. W6(c) of docs/benchmarks.md measures this
// projection: a production-like pod keeps about a sixth of its heap.
func ExampleInformerOptions_dropFields() {
	config, stop := exampleProjectionCluster()
	defer stop()

	factory, err := informer.NewFactory(config, informer.FactoryOptions{DropFields: []string{informer.ManagedFields}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer factory.Shutdown()
	pods, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{DropFields: []string{
		"metadata.annotations",
		"spec.volumes",
		"spec.initContainers",
		"spec.containers",
		"spec.tolerations",
		"spec.securityContext",
		"spec.affinity",
		"status.conditions",
		"status.containerStatuses",
		"status.initContainerStatuses",
	}})
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
	pod, err := pods.Lister().Namespace("default").Get("web-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s (app=%s) on %s: %s at %s\n", pod.Name, pod.Labels["app"], pod.Spec.NodeName, pod.Status.Phase, pod.Status.PodIP)
	fmt.Println("managed fields:", len(pod.ManagedFields), "annotations:", len(pod.Annotations),
		"containers:", len(pod.Spec.Containers), "conditions:", len(pod.Status.Conditions))
	// Output:
	// web-1 (app=web) on node-1: Running at 10.0.0.7
	// managed fields: 0 annotations: 0 containers: 0 conditions: 0
}

// exampleProjectionCluster starts a fake API server holding one pod with
// everything ExampleInformerOptions_dropFields drops.
func exampleProjectionCluster() (*rest.Config, func()) {
	srv, err := startFakeAPIServer()
	if err != nil {
		panic(err)
	}
	srv.Serve(podsResource, podKind, true)
	srv.Create(podsResource, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: "web-1", Labels: map[string]string{"app": "web"},
			Annotations:   map[string]string{lastApplied: `{"kind":"Pod"}`},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}},
		},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "web", Image: "nginx", Env: []corev1.EnvVar{{Name: "PORT", Value: "80"}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.7", Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		}},
	})
	return srv.Config(), srv.Close
}
