package informer_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/informertest"
)

// A controller over many clusters holds one fleet per type: each cluster is
// added by name with its *rest.Config, the handler learns the cluster of
// every event, and a label query answers across every cluster from the
// label index.
func ExampleFleet() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods, err := informer.NewFleet(informer.FleetOptions[*corev1.Pod]{
		Informer: informer.InformerOptions[*corev1.Pod]{Name: "pods"},
		REST:     informer.RESTOptions{DropFields: []string{informer.ManagedFields}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for name, host := range map[string]string{"eu-1": "https://eu-1.example:6443", "us-1": "https://us-1.example:6443"} {
		if err := pods.AddCluster(name, &rest.Config{Host: host}); err != nil {
			fmt.Println(err)
			return
		}
	}
	queue := workqueue.NewTyped[informer.ClusterObjectName]()
	defer queue.ShutDown()
	if _, err := pods.AddEventHandler(informer.EnqueueFleet[*corev1.Pod](queue)); err != nil {
		fmt.Println(err)
		return
	}
	go pods.Run(ctx)
	for !pods.HasSynced() { // every cluster synced, or failed after SyncTimeout
		time.Sleep(100 * time.Millisecond)
	}
	web, _ := pods.Lister().List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	for _, p := range web {
		fmt.Println(p.Cluster, p.Object.Namespace, p.Object.Name)
	}
	eu, _ := pods.Lister().Cluster("eu-1") // the everyday Lister of one cluster
	_, _ = eu.Namespace("default").Get("web-0")
}

// Two clusters served by fakes: the same pod name in both is two objects,
// told apart by their cluster.
func ExampleFleet_clusters() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods, err := informer.NewFleet(informer.FleetOptions[*corev1.Pod]{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, name := range []string{"eu-1", "us-1"} {
		lw := informertest.NewFakeListerWatcher[*corev1.Pod]()
		lw.SetList("1", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "default", Name: "web-0", ResourceVersion: "1", Labels: map[string]string{"app": "web"},
		}})
		if err := pods.AddClusterListerWatcher(name, lw); err != nil {
			fmt.Println(err)
			return
		}
	}
	queue := workqueue.NewTyped[informer.ClusterObjectName]()
	defer queue.ShutDown()
	if _, err := pods.AddEventHandler(informer.EnqueueFleet[*corev1.Pod](queue)); err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		pods.Run(ctx)
	}()
	for queue.Len() < 2 {
		time.Sleep(10 * time.Millisecond)
	}
	web, _ := pods.Lister().List(labels.SelectorFromSet(labels.Set{"app": "web"}))
	for _, p := range web {
		fmt.Println(p.Cluster, p.Object.Namespace, p.Object.Name)
	}
	fmt.Println(queue.Len(), "keys queued")
	cancel()
	<-done
	// Output:
	// eu-1 default web-0
	// us-1 default web-0
	// 2 keys queued
}
