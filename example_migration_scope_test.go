package informer_test

// The code of docs/migrating-from-client-go.md, uses 8 and 9: informers
// limited to a namespace or a selector, and transforms. See
// example_migration_test.go.

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informer"
)

// Use 8: a namespace, a label selector.

func scopedClientGo(ctx context.Context, clientset kubernetes.Interface) ([]*corev1.Pod, []*corev1.Node, error) {
	ctx, cancel := context.WithCancel(ctx)
	factory := informers.NewSharedInformerFactoryWithOptions(clientset, 0,
		informers.WithNamespace("default"),
		informers.WithTweakListOptions(func(options *metav1.ListOptions) {
			options.LabelSelector = "app!=db" // for every informer of the factory
		}))
	defer factory.Shutdown()
	defer cancel()

	podLister := factory.Core().V1().Pods().Lister()
	nodeLister := factory.Core().V1().Nodes().Lister() // cluster-scoped: the namespace does not apply
	factory.StartWithContext(ctx)
	if err := factory.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		return nil, nil, err
	}
	pods, err := podLister.List(labels.Everything())
	if err != nil {
		return nil, nil, err
	}
	nodes, err := nodeLister.List(labels.Everything())
	return pods, nodes, err
}

func scoped(ctx context.Context, config *rest.Config) ([]*corev1.Pod, []*corev1.Node, error) {
	factory, err := informer.NewFactory(config, informer.FactoryOptions{
		Namespace: "default",
		TweakListOptions: func(options *metav1.ListOptions) {
			options.LabelSelector = "app!=db" // for every informer of the factory
		},
	})
	if err != nil {
		return nil, nil, err
	}
	defer factory.Shutdown()

	pods, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{})
	if err != nil {
		return nil, nil, err
	}
	nodes, err := informer.For(factory, informer.InformerOptions[*corev1.Node]{}) // cluster-scoped: the namespace does not apply
	if err != nil {
		return nil, nil, err
	}
	factory.Start(ctx)
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		return nil, nil, err
	}
	podList, err := pods.Lister().List(labels.Everything())
	if err != nil {
		return nil, nil, err
	}
	nodeList, err := nodes.Lister().List(labels.Everything())
	return podList, nodeList, err
}

func cartPodsClientGo(clientset kubernetes.Interface) cache.SharedIndexInformer {
	return coreinformers.NewFilteredPodInformer(clientset, "shop", 0, cache.Indexers{}, func(options *metav1.ListOptions) {
		options.LabelSelector = "app=cart"
	})
}

func cartPods(config *rest.Config) (*informer.Informer[*corev1.Pod], error) {
	lw, err := informer.NewRESTListerWatcher[*corev1.Pod](config, informer.RESTOptions{
		Namespace: "shop",
		TweakListOptions: func(options *metav1.ListOptions) {
			options.LabelSelector = "app=cart"
		},
	})
	if err != nil {
		return nil, err
	}
	return informer.NewInformer(lw, informer.InformerOptions[*corev1.Pod]{Resource: corev1.SchemeGroupVersion.WithResource("pods")})
}

// The scoped factories of use 8 cache the same pods and nodes; so do the
// stand-alone informers.
func Example_migrateScope() {
	srv := docsCluster()
	defer srv.Close()
	clientset := kubernetes.NewForConfigOrDie(srv.Config())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	pods, nodes, err := scopedClientGo(ctx, clientset)
	fmt.Println("client-go:", podNames(pods), len(nodes), "nodes", err)
	pods, nodes, err = scoped(ctx, srv.Config())
	fmt.Println("ours:", podNames(pods), len(nodes), "nodes", err)

	theirs := cartPodsClientGo(clientset)
	ours, err := cartPods(srv.Config())
	if err != nil {
		fmt.Println(err)
		return
	}
	stopped := make(chan struct{}, 2)
	go func() { theirs.RunWithContext(ctx); stopped <- struct{}{} }()
	go func() { ours.Run(ctx); stopped <- struct{}{} }()
	cache.WaitForCacheSync(ctx.Done(), theirs.HasSynced, ours.HasSynced)
	fmt.Println("client-go:", theirs.GetStore().ListKeys())
	cached, _ := ours.Lister().List(nil)
	fmt.Println("ours:", podNames(cached))
	cancel()
	<-stopped
	<-stopped
	// Output:
	// client-go: [default/web-1 default/web-2] 2 nodes <nil>
	// ours: [default/web-1 default/web-2] 2 nodes <nil>
	// client-go: [shop/cart-1]
	// ours: [shop/cart-1]
}

// Use 9: transforms.

func trimmedPodsClientGo(clientset kubernetes.Interface) (informers.SharedInformerFactory, cache.SharedIndexInformer, error) {
	factory := informers.NewSharedInformerFactoryWithOptions(clientset, 0, informers.WithTransform(clearManagedFieldsClientGo))
	podInformer := factory.Core().V1().Pods().Informer()
	// SetTransform replaces the factory's transform, so this one does both.
	err := podInformer.SetTransform(func(obj interface{}) (interface{}, error) {
		obj, err := clearManagedFieldsClientGo(obj)
		if pod, ok := obj.(*corev1.Pod); ok {
			delete(pod.Annotations, "kubectl.kubernetes.io/last-applied-configuration")
		}
		return obj, err
	})
	return factory, podInformer, err
}

func clearManagedFieldsClientGo(obj interface{}) (interface{}, error) {
	if accessor, err := meta.Accessor(obj); err == nil {
		accessor.SetManagedFields(nil)
	}
	return obj, nil
}

func trimmedPods(config *rest.Config) (*informer.Factory, *informer.Informer[*corev1.Pod], error) {
	factory, err := informer.NewFactory(config, informer.FactoryOptions{Transform: informer.StripManagedFields[metav1.Object]})
	if err != nil {
		return nil, nil, err
	}
	// The informer's transform runs after the factory's.
	pods, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{Transform: informer.DropAnnotations[*corev1.Pod]("kubectl.kubernetes.io/last-applied-configuration")})
	return factory, pods, err
}

// Both caches of use 9 hold pods without managed fields and without the
// last-applied annotation.
func Example_migrateTransform() {
	srv := docsCluster()
	defer srv.Close()
	theirFactory, podInformer, err := trimmedPodsClientGo(kubernetes.NewForConfigOrDie(srv.Config()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer theirFactory.Shutdown() // after cancel: it waits for the informers to stop
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ourFactory, pods, err := trimmedPods(srv.Config())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ourFactory.Shutdown()
	theirFactory.StartWithContext(ctx)
	ourFactory.Start(ctx)
	cache.WaitForCacheSync(ctx.Done(), podInformer.HasSynced, pods.HasSynced)

	obj, _, _ := podInformer.GetStore().GetByKey("default/web-1")
	theirs := obj.(*corev1.Pod)
	fmt.Println("client-go:", len(theirs.ManagedFields), "managed fields, annotations", theirs.Annotations)
	ours, err := pods.Lister().Namespace("default").Get("web-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("ours:", len(ours.ManagedFields), "managed fields, annotations", ours.Annotations)
	// Output:
	// client-go: 0 managed fields, annotations map[]
	// ours: 0 managed fields, annotations map[]
}
