package informer_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubetyped/informer"
)

func TestFactoryPerTypeOptions(t *testing.T) {
	nodesResource := corev1.SchemeGroupVersion.WithResource("nodes")
	srv := newFakeAPIServer(t)
	srv.Serve(podsResource, podKind, true)
	srv.Serve(nodesResource, corev1.SchemeGroupVersion.WithKind("Node"), true)
	web1 := srv.Create(podsResource, withManagedFields(informer.NewPod("a", "web-1", "", informer.PodLabels(map[string]string{"app": "web"}), informer.PodNode("node-1")))).(*corev1.Pod)
	node1 := srv.Create(nodesResource, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"}}).(*corev1.Node)
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(4), ktesting.BufferLogs(true)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	defer cancel()

	f := newFactory(t, srv.Config(), informer.FactoryOptions{Namespace: "a", Name: "test", Transform: informer.StripManagedFields[metav1.Object]})
	pods := must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{
		Name:         "custom-pods",
		ResyncPeriod: new(time.Second),
		Transform:    addLabel("t"),
	}))
	nodes := must[*informer.Informer[*corev1.Node]](t)(informer.For(f, informer.InformerOptions[*corev1.Node]{ClusterScoped: true}))
	must[*informer.Informer[*metav1.PartialObjectMetadata]](t)(informer.For(f, informer.InformerOptions[*metav1.PartialObjectMetadata]{Resource: podsResource}))
	var once sync.Once
	resynced := make(chan struct{})
	must[*informer.Registration](t)(pods.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		UpdateFunc: func(oldPod, newPod *corev1.Pod) {
			if oldPod == newPod {
				once.Do(func() { close(resynced) })
			}
		},
	}))
	f.Start(ctx)
	if _, err := f.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}

	// The factory's transform runs first, then the informer's.
	web1.ManagedFields = nil
	web1.Labels["trace"] = "t"
	if diff := cmp.Diff([]*corev1.Pod{web1}, pods.Cache().List()); diff != "" {
		t.Errorf("pods (-want +got):\n%s", diff)
	}
	// A cluster-scoped informer ignores the factory's namespace.
	if diff := cmp.Diff([]*corev1.Node{node1}, nodes.Cache().List()); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	for _, req := range srv.Requests() {
		if req.Path != "/api/v1/namespaces/a/pods" && req.Path != "/api/v1/nodes" {
			t.Errorf("unexpected request path %s", req.Path)
		}
	}
	// ResyncPeriod sets the handlers' default resync period.
	select {
	case <-resynced:
	case <-time.After(20 * time.Second):
		t.Error("no resync within 20s of a 1s resync period")
	}
	f.Shutdown()

	// Informers are named in logs.
	logs := logger.GetSink().(ktesting.Underlier).GetBuffer().String()
	for _, line := range []string{
		`Starting informer informer="custom-pods" key="*v1.Pod v1/pods"`,
		`Starting informer informer="test/nodes" key="*v1.Node v1/nodes"`,
		`Starting informer informer="test/pods (PartialObjectMetadata)" key="*v1.PartialObjectMetadata v1/pods"`,
	} {
		if !strings.Contains(logs, line) {
			t.Errorf("no log line %s in:\n%s", line, logs)
		}
	}
}

// A factory-wide ConsistencyCheck cannot run on informers with a dynamic
// shard: the factory says so once, not each informer at its Run; an
// informer's own ConsistencyCheck still gets its own warning.
func TestFactoryConsistencyCheckWithDynamicShardsWarnsOnce(t *testing.T) {
	group, err := informer.NewShardGroup(fake.NewClientset().CoordinationV1(), informer.ShardGroupOptions{Name: "ctl", Namespace: "ns", Identity: "a"})
	if err != nil {
		t.Fatal(err)
	}
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	defer cancel()
	f := newFactory(t, offline, informer.FactoryOptions{
		ConsistencyCheck: informer.ConsistencyCheckOptions{Period: time.Hour},
		Shard:            &informer.Shard{Group: group},
	})
	must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{}))
	must[*informer.Informer[*corev1.ConfigMap]](t)(informer.For(f, informer.InformerOptions[*corev1.ConfigMap]{}))
	must[*informer.Informer[*corev1.Secret]](t)(informer.For(f, informer.InformerOptions[*corev1.Secret]{
		ConsistencyCheck: &informer.ConsistencyCheckOptions{Period: time.Minute},
	}))
	f.Start(ctx)
	f.Start(ctx)
	f.Shutdown() // returns once every Run has returned
	type warning struct {
		Message   string
		Informers any
	}
	var got []warning
	for _, entry := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		if !strings.Contains(entry.Message, "consistency checks") {
			continue
		}
		w := warning{Message: entry.Message}
		kv := append(slices.Clone(entry.WithKVList), entry.ParameterKVList...)
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == "informer" || kv[i] == "informers" {
				w.Informers = kv[i+1]
			}
		}
		got = append(got, w)
	}
	want := []warning{
		{"Warning: the factory's consistency checks do not run on informers with a dynamic shard: their caches have no single resource version to list at", []string{"pods", "configmaps"}},
		{"Warning: not running consistency checks: a dynamic shard's cache has no single resource version to list at", "secrets"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("consistency check warnings (-want +got):\n%s", diff)
	}
}
