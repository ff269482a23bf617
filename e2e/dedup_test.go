package e2e

import (
	"context"
	"fmt"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubetyped/informer"
)

// TestDeduplicateAgainstServer runs pod informers deduplicating replicas
// of one template as they are decoded (Deduplicate, no transform), one
// streaming its initial list and one listing, while pods are created and
// updated. Every cached pod must equal the server's (a fresh LIST decoded
// by client-go), and the replicas must share their template's env list.
func TestDeduplicateAgainstServer(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, testTimeout)
	defer cancel()
	client := newClientset(t)
	ns := newNamespace(ctx, t, client)
	pods := client.CoreV1().Pods(ns)
	replica := func(name string) *corev1.Pod {
		pod := newPod(name, "0")
		pod.Labels["app"] = "web"
		c := &pod.Spec.Containers[0]
		c.Env = []corev1.EnvVar{{Name: "MODE", Value: "production"}, {Name: "PORT", Value: "8080"}}
		c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
		c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}
		c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, PeriodSeconds: 5}
		return pod
	}
	create := func(name string) {
		t.Helper()
		if _, err := pods.Create(ctx, replica(name), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s: %v", name, err)
		}
	}
	const replicas = 12
	for i := range replicas {
		create(fmt.Sprintf("pre-%d", i))
	}

	var informers []*informer.Informer[*corev1.Pod]
	changed := newNotifier()
	for _, disableWatchList := range []bool{false, true} {
		factory, err := informer.NewFactory(restConfig, informer.FactoryOptions{Namespace: ns, Deduplicate: true})
		if err != nil {
			t.Fatalf("NewFactory: %v", err)
		}
		defer factory.Shutdown()
		inf, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{DisableWatchList: disableWatchList})
		if err != nil {
			t.Fatalf("For: %v", err)
		}
		if err := addNotifyingHandler(inf, changed.notify); err != nil {
			t.Fatalf("AddEventHandler: %v", err)
		}
		factory.Start(ctx)
		if _, err := factory.WaitForCacheSync(ctx); err != nil {
			t.Fatalf("WaitForCacheSync: %v", err)
		}
		informers = append(informers, inf)
	}
	for i := range replicas {
		create(fmt.Sprintf("live-%d", i))
	}
	relabelPod(ctx, t, client, ns, "pre-1", "1")

	list, want := listPodsWithVersions(ctx, t, client, ns)
	converged := func() bool {
		for _, inf := range informers {
			if !cmp.Equal(want, cachedVersions(inf, "")) {
				return false
			}
		}
		return true
	}
	if !waitFor(ctx, changed, converged) {
		t.Fatalf("caches did not converge: streaming %v, listing %v, list %v", cachedVersions(informers[0], ""), cachedVersions(informers[1], ""), want)
	}
	for n, inf := range informers {
		envLists := map[*corev1.EnvVar]bool{}
		for i := range list.Items {
			listed := &list.Items[i]
			got, err := inf.Lister().Namespace(ns).Get(listed.Name)
			if err != nil {
				t.Fatalf("informer %d: Get(%s): %v", n, listed.Name, err)
			}
			if diff := cmp.Diff(listed, got); diff != "" {
				t.Errorf("informer %d: %s (-LIST +cache):\n%s", n, listed.Name, diff)
			}
			envLists[unsafe.SliceData(got.Spec.Containers[0].Env)] = true
		}
		// A sub-object is shared from its second sighting on: the first
		// replica decoded keeps its own.
		if len(envLists) > 2 {
			t.Errorf("informer %d: %d env lists for %d replicas of one template, want at most 2", n, len(envLists), len(list.Items))
		}
	}
}
