package informer_test

// The code of README.md. docs_test.go checks that every code block of the
// README appears in this file or in the migration examples.

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informer"
)

func readmeWebPods(ctx context.Context, config *rest.Config) ([]*corev1.Pod, error) {
	factory, err := informer.NewFactory(config, informer.FactoryOptions{Transform: informer.StripManagedFields[metav1.Object]})
	if err != nil {
		return nil, err
	}
	defer factory.Shutdown()
	pods, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{}) // the factory's one shared pod informer
	if err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx)
	_, err = pods.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		UpdateFunc: func(old, pod *corev1.Pod) { logger.Info("Updated", "pod", klog.KObj(pod), "phase", pod.Status.Phase) },
		DeleteFunc: func(d informer.DeletedObject[*corev1.Pod]) { logger.Info("Deleted", "pod", d.Name) },
	})
	if err != nil {
		return nil, err
	}
	factory.Start(ctx)
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		return nil, err
	}
	return pods.Lister().Namespace("default").List(labels.SelectorFromSet(labels.Set{"app": "web"}))
}

// The README's example, run against the fake API server of the migration
// examples.
func Example_readme() {
	srv := docsCluster()
	defer srv.Close()
	web, err := readmeWebPods(context.Background(), srv.Config())
	fmt.Println(podNames(web), err)
	// Output:
	// [default/web-1 default/web-2] <nil>
}
