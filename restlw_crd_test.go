package informer_test

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"unsafe"

	gocmp "github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/internal/crdtypes"
)

// TestRESTListerWatcherDecodesCRDsInterned lists then watches custom
// resources (W8's workloads) over JSON: the objects equal the server's, as
// apimachinery's codec decodes them, and the strings their replicas repeat
// are one copy, read into the intern table as they were decoded.
func TestRESTListerWatcherDecodesCRDsInterned(t *testing.T) {
	srv, lw := workloadServer(t)
	workloads := crdtypes.New(17)
	var want []*crdtypes.Workload
	for i := range workloads[:16] {
		want = append(want, createWorkload(srv, &workloads[i]))
	}
	var added *crdtypes.Workload
	list, ev := testListerWatcher(t, srv, crdtypes.Resource, lw, func() {
		added = createWorkload(srv, &workloads[16])
	})
	byKey := func(a, b *crdtypes.Workload) int {
		return cmp.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	}
	slices.SortFunc(want, byKey)
	slices.SortFunc(list.Items, byKey)
	if diff := gocmp.Diff(want, list.Items); diff != "" {
		t.Fatalf("listed workloads (-server +listed):\n%s", diff)
	}
	if diff := gocmp.Diff(watch.Event{Type: watch.Added, Object: added}, ev); diff != "" {
		t.Fatalf("watch event (-want +got):\n%s", diff)
	}
	// Workloads 0, 8 and 16 are replicas of one template. A string becomes
	// the table's from its second sighting: 8 and 16 hold that copy.
	byName := map[string]*crdtypes.Workload{}
	for _, w := range list.Items {
		byName[w.Name] = w
	}
	second, third := byName[workloads[8].Name], ev.Object.(*crdtypes.Workload)
	if unsafe.StringData(second.Spec.QueueName) != unsafe.StringData(third.Spec.QueueName) {
		t.Errorf("workload %s: its queue name is not the copy workload %s holds", third.Name, second.Name)
	}
	image := func(w *crdtypes.Workload) *byte {
		return unsafe.StringData(w.Spec.PodSets[0].Template.Spec.Containers[0].Image)
	}
	if image(second) != image(third) {
		t.Errorf("workload %s: its image is not the copy workload %s holds", third.Name, second.Name)
	}
}

// TestInformerDeduplicatesCRDsOnDecode runs an informer deduplicating W8's
// workloads from a JSON server, listed then watched: the typed JSON
// decoder shares the pod sets of a template's replicas, and every cached
// workload equals the server's.
func TestInformerDeduplicatesCRDsOnDecode(t *testing.T) {
	srv, lw := workloadServer(t)
	workloads := crdtypes.New(40)
	want := map[string]*crdtypes.Workload{}
	create := func(w *crdtypes.Workload) {
		created := createWorkload(srv, w)
		want[created.Namespace+"/"+created.Name] = created
	}
	for i := range workloads[:24] {
		create(&workloads[i])
	}
	inf := informer.MustNewInformer(t, lw, informer.InformerOptions[*crdtypes.Workload]{Deduplicate: new(true), DisableWatchList: true})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); inf.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	informer.Eventually(t, "the informer synced", inf.HasSynced)
	srv.WaitForWatches(t, crdtypes.Resource, 1)
	for i := range workloads[24:] {
		create(&workloads[24+i])
	}
	var cached []*crdtypes.Workload
	informer.Eventually(t, "the informer cached every workload", func() bool {
		var err error
		cached, err = inf.Lister().List(nil)
		return err == nil && len(cached) == len(want)
	})
	got := map[string]*crdtypes.Workload{}
	podSets := map[*crdtypes.PodSet]bool{}
	for _, w := range cached {
		got[w.Namespace+"/"+w.Name] = w
		podSets[unsafe.SliceData(w.Spec.PodSets)] = true
	}
	if diff := informer.DiffLarge(want, got); diff != "" {
		t.Fatalf("cached workloads (-server +cache):\n%s", diff)
	}
	// 8 templates: each template's pod sets are kept once, but by the
	// first replica decoded (a sub-object is shared from its second
	// sighting).
	if len(podSets) > 2*8 {
		t.Errorf("%d pod set lists for 8 templates, want at most 2 each", len(podSets))
	}
}

// workloadServer returns a fake JSON server of W8's workloads and a REST
// ListerWatcher of them.
func workloadServer(t *testing.T) (*fakeAPIServer, informer.ListerWatcher[*crdtypes.Workload]) {
	t.Helper()
	srv := newFakeAPIServer(t, crdtypes.AddToScheme)
	srv.Serve(crdtypes.Resource, crdtypes.GroupVersion.WithKind("Workload"), false)
	scheme := runtime.NewScheme()
	if err := crdtypes.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	lw, err := informer.NewRESTListerWatcher[*crdtypes.Workload](srv.Config(), informer.RESTOptions{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return srv, lw
}

// createWorkload creates w on srv and returns the server's object without
// its kind, as the REST ListerWatcher returns typed objects.
func createWorkload(srv *fakeAPIServer, w *crdtypes.Workload) *crdtypes.Workload {
	w.TypeMeta = metav1.TypeMeta{APIVersion: crdtypes.GroupVersion.String(), Kind: "Workload"}
	created := srv.Create(crdtypes.Resource, w).(*crdtypes.Workload)
	created.TypeMeta = metav1.TypeMeta{}
	return created
}
