package informer_test

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer"
)

// This replica holds one third of the pods, by the hash of their UIDs: the
// API server sends it only those, lists and watches alike. The server needs
// the ShardedListAndWatch feature gate; without it WaitForCacheSync fails
// with an error naming the gate.
func ExampleShard_static() {
	ctx := context.Background()
	config := &rest.Config{Host: "https://127.0.0.1:6443"}
	factory, err := informer.NewFactory(config, informer.FactoryOptions{
		Shard: &informer.Shard{Index: 1, Count: 3},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	pods, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{})
	if err != nil {
		fmt.Println(err)
		return
	}
	factory.Start(ctx)
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		fmt.Println(err)
		return
	}
	mine, _ := pods.Lister().List(nil)
	fmt.Println(len(mine), "pods in shard 1 of 3")
}

// Replicas of one controller share the pods: each joins the group "my-ctl"
// with a Lease in the controller's namespace, and holds the ranges the
// group assigns to it, which change as replicas come and go.
func ExampleShardGroup() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	config := &rest.Config{Host: "https://127.0.0.1:6443"}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		fmt.Println(err)
		return
	}
	group, err := informer.NewShardGroup(client.CoordinationV1(), informer.ShardGroupOptions{
		Name:          "my-ctl",
		Namespace:     "my-ctl-system",
		Identity:      os.Getenv("POD_NAME"),
		LeaseDuration: 15 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	go group.Run(ctx) // joins the group; leaves it (deletes its Lease) when ctx ends

	factory, err := informer.NewFactory(config, informer.FactoryOptions{
		Shard: &informer.Shard{Group: group},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	pods, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{})
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = pods.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc: func(pod *corev1.Pod, _ bool) {
			// A new pod, or one whose range this replica gained.
		},
		DeleteFunc: func(d informer.DeletedObject[*corev1.Pod]) {
			if d.Moved {
				// Not deleted: another replica holds it now. Forget it.
				return
			}
			// Deleted.
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	factory.Start(ctx)
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		fmt.Println(err)
	}
}
