package informer_test

// The code of docs/migrating-from-client-go.md, uses 4–6: listers, waiting
// for sync, custom indexes. See example_migration_test.go.

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubetyped/informer"
)

// Use 4: listers, namespaced and cluster-scoped.

func describeWeb1ClientGo(pods corev1listers.PodLister, nodes corev1listers.NodeLister) (string, error) {
	pod, err := pods.Pods("default").Get("web-1")
	if err != nil {
		return "", err
	}
	node, err := nodes.Get(pod.Spec.NodeName)
	if err != nil {
		return "", err
	}
	inDefault, err := pods.Pods("default").List(labels.Everything())
	if err != nil {
		return "", err
	}
	_, err = pods.Pods("default").Get("web-9")
	return fmt.Sprintf("web-1 runs on %s; %d pods in default; web-9 not found: %t",
		node.Name, len(inDefault), apierrors.IsNotFound(err)), nil
}

func describeWeb1(pods *informer.Lister[*corev1.Pod], nodes *informer.Lister[*corev1.Node]) (string, error) {
	pod, err := pods.Namespace("default").Get("web-1")
	if err != nil {
		return "", err
	}
	node, err := nodes.Get(pod.Spec.NodeName)
	if err != nil {
		return "", err
	}
	inDefault, err := pods.Namespace("default").List(labels.Everything())
	if err != nil {
		return "", err
	}
	_, err = pods.Namespace("default").Get("web-9")
	return fmt.Sprintf("web-1 runs on %s; %d pods in default; web-9 not found: %t",
		node.Name, len(inDefault), apierrors.IsNotFound(err)), nil
}

// The listers of use 4 give the same answers.
func Example_migrateListers() {
	srv := docsCluster()
	defer srv.Close()
	f, err := newDocsFactories(srv)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.stop()
	theirPods, theirNodes := f.theirs.Core().V1().Pods().Lister(), f.theirs.Core().V1().Nodes().Lister()
	pods, err := informer.For(f.ours, informer.InformerOptions[*corev1.Pod]{})
	if err != nil {
		fmt.Println(err)
		return
	}
	nodes, err := informer.For(f.ours, informer.InformerOptions[*corev1.Node]{})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := f.startAndSync(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(describeWeb1ClientGo(theirPods, theirNodes))
	fmt.Println(describeWeb1(pods.Lister(), nodes.Lister()))
	// Output:
	// web-1 runs on node-1; 3 pods in default; web-9 not found: true <nil>
	// web-1 runs on node-1; 3 pods in default; web-9 not found: true <nil>
}

// Use 5: waiting for the caches and the handlers.

func syncPodsClientGo(ctx context.Context, factory informers.SharedInformerFactory, handler cache.ResourceEventHandler) error {
	podInformer := factory.Core().V1().Pods().Informer()
	registration, err := podInformer.AddEventHandler(handler)
	if err != nil {
		return err
	}
	factory.StartWithContext(ctx)
	// Every started informer has its first list in its cache ...
	if err := factory.WaitForCacheSyncWithContext(ctx).AsError(); err != nil {
		return err
	}
	// ... and the handler has returned from its initial adds. The older,
	// polling form: cache.WaitForCacheSync(ctx.Done(), registration.HasSynced).
	if !cache.WaitFor(ctx, "pod handler", registration.HasSyncedChecker()) {
		return context.Cause(ctx)
	}
	return nil
}

func syncPods(ctx context.Context, factory *informer.Factory, handler informer.ResourceEventHandler[*corev1.Pod]) error {
	pods, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{})
	if err != nil {
		return err
	}
	registration, err := pods.AddEventHandler(handler)
	if err != nil {
		return err
	}
	factory.Start(ctx)
	// Every started informer has its first list in its cache ...
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		return err // names the informers that did not sync
	}
	// ... and the handler has returned from its initial adds.
	if !cache.WaitFor(ctx, "pod handler", registration.HasSyncedChecker()) {
		return context.Cause(ctx)
	}
	return nil
}

// Once the functions of use 5 return, each handler has returned from its
// four initial adds. When the context ends first, our factory's error names
// the informers that did not sync, each with its last error.
func Example_migrateWaitForSync() {
	srv := docsCluster()
	defer srv.Close()
	f, err := newDocsFactories(srv)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.stop()

	var theirAdds, ourAdds atomic.Int32
	err = syncPodsClientGo(f.ctx, f.theirs, cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { theirAdds.Add(1) },
	})
	fmt.Println("client-go:", theirAdds.Load(), err)
	err = syncPods(f.ctx, f.ours, informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc: func(*corev1.Pod, bool) { ourAdds.Add(1) },
	})
	fmt.Println("ours:", ourAdds.Load(), err)

	// The fake API server does not serve secrets: that informer never syncs.
	// Give up once its first list has failed.
	ctx, cancel := context.WithCancelCause(f.ctx)
	_, err = informer.For(f.ours, informer.InformerOptions[*corev1.Secret]{
		WatchErrorHandler: func(context.Context, error) { cancel(errors.New("gave up")) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	f.ours.Start(f.ctx)
	_, err = f.ours.WaitForCacheSync(ctx)
	fmt.Println(err)
	fmt.Println("not found:", apierrors.IsNotFound(err))
	// Output:
	// client-go: 4 <nil>
	// ours: 4 <nil>
	// informers not synced: *v1.Secret v1/secrets (last error: failed to list *v1.Secret: list secrets: the server could not find the requested resource; the server does not serve v1/secrets: if it is a custom resource, check that its CRD is installed): gave up
	// not found: true
}

// Use 6: a custom index and ByIndex.

func nodeIndexedPodsClientGo(factory informers.SharedInformerFactory) (cache.SharedIndexInformer, error) {
	podInformer := factory.Core().V1().Pods().Informer()
	err := podInformer.AddIndexers(cache.Indexers{
		"byNode": func(obj interface{}) ([]string, error) {
			pod, ok := obj.(*corev1.Pod)
			if !ok {
				return nil, fmt.Errorf("expected a pod, got %T", obj)
			}
			return []string{pod.Spec.NodeName}, nil
		},
	})
	return podInformer, err
}

func podsOnNodeClientGo(podInformer cache.SharedIndexInformer, node string) ([]*corev1.Pod, error) {
	objs, err := podInformer.GetIndexer().ByIndex("byNode", node)
	if err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, obj := range objs {
		if pod, ok := obj.(*corev1.Pod); ok {
			pods = append(pods, pod)
		}
	}
	return pods, nil
}

func nodeIndexedPods(factory *informer.Factory) (*informer.Informer[*corev1.Pod], error) {
	return informer.For(factory, informer.InformerOptions[*corev1.Pod]{Indexers: map[string]informer.IndexFunc[*corev1.Pod]{
		"byNode": func(pod *corev1.Pod) ([]string, error) { return []string{pod.Spec.NodeName}, nil },
	}})
}

func podsOnNode(pods *informer.Informer[*corev1.Pod], node string) ([]*corev1.Pod, error) {
	return pods.Lister().ByIndex("byNode", node)
}

// The indexes of use 6 find the same pods.
func Example_migrateIndexers() {
	srv := docsCluster()
	defer srv.Close()
	f, err := newDocsFactories(srv)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.stop()
	podInformer, err := nodeIndexedPodsClientGo(f.theirs)
	if err != nil {
		fmt.Println(err)
		return
	}
	pods, err := nodeIndexedPods(f.ours)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := f.startAndSync(); err != nil {
		fmt.Println(err)
		return
	}
	theirs, err := podsOnNodeClientGo(podInformer, "node-1")
	fmt.Println("client-go:", podNames(theirs), err)
	ours, err := podsOnNode(pods, "node-1")
	fmt.Println("ours:", podNames(ours), err)
	// Output:
	// client-go: [default/web-1 shop/cart-1] <nil>
	// ours: [default/web-1 shop/cart-1] <nil>
}
