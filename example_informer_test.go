package informer_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/informertest"
)

func examplePod(namespace, name, app, resourceVersion string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: namespace, Name: name, ResourceVersion: resourceVersion,
		Labels: map[string]string{"app": app},
	}}
}

// A typed pod informer: handlers receive *corev1.Pod, and the lister answers
// from the cache. A informertest.FakeListerWatcher stands in for the API server; a real
// program passes a ListerWatcher built from a clientset.
func ExampleInformer() {
	lw := informertest.NewFakeListerWatcher[*corev1.Pod]()
	lw.SetList("10",
		examplePod("default", "web-1", "web", "8"),
		examplePod("default", "db-1", "db", "9"))

	pods, err := informer.NewInformer(lw, informer.InformerOptions[*corev1.Pod]{
		Indexers: map[string]informer.IndexFunc[*corev1.Pod]{informer.NamespaceIndex: informer.MetaNamespaceIndexFunc[*corev1.Pod]},
		Resource: corev1.SchemeGroupVersion.WithResource("pods"),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	deleted := make(chan struct{})
	reg, err := pods.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc: func(pod *corev1.Pod, isInInitialList bool) {
			fmt.Println("added", pod.Name, "initial:", isInInitialList)
		},
		UpdateFunc: func(oldPod, pod *corev1.Pod) {
			fmt.Println("updated", pod.Name, "from", oldPod.ResourceVersion, "to", pod.ResourceVersion)
		},
		DeleteFunc: func(d informer.DeletedObject[*corev1.Pod]) {
			fmt.Println("deleted", d.Name, "final state unknown:", d.FinalStateUnknown)
			close(deleted)
		},
	})
	if err != nil {
		panic(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		pods.Run(ctx)
	}()
	cache.WaitForCacheSync(ctx.Done(), reg.HasSynced)

	web, _ := pods.Lister().Namespace("default").List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	fmt.Println("web pods in the cache:", len(web))

	_ = lw.Modify(ctx, examplePod("default", "web-1", "web", "11"))
	_ = lw.Delete(ctx, examplePod("default", "db-1", "db", "12"))
	<-deleted
	cancel()
	<-stopped
	// Output:
	// added web-1 initial: true
	// added db-1 initial: true
	// web pods in the cache: 1
	// updated web-1 from 8 to 11
	// deleted default/db-1 final state unknown: false
}

// A handler that only cares about some objects, with a bounded buffer that
// merges notifications per object when the handler falls behind.
func ExampleInformer_AddEventHandlerWithOptions() {
	lw := informertest.NewFakeListerWatcher[*corev1.Pod]()
	lw.SetList("3",
		examplePod("default", "web-1", "web", "1"),
		examplePod("default", "db-1", "db", "2"))
	pods, err := informer.NewInformer(lw, informer.InformerOptions[*corev1.Pod]{})
	if err != nil {
		fmt.Println(err)
		return
	}

	webOnly := informer.FilteringResourceEventHandler[*corev1.Pod]{
		FilterFunc: func(pod *corev1.Pod) bool { return pod.Labels["app"] == "web" },
		Handler: informer.ResourceEventHandlerFuncs[*corev1.Pod]{
			AddFunc: func(pod *corev1.Pod, _ bool) { fmt.Println("web pod", pod.Name) },
		},
	}
	reg, err := pods.AddEventHandlerWithOptions(webOnly, informer.HandlerOptions{
		Name:       "web-pods",
		MaxPending: 1000,
		Overflow:   informer.OverflowCoalesce,
	})
	if err != nil {
		panic(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		pods.Run(ctx)
	}()
	cache.WaitForCacheSync(ctx.Done(), reg.HasSynced)
	cancel()
	<-stopped
	fmt.Println("delivered:", reg.Stats().Delivered)
	// Output:
	// web pod web-1
	// delivered: 2
}
