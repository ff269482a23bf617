package main

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer/e2e/internal/cluster"
	"github.com/kubetyped/informer/internal/prodpods"
)

// seedWriters is how many pods are written concurrently while seeding: enough
// to keep kube-apiserver busy on two cores.
const seedWriters = 8

// clientset returns a protobuf clientset for c without client-side
// throttling: the command writes in bursts and measures the server.
func clientset(config *rest.Config) (*kubernetes.Clientset, error) {
	config = rest.CopyConfig(config)
	config.ContentType = runtime.ContentTypeProtobuf
	config.QPS, config.Burst = -1, 0
	return kubernetes.NewForConfig(config)
}

// seed creates n production-like pods as a cluster's components would write
// them: kube-controller-manager creates each one (metadata and spec, with
// spec.nodeName set as the scheduler's binding would), kube-scheduler sets
// its PodScheduled condition and kubelet the rest of its status, each
// through the status subresource, so that the server records managed fields
// of three managers. It returns the pods' mean size as protobuf as the
// server sends them (envelope included, as in a watch event).
func seed(ctx context.Context, c *cluster.Cluster, n int) (protoBytes float64, err error) {
	return seedRange(ctx, c, 0, n, seedWriters)
}

// seedRange is seed for pods from to to of prodpods.New(to) (the first
// pods of a larger set are those of a smaller one), written by writers
// concurrently, so that a larger set can be seeded over a smaller one
// (E7).
func seedRange(ctx context.Context, c *cluster.Cluster, from, to, writers int) (protoBytes float64, err error) {
	client, err := clientset(c.Config())
	if err != nil {
		return 0, err
	}
	pods := prodpods.New(to)
	if err := createPodNamespaces(ctx, client, pods[from:]); err != nil {
		return 0, err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(writers)
	for i := from; i < to; i++ {
		g.Go(func() error { return writePod(gctx, client, pods[i]) })
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	if err := checkShape(ctx, client, pods[0]); err != nil {
		return 0, err
	}
	return protobufSize(ctx, client, pods[:min(len(pods), 200)])
}

// checkShape fails unless the server's copy of want has the managers,
// conditions and container statuses of the generated pod.
func checkShape(ctx context.Context, client kubernetes.Interface, want corev1.Pod) error {
	got, err := client.CoreV1().Pods(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	managers := func(p *corev1.Pod) []string {
		var names []string
		for _, m := range p.ManagedFields {
			names = append(names, m.Manager+"/"+m.Subresource)
		}
		return names
	}
	if !slices.Equal(managers(got), managers(&want)) || len(got.Status.Conditions) != len(want.Status.Conditions) ||
		len(got.Status.ContainerStatuses) != len(want.Status.ContainerStatuses) {
		return fmt.Errorf("pod %s/%s on the server has managers %v, %d conditions and %d container statuses; generated: %v, %d, %d",
			want.Namespace, want.Name, managers(got), len(got.Status.Conditions), len(got.Status.ContainerStatuses),
			managers(&want), len(want.Status.Conditions), len(want.Status.ContainerStatuses))
	}
	return nil
}

// writePod creates pod and sets its status in the three steps of seed.
func writePod(ctx context.Context, client kubernetes.Interface, pod corev1.Pod) error {
	pods := client.CoreV1().Pods(pod.Namespace)
	status := pod.Status
	pod.ResourceVersion, pod.UID, pod.CreationTimestamp, pod.ManagedFields = "", "", metav1.Time{}, nil
	pod.Status = corev1.PodStatus{}
	created, err := pods.Create(ctx, &pod, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
	if err != nil {
		return fmt.Errorf("creating pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	var scheduled []corev1.PodCondition
	for _, cond := range status.Conditions {
		if cond.Type == corev1.PodScheduled {
			scheduled = append(scheduled, cond)
		}
	}
	created.Status.Conditions = scheduled
	updated, err := pods.UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: "kube-scheduler"})
	if err != nil {
		return fmt.Errorf("scheduling pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	updated.Status = status
	if _, err := pods.UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: "kubelet"}); err != nil {
		return fmt.Errorf("setting the status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// protobufSize returns the mean size of pods as the server encodes them in
// protobuf, read back one by one.
func protobufSize(ctx context.Context, client *kubernetes.Clientset, pods []corev1.Pod) (float64, error) {
	return meanSize(ctx, len(pods), func(ctx context.Context, i int) ([]byte, error) {
		return client.CoreV1().RESTClient().Get().Namespace(pods[i].Namespace).Resource("pods").Name(pods[i].Name).
			SetHeader("Accept", runtime.ContentTypeProtobuf).DoRaw(ctx)
	})
}

// meanSize returns the mean length of what get returns for 0 to n-1, read
// seedWriters at a time.
func meanSize(ctx context.Context, n int, get func(ctx context.Context, i int) ([]byte, error)) (float64, error) {
	var mu sync.Mutex
	total := 0
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(seedWriters)
	for i := range n {
		g.Go(func() error {
			raw, err := get(gctx, i)
			if err != nil {
				return err
			}
			mu.Lock()
			total += len(raw)
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	return float64(total) / float64(n), nil
}
