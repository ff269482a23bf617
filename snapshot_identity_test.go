package informer_test

import (
	"context"
	"path/filepath"
	"sort"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/informertest"
	"github.com/kubetyped/informer/internal/prodpods"
	"github.com/kubetyped/informer/internal/wire"
)

var secretsResource = corev1.SchemeGroupVersion.WithResource("secrets")

// snapshotFiles returns the snapshot files in dir.
func snapshotFiles(t *testing.T, dir string) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, "*.snapshot"))
	if err != nil {
		t.Fatal(err)
	}
	return matches
}

// runUntilSynced runs inf until it has synced, then stops it (a clean stop
// writes its snapshot), and returns its stats once Run has returned.
func runUntilSynced[T informer.Object](t *testing.T, inf *informer.Informer[T]) informer.InformerStats {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); inf.Run(ctx) }()
	informer.Eventually(t, "the informer synced", inf.HasSynced)
	cancel()
	<-done
	return inf.Stats()
}

// cachedKeysAndUIDs returns the keys and UIDs of what inf caches, sorted.
func cachedKeysAndUIDs[T informer.Object](t *testing.T, inf *informer.Informer[T]) []string {
	t.Helper()
	objs, err := inf.Lister().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, obj := range objs {
		out = append(out, obj.GetNamespace()+"/"+obj.GetName()+" "+string(obj.GetUID()))
	}
	sort.Strings(out)
	return out
}

// TestSnapshotsNeverHoldSecrets makes a Secret informer every way the
// package offers (issue 32 item 9): none writes a snapshot unless
// AllowSensitive is set, whatever InformerOptions.Resource says, because
// the resource is taken from the ListerWatcher, which knows it; an informer
// of unstructured objects over a ListerWatcher that does not say what it
// lists writes none either, since its objects could be Secrets.
func TestSnapshotsNeverHoldSecrets(t *testing.T) {
	srv := newFakeAPIServer(t)
	srv.Serve(secretsResource, corev1.SchemeGroupVersion.WithKind("Secret"), true)
	srv.Create(secretsResource, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "token"}, Data: map[string][]byte{"token": []byte("hunter2")}})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	ways := map[string]func(t *testing.T, snap informer.SnapshotOptions) informer.InformerStats{
		"For typed": func(t *testing.T, snap informer.SnapshotOptions) informer.InformerStats {
			f, err := informer.NewFactory(srv.Config(), informer.FactoryOptions{Snapshot: snap})
			must(err)
			defer f.Shutdown()
			inf, err := informer.For(f, informer.InformerOptions[*corev1.Secret]{})
			must(err)
			return runUntilSynced(t, inf)
		},
		"For metadata": func(t *testing.T, snap informer.SnapshotOptions) informer.InformerStats {
			f, err := informer.NewFactory(srv.Config(), informer.FactoryOptions{Snapshot: snap})
			must(err)
			defer f.Shutdown()
			inf, err := informer.For(f, informer.InformerOptions[*metav1.PartialObjectMetadata]{Resource: secretsResource})
			must(err)
			return runUntilSynced(t, inf)
		},
		"For unstructured": func(t *testing.T, snap informer.SnapshotOptions) informer.InformerStats {
			f, err := informer.NewFactory(srv.Config(), informer.FactoryOptions{Snapshot: snap})
			must(err)
			defer f.Shutdown()
			inf, err := informer.For(f, informer.InformerOptions[*unstructured.Unstructured]{Resource: secretsResource})
			must(err)
			return runUntilSynced(t, inf)
		},
		"NewInformer REST": func(t *testing.T, snap informer.SnapshotOptions) informer.InformerStats {
			lw, err := informer.NewRESTListerWatcher[*corev1.Secret](srv.Config(), informer.RESTOptions{})
			must(err)
			return runUntilSynced(t, informer.MustNewInformer(t, lw, informer.InformerOptions[*corev1.Secret]{Name: "secrets", Snapshot: snap}))
		},
		"NewInformer metadata, no Resource in the informer's options": func(t *testing.T, snap informer.SnapshotOptions) informer.InformerStats {
			lw, err := informer.NewMetadataListerWatcher(srv.Config(), informer.RESTOptions{Resource: secretsResource})
			must(err)
			return runUntilSynced(t, informer.MustNewInformer(t, lw, informer.InformerOptions[*metav1.PartialObjectMetadata]{Name: "secrets", Snapshot: snap}))
		},
		"NewInformer dynamic, no Resource in the informer's options": func(t *testing.T, snap informer.SnapshotOptions) informer.InformerStats {
			lw, err := informer.NewDynamicListerWatcher(srv.Config(), informer.RESTOptions{Resource: secretsResource})
			must(err)
			return runUntilSynced(t, informer.MustNewInformer(t, lw, informer.InformerOptions[*unstructured.Unstructured]{Name: "secrets", Snapshot: snap}))
		},
		"NewInformer sharded dynamic": func(t *testing.T, snap informer.SnapshotOptions) informer.InformerStats {
			lw, err := informer.NewDynamicListerWatcher(srv.Config(), informer.RESTOptions{Resource: secretsResource})
			must(err)
			shard := &informer.Shard{Index: 0, Count: 1, FilterOnClient: true}
			return runUntilSynced(t, informer.MustNewInformer(t, lw, informer.InformerOptions[*unstructured.Unstructured]{Name: "secrets", Shard: shard, Snapshot: snap}))
		},
	}
	for name, run := range ways {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "snapshots")
			stats := run(t, informer.SnapshotOptions{Dir: dir})
			if files := snapshotFiles(t, dir); len(files) != 0 || stats.Snapshot.Saved != 0 {
				t.Fatalf("without AllowSensitive: %d saved, files %q; want none", stats.Snapshot.Saved, files)
			}
			stats = run(t, informer.SnapshotOptions{Dir: dir, AllowSensitive: true})
			if files := snapshotFiles(t, dir); len(files) != 1 || stats.Snapshot.Saved != 1 {
				t.Fatalf("with AllowSensitive: %d saved, files %q; want one", stats.Snapshot.Saved, files)
			}
		})
	}
	t.Run("unstructured of an unnamed resource", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "snapshots")
		lw := informertest.NewFakeListerWatcher[*unstructured.Unstructured]()
		lw.SetList("1", &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"namespace": "default", "name": "token", "resourceVersion": "1"}}})
		stats := runUntilSynced(t, informer.MustNewInformer(t, lw, informer.InformerOptions[*unstructured.Unstructured]{Name: "things", Snapshot: informer.SnapshotOptions{Dir: dir}}))
		if files := snapshotFiles(t, dir); len(files) != 0 || stats.Snapshot.Saved != 0 {
			t.Fatalf("%d saved, files %q; want none", stats.Snapshot.Saved, files)
		}
	})
}

// TestSnapshotScopeIsWhatTheListerWatcherLists (issue 32 item 10): a
// snapshot written by an informer made with NewInformer is restored only by
// one whose ListerWatcher lists the same: the same dropped fields, the same
// resource, whatever the informers' options say.
func TestSnapshotScopeIsWhatTheListerWatcherLists(t *testing.T) {
	t.Run("dropped fields", func(t *testing.T) {
		srv := newFakeAPIServer(t)
		srv.Serve(podsResource, podKind, true)
		srv.Create(podsResource, informer.NewPod("default", "a", ""))
		dir := filepath.Join(t.TempDir(), "snapshots")
		newInformer := func(drop []string) *informer.Informer[*corev1.Pod] {
			lw, err := informer.NewRESTListerWatcher[*corev1.Pod](srv.Config(), informer.RESTOptions{DropFields: drop})
			if err != nil {
				t.Fatal(err)
			}
			return informer.MustNewInformer(t, lw, informer.InformerOptions[*corev1.Pod]{Name: "pods", Snapshot: informer.SnapshotOptions{Dir: dir}})
		}
		runUntilSynced(t, newInformer([]string{informer.ManagedFields}))
		got := runUntilSynced(t, newInformer(nil)).Snapshot
		if diff := cmp.Diff(informer.SnapshotStats{Rejected: 1, Saved: 1, LastSaveBytes: got.LastSaveBytes}, got); diff != "" {
			t.Errorf("without the dropped fields: snapshot stats (-want +got):\n%s", diff)
		}
		got = runUntilSynced(t, newInformer([]string{informer.ManagedFields})).Snapshot
		if diff := cmp.Diff(informer.SnapshotStats{Rejected: 1, Saved: 1, LastSaveBytes: got.LastSaveBytes}, got); diff != "" {
			t.Errorf("with the dropped fields again: snapshot stats (-want +got):\n%s", diff)
		}
	})
	t.Run("resource", func(t *testing.T) {
		srv := newFakeAPIServer(t, addWidgetTypes)
		gadgets := schema.GroupVersionResource{Group: widgetsGV.Group, Version: widgetsGV.Version, Resource: "gadgets"}
		srv.Serve(widgetsResource, widgetKind, false)
		srv.Serve(gadgets, widgetKind, false)
		srv.Create(widgetsResource, newWidget("default", "w", 1))
		dir := filepath.Join(t.TempDir(), "snapshots")
		newInformer := func(resource schema.GroupVersionResource) *informer.Informer[*unstructured.Unstructured] {
			lw, err := informer.NewDynamicListerWatcher(srv.Config(), informer.RESTOptions{Resource: resource})
			if err != nil {
				t.Fatal(err)
			}
			return informer.MustNewInformer(t, lw, informer.InformerOptions[*unstructured.Unstructured]{Name: "things", Snapshot: informer.SnapshotOptions{Dir: dir}})
		}
		runUntilSynced(t, newInformer(widgetsResource))
		inf := newInformer(gadgets)
		got := runUntilSynced(t, inf).Snapshot
		if diff := cmp.Diff(informer.SnapshotStats{Saved: 1, LastSaveBytes: got.LastSaveBytes}, got); diff != "" {
			t.Errorf("the gadgets informer: snapshot stats (-want +got):\n%s", diff)
		}
		if keys := cachedKeysAndUIDs(t, inf); len(keys) != 0 {
			t.Errorf("the gadgets informer caches %q, want nothing", keys)
		}
		if files := snapshotFiles(t, dir); len(files) != 2 {
			t.Errorf("snapshot files %q, want one per resource", files)
		}
	})
}

// TestSnapshotRestoredOnlyFromItsCluster (issue 32 item 1): a snapshot is
// never restored from another server, nor from a cluster created again
// behind the same address (another kube-system namespace UID): the
// informer starts cold, logs and counts the refusal, and caches the
// server's objects only.
func TestSnapshotRestoredOnlyFromItsCluster(t *testing.T) {
	// pods are the same names in both clusters, with other contents.
	pods := func(cluster string) []*corev1.Pod {
		var out []*corev1.Pod
		for _, name := range []string{"a", "b"} {
			p := informer.NewPod("default", name, "")
			p.UID = types.UID("uid-" + cluster + "-" + name)
			out = append(out, p)
		}
		return out
	}
	newInformer := func(srv *fakeAPIServer, dir string) *informer.Informer[*corev1.Pod] {
		lw, err := informer.NewRESTListerWatcher[*corev1.Pod](srv.Config(), informer.RESTOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return informer.MustNewInformer(t, lw, informer.InformerOptions[*corev1.Pod]{Name: "pods", DisableWatchList: true, Snapshot: informer.SnapshotOptions{Dir: dir}})
	}
	clusterA := func(t *testing.T) (*fakeAPIServer, string) {
		srv := newFakeAPIServer(t)
		srv.Serve(podsResource, podKind, true)
		srv.SetClusterUID("cluster-a")
		for _, p := range pods("a") {
			srv.Create(podsResource, p)
		}
		dir := filepath.Join(t.TempDir(), "snapshots")
		if got := runUntilSynced(t, newInformer(srv, dir)).Snapshot.Saved; got != 1 {
			t.Fatalf("cluster A's informer saved %d snapshots, want 1", got)
		}
		return srv, dir
	}
	wantB := []string{"default/a uid-b-a", "default/b uid-b-b"}
	check := func(t *testing.T, inf *informer.Informer[*corev1.Pod], stats informer.InformerStats) {
		t.Helper()
		if diff := cmp.Diff(informer.SnapshotStats{Rejected: 1, Saved: 1, LastSaveBytes: stats.Snapshot.LastSaveBytes}, stats.Snapshot); diff != "" {
			t.Errorf("snapshot stats (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(wantB, cachedKeysAndUIDs(t, inf)); diff != "" {
			t.Errorf("cache (-want +got):\n%s", diff)
		}
	}
	t.Run("another server", func(t *testing.T) {
		_, dir := clusterA(t)
		b := newFakeAPIServer(t)
		b.Serve(podsResource, podKind, true)
		b.SetClusterUID("cluster-b")
		for _, p := range pods("b") {
			b.Create(podsResource, p)
		}
		inf := newInformer(b, dir)
		check(t, inf, runUntilSynced(t, inf))
	})
	t.Run("cluster created again behind the same address", func(t *testing.T) {
		srv, dir := clusterA(t)
		srv.SetClusterUID("cluster-b")
		for _, p := range pods("a") {
			srv.Delete(podsResource, p)
		}
		for _, p := range pods("b") {
			srv.Create(podsResource, p)
		}
		inf := newInformer(srv, dir)
		check(t, inf, runUntilSynced(t, inf))
	})
	t.Run("the cluster's identity no longer readable", func(t *testing.T) {
		srv, dir := clusterA(t)
		srv.SetClusterUID("")
		for _, p := range pods("a") {
			srv.Delete(podsResource, p)
		}
		for _, p := range pods("b") {
			srv.Create(podsResource, p)
		}
		inf := newInformer(srv, dir)
		check(t, inf, runUntilSynced(t, inf))
	})
	t.Run("the same cluster", func(t *testing.T) {
		srv, dir := clusterA(t)
		inf := newInformer(srv, dir)
		stats := runUntilSynced(t, inf)
		if diff := cmp.Diff(informer.SnapshotStats{Restored: 1, RestoredObjects: 2, ResumedWatches: 1, Saved: 1, LastSaveBytes: stats.Snapshot.LastSaveBytes}, stats.Snapshot); diff != "" {
			t.Errorf("snapshot stats (-want +got):\n%s", diff)
		}
	})
}

// TestListerWatchersShareOneTable (issue 33): REST ListerWatchers of
// several servers given one sub-object sharing table hold each string, and
// each sub-object, that they decode once. (The table keeps a value from
// the second time it is seen: the first pod's copies are its own.)
func TestListerWatchersShareOneTable(t *testing.T) {
	table := wire.NewSubObjectSharingTable()
	pods := prodpods.New(3) // replicas of one template
	var listed []*corev1.Pod
	for i := range 3 {
		srv := newFakeAPIServer(t)
		srv.Serve(podsResource, podKind, true)
		srv.Create(podsResource, &pods[i])
		lw, err := informer.NewRESTListerWatcher[*corev1.Pod](srv.Config(), informer.RESTOptions{})
		if err != nil {
			t.Fatal(err)
		}
		shared, err := informer.DecodingWith(lw, table)
		if err != nil {
			t.Fatal(err)
		}
		res, err := shared.List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Items) != 1 {
			t.Fatalf("server %d listed %d pods, want 1", i, len(res.Items))
		}
		listed = append(listed, res.Items[0])
	}
	a, b := listed[1], listed[2]
	if a.Spec.Containers[0].Image != b.Spec.Containers[0].Image || a.UID == b.UID {
		t.Fatalf("the fixture's pods should share their image, not their UID")
	}
	if unsafe.StringData(a.Spec.Containers[0].Image) != unsafe.StringData(b.Spec.Containers[0].Image) {
		t.Error("the image both decoded is held twice")
	}
	if unsafe.SliceData(a.Spec.Containers[0].Env) != unsafe.SliceData(b.Spec.Containers[0].Env) {
		t.Error("the env list both decoded is held twice")
	}
	if _, err := informer.DecodingWith(informertest.NewFakeListerWatcher[*corev1.Pod](), table); err == nil {
		t.Error("a ListerWatcher that does not decode accepted a table")
	}
}
