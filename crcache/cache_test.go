package crcache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubetyped/informer/crcache/internal/pods"
)

// testPods is a small cluster of benchmark pods (pods.Pod): 300 pods in 10 namespaces.
func testPods(cluster *fakeCluster) {
	for i := range 300 {
		cluster.Create(pods.Pod(i, 10))
	}
}

// names returns "namespace/name" of every item of list, sorted.
func names(t *testing.T, list client.ObjectList) []string {
	t.Helper()
	var out []string
	switch l := list.(type) {
	case *corev1.PodList:
		for i := range l.Items {
			out = append(out, client.ObjectKeyFromObject(&l.Items[i]).String())
		}
	case *unstructured.UnstructuredList:
		for i := range l.Items {
			out = append(out, client.ObjectKeyFromObject(&l.Items[i]).String())
		}
	case *metav1.PartialObjectMetadataList:
		for i := range l.Items {
			out = append(out, client.ObjectKeyFromObject(&l.Items[i]).String())
		}
	default:
		t.Fatalf("unexpected list %T", list)
	}
	slices.Sort(out)
	return out
}

func nodeNameIndex(obj client.Object) []string { return []string{obj.(*corev1.Pod).Spec.NodeName} }

// TestListMatchesControllerRuntime runs the same reads against this cache
// and controller-runtime's over one fake cluster and requires the same
// answers, object for object.
func TestListMatchesControllerRuntime(t *testing.T) {
	cluster := newFakeCluster()
	testPods(cluster)
	ours := newTestCache(t, cluster, testOptions(t))
	theirs := newControllerRuntimeCache(t, cluster, testOptions(t))
	ctx := t.Context()
	for _, c := range []cache.Cache{ours, theirs} {
		if err := c.IndexField(ctx, &corev1.Pod{}, "spec.nodeName", nodeNameIndex); err != nil {
			t.Fatal(err)
		}
	}
	cases := map[string][]client.ListOption{
		"everything":              nil,
		"label, all namespaces":   {client.MatchingLabels{"app": "app-7"}},
		"label, one namespace":    {client.InNamespace("ns-7"), client.MatchingLabels{"app": "app-7"}},
		"set-based":               {client.MatchingLabelsSelector{Selector: mustSelector(t, "app in (app-1,app-2),tier!=tier-0")}},
		"namespace":               {client.InNamespace("ns-3")},
		"unknown namespace":       {client.InNamespace("nope")},
		"field index":             {client.MatchingFields{"spec.nodeName": "node-7"}},
		"field index, namespace":  {client.InNamespace("ns-7"), client.MatchingFields{"spec.nodeName": "node-7"}},
		"field index and label":   {client.MatchingFields{"spec.nodeName": "node-7"}, client.MatchingLabels{"tier": "tier-1"}},
		"nothing matches":         {client.MatchingLabels{"app": "none"}},
		"label and deep copy off": {client.MatchingLabels{"app": "app-9"}, client.UnsafeDisableDeepCopy},
	}
	for name, opts := range cases {
		t.Run(name, func(t *testing.T) {
			var want, got corev1.PodList
			if err := theirs.List(ctx, &want, opts...); err != nil {
				t.Fatal(err)
			}
			if err := ours.List(ctx, &got, opts...); err != nil {
				t.Fatal(err)
			}
			byName := func(a, b corev1.Pod) int { return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) }
			slices.SortFunc(want.Items, byName)
			slices.SortFunc(got.Items, byName)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("List differs from controller-runtime's (-theirs +ours):\n%s", diff)
			}
		})
	}
	for _, key := range []client.ObjectKey{{Namespace: "ns-7", Name: "pod-7"}, {Namespace: "ns-7", Name: "pod-8"}} {
		var want, got corev1.Pod
		wantErr := theirs.Get(ctx, key, &want)
		gotErr := ours.Get(ctx, key, &got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Get(%v) differs (-theirs +ours):\n%s", key, diff)
		}
		if fmt.Sprint(wantErr) != fmt.Sprint(gotErr) {
			t.Errorf("Get(%v): error %v, controller-runtime's %v", key, gotErr, wantErr)
		}
	}
}

func mustSelector(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// TestNonExactFieldSelectors checks the field selectors that
// controller-runtime's cache rejects.
func TestNonExactFieldSelectors(t *testing.T) {
	cluster := newFakeCluster()
	testPods(cluster)
	c := newTestCache(t, cluster, testOptions(t))
	ctx := t.Context()
	if err := c.IndexField(ctx, &corev1.Pod{}, "spec.nodeName", nodeNameIndex); err != nil {
		t.Fatal(err)
	}
	var all corev1.PodList
	if err := c.List(ctx, &all, client.InNamespace("ns-7")); err != nil {
		t.Fatal(err)
	}
	filter := func(keep func(p *corev1.Pod) bool) []string {
		var out []string
		for i := range all.Items {
			if keep(&all.Items[i]) {
				out = append(out, client.ObjectKeyFromObject(&all.Items[i]).String())
			}
		}
		slices.Sort(out)
		return out
	}
	cases := []struct {
		selector string
		want     []string
	}{
		{"spec.nodeName!=node-7", filter(func(p *corev1.Pod) bool { return p.Spec.NodeName != "node-7" })},
		{"spec.nodeName!=node-7,metadata.name!=pod-17", filter(func(p *corev1.Pod) bool { return p.Spec.NodeName != "node-7" && p.Name != "pod-17" })},
		{"spec.nodeName=node-17,metadata.name!=pod-17", nil},
		{"metadata.name=pod-27", []string{"ns-7/pod-27"}},
	}
	for _, tc := range cases {
		sel, err := fields.ParseSelector(tc.selector)
		if err != nil {
			t.Fatal(err)
		}
		var got corev1.PodList
		err = c.List(ctx, &got, client.InNamespace("ns-7"), client.MatchingFieldsSelector{Selector: sel})
		if err != nil {
			t.Fatalf("List(%s): %v", tc.selector, err)
		}
		if diff := cmp.Diff(tc.want, names(t, &got)); diff != "" {
			t.Errorf("List(%s) (-want +got):\n%s", tc.selector, diff)
		}
	}
	var got corev1.PodList
	err := c.List(ctx, &got, client.MatchingFieldsSelector{Selector: fields.OneTermNotEqualSelector("spec.hostname", "x")})
	if err == nil || !strings.Contains(err.Error(), "index with name field:spec.hostname does not exist") {
		t.Errorf("List by an unindexed field: error %v", err)
	}
}

// TestDeepCopy checks that reads copy unless told not to.
func TestDeepCopy(t *testing.T) {
	cluster := newFakeCluster()
	testPods(cluster)
	c := newTestCache(t, cluster, testOptions(t))
	ctx := t.Context()
	key := client.ObjectKey{Namespace: "ns-7", Name: "pod-7"}

	var pod corev1.Pod
	if err := c.Get(ctx, key, &pod); err != nil {
		t.Fatal(err)
	}
	if pod.Kind != "Pod" || pod.APIVersion != "v1" {
		t.Errorf("Get: TypeMeta %+v, want v1 Pod", pod.TypeMeta)
	}
	pod.Labels["app"] = "changed"
	var list corev1.PodList
	if err := c.List(ctx, &list, client.MatchingLabels{"app": "app-7"}, client.InNamespace("ns-7")); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 3 || list.Items[0].Labels["app"] != "app-7" {
		t.Fatalf("changing a copy changed the cache: %v", names(t, &list))
	}
	if list.Continue != continueNotSupported {
		t.Errorf("Continue = %q", list.Continue)
	}

	// Without a deep copy, the maps are the cache's own.
	var shared1, shared2 corev1.Pod
	if err := c.Get(ctx, key, &shared1, client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, &shared2, client.UnsafeDisableDeepCopy); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%p", shared1.Labels) != fmt.Sprintf("%p", shared2.Labels) {
		t.Errorf("UnsafeDisableDeepCopy: two Gets returned different label maps")
	}
}

func TestLimitAndContinue(t *testing.T) {
	cluster := newFakeCluster()
	testPods(cluster)
	c := newTestCache(t, cluster, testOptions(t))
	ctx := t.Context()
	var list corev1.PodList
	if err := c.List(ctx, &list, client.Limit(5)); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 5 {
		t.Errorf("Limit(5): %d items", len(list.Items))
	}
	err := c.List(ctx, &list, client.Continue("x"))
	if err == nil || err.Error() != "continue list option is not supported by the cache" {
		t.Errorf("Continue: error %v", err)
	}
}

// TestForms reads pods as unstructured objects and as metadata; each form
// has its own informer.
func TestForms(t *testing.T) {
	cluster := newFakeCluster()
	testPods(cluster)
	c := newTestCache(t, cluster, testOptions(t))
	ctx := t.Context()
	want := []string{"ns-7/pod-107", "ns-7/pod-207", "ns-7/pod-7"}
	opts := []client.ListOption{client.InNamespace("ns-7"), client.MatchingLabels{"app": "app-7"}}

	ul := &unstructured.UnstructuredList{}
	ul.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := c.List(ctx, ul, opts...); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, names(t, ul)); diff != "" {
		t.Errorf("unstructured (-want +got):\n%s", diff)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(podGVK)
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns-7", Name: "pod-7"}, u); err != nil {
		t.Fatal(err)
	}
	if node, _, _ := unstructured.NestedString(u.Object, "spec", "nodeName"); node != "node-7" {
		t.Errorf("unstructured Get: spec.nodeName %q", node)
	}

	ml := &metav1.PartialObjectMetadataList{}
	ml.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := c.List(ctx, ml, opts...); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, names(t, ml)); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	if ml.Items[0].Kind != "Pod" {
		t.Errorf("metadata item kind %q, want Pod", ml.Items[0].Kind)
	}
	if got := len(cluster.Sources(podGVK)); got != 2 {
		t.Errorf("%d pod informers, want one per form (2)", got)
	}
}

func TestClusterScoped(t *testing.T) {
	cluster := newFakeCluster()
	cluster.Create(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Labels: map[string]string{"zone": "a"}}})
	c := newTestCache(t, cluster, testOptions(t))
	var node corev1.Node
	// The namespace of a cluster-scoped key is ignored.
	if err := c.Get(t.Context(), client.ObjectKey{Namespace: "ns", Name: "node-1"}, &node); err != nil {
		t.Fatal(err)
	}
	var nodes corev1.NodeList
	if err := c.List(t.Context(), &nodes, client.MatchingLabels{"zone": "a"}); err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 1 {
		t.Errorf("List nodes: %d items", len(nodes.Items))
	}
	err := c.Get(t.Context(), client.ObjectKey{Name: "node-2"}, &node)
	if !apierrors.IsNotFound(err) {
		t.Errorf("Get of a missing node: %v, want NotFound", err)
	}
}

func TestNotStartedAndMissingInformer(t *testing.T) {
	cluster := newFakeCluster()
	c, err := newCache(fakeConfig(), testOptions(t), Options{}, cluster.newSource)
	if err != nil {
		t.Fatal(err)
	}
	var pod corev1.Pod
	var notStarted *cache.ErrCacheNotStarted
	if err := c.Get(t.Context(), client.ObjectKey{Name: "x"}, &pod); !errors.As(err, &notStarted) {
		t.Errorf("Get before Start: %v", err)
	}
	opts := testOptions(t)
	opts.ReaderFailOnMissingInformer = true
	c = newTestCache(t, cluster, opts)
	var notCached *cache.ErrResourceNotCached
	if err := c.List(t.Context(), &corev1.PodList{}); !errors.As(err, &notCached) {
		t.Errorf("List without an informer: %v", err)
	}
	if _, err := c.GetInformer(t.Context(), &corev1.Pod{}); err != nil {
		t.Fatal(err)
	}
	if err := c.List(t.Context(), &corev1.PodList{}); err != nil {
		t.Errorf("List with an informer: %v", err)
	}
}

func TestNewInformerRejected(t *testing.T) {
	opts := testOptions(t)
	opts.NewInformer = toolscache.NewSharedIndexInformer
	if _, err := New(fakeConfig(), opts); err == nil {
		t.Error("New accepted Options.NewInformer")
	}
}

// TestNamespacesAndSelectors checks that DefaultNamespaces and ByObject
// reach the informers' requests and the readers.
func TestNamespacesAndSelectors(t *testing.T) {
	cluster := newFakeCluster()
	testPods(cluster)
	cluster.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-1", Name: "a", Labels: map[string]string{"keep": "yes"}}})
	cluster.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-1", Name: "b"}})
	opts := testOptions(t)
	opts.DefaultNamespaces = map[string]cache.Config{"ns-1": {}, "ns-2": {}}
	opts.ByObject = map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {Label: labels.SelectorFromSet(labels.Set{"keep": "yes"})},
	}
	c := newTestCache(t, cluster, opts)
	ctx := t.Context()

	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.MatchingLabels{"tier": "tier-1"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Namespace != "ns-1" && p.Namespace != "ns-2" || p.Labels["tier"] != "tier-1" {
			t.Errorf("List returned %s/%s (tier %s)", p.Namespace, p.Name, p.Labels["tier"])
		}
	}
	if len(pods.Items) != 20 {
		t.Errorf("List over two namespaces: %d pods, want 20", len(pods.Items))
	}
	if err := c.List(ctx, &pods, client.Limit(25)); err != nil || len(pods.Items) != 25 {
		t.Errorf("List with Limit(25) over two namespaces: %d pods, %v", len(pods.Items), err)
	}
	if err := c.IndexField(ctx, &corev1.Pod{}, "spec.nodeName", nodeNameIndex); err != nil {
		t.Fatal(err)
	}
	if err := c.List(ctx, &pods, client.MatchingFields{"spec.nodeName": "node-2"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ns-2/pod-2"}, names(t, &pods)); diff != "" {
		t.Errorf("field index over two namespaces (-want +got):\n%s", diff)
	}
	if err := c.List(ctx, &pods, client.InNamespace("ns-3")); err == nil || !strings.Contains(err.Error(), "unknown namespace") {
		t.Errorf("List in an unconfigured namespace: %v", err)
	}
	var pod corev1.Pod
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns-3", Name: "pod-3"}, &pod); err == nil {
		t.Errorf("Get in an unconfigured namespace succeeded")
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "ns-1", Name: "pod-1"}, &pod); err != nil {
		t.Error(err)
	}
	var got []string
	for _, s := range cluster.Sources(podGVK) {
		got = append(got, s.ns)
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string{"ns-1", "ns-2"}, got); diff != "" {
		t.Errorf("pod informers' namespaces (-want +got):\n%s", diff)
	}

	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"ns-1/a"}, cmNames(cms)); diff != "" {
		t.Errorf("config maps (-want +got):\n%s", diff)
	}
	for _, s := range cluster.Sources(configMapGVK) {
		for _, r := range s.Requests() {
			if r.LabelSelector != "keep=yes" {
				t.Errorf("config map request with label selector %q", r.LabelSelector)
			}
		}
	}
}

func cmNames(l corev1.ConfigMapList) []string {
	var out []string
	for _, cm := range l.Items {
		out = append(out, cm.Namespace+"/"+cm.Name)
	}
	return out
}

// TestInformer checks that handlers added through GetInformer see events,
// that transforms run, and that RemoveInformer stops the informer.
func TestInformer(t *testing.T) {
	cluster := newFakeCluster()
	cluster.Create(pods.Pod(1, 10))
	opts := testOptions(t)
	opts.DefaultTransform = func(obj any) (any, error) {
		obj.(client.Object).SetManagedFields(nil)
		obj.(client.Object).SetAnnotations(map[string]string{"transformed": "yes"})
		return obj, nil
	}
	c := newTestCache(t, cluster, opts)
	ctx := t.Context()
	inf, err := c.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []string
	record := func(verb string, obj any) {
		mu.Lock()
		defer mu.Unlock()
		if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		p := obj.(*corev1.Pod)
		events = append(events, verb+" "+p.Name+" "+p.Annotations["transformed"])
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { record("add", obj) },
		UpdateFunc: func(_, obj any) { record("update", obj) },
		DeleteFunc: func(obj any) { record("delete", obj) },
	})
	if err != nil {
		t.Fatal(err)
	}
	cluster.Create(pods.Pod(2, 10))
	p := pods.Pod(2, 10)
	p.Labels["new"] = "label"
	cluster.Update(p)
	cluster.Delete(p)
	want := []string{"add pod-1 yes", "add pod-2 yes", "update pod-2 yes", "delete pod-2 yes"}
	waitFor(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(events) >= len(want)
	})
	mu.Lock()
	if diff := cmp.Diff(want, events); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	mu.Unlock()
	if !reg.HasSynced() {
		t.Error("registration not synced")
	}
	if err := inf.RemoveEventHandler(reg); err != nil {
		t.Fatal(err)
	}
	if err := c.RemoveInformer(ctx, &corev1.Pod{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, inf.IsStopped)
	// A new informer replaces the removed one on the next read.
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil || len(pods.Items) != 1 {
		t.Errorf("List after RemoveInformer: %d pods, %v", len(pods.Items), err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("condition not met within 30s")
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestWaitForCacheSyncAndStart checks Start's and WaitForCacheSync's
// contract.
func TestWaitForCacheSyncAndStart(t *testing.T) {
	cluster := newFakeCluster()
	testPods(cluster)
	c, err := newCache(fakeConfig(), testOptions(t), Options{}, cluster.newSource)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetInformer(t.Context(), &corev1.Pod{}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if c.WaitForCacheSync(ctx) {
		t.Error("WaitForCacheSync before Start returned true")
	}
	startCache(t, c)
	if !c.WaitForCacheSync(t.Context()) {
		t.Error("WaitForCacheSync returned false")
	}
	if err := c.Start(t.Context()); err == nil {
		t.Error("a second Start succeeded")
	}
	inf, err := c.GetInformer(t.Context(), &corev1.Pod{}, cache.BlockUntilSynced(false))
	if err != nil || !inf.HasSynced() {
		t.Errorf("GetInformer: %v, synced %v", err, inf != nil && inf.HasSynced())
	}
	var pods corev1.PodList
	if err := c.List(t.Context(), &pods, client.UnsafeDisableDeepCopy); err != nil || len(pods.Items) != 300 {
		t.Errorf("List: %d, %v", len(pods.Items), err)
	}
}
