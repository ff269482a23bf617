package informer_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubetyped/informer"
)

// TestWarmRestartQuietCaughtUpByListedVersions (issue 32 item 2): an
// informer over the REST ListerWatcher, restored from its snapshot while
// nothing of what it lists has changed but the cluster has moved on, lists
// the server's versions (the metadata of its pods, with its selector) and
// syncs from the snapshot at once: the fake server sends no bookmark, so
// without the versions it would wait catchUpWait and list everything
// again.
func TestWarmRestartQuietCaughtUpByListedVersions(t *testing.T) {
	configMaps := corev1.SchemeGroupVersion.WithResource("configmaps")
	srv := newFakeAPIServer(t)
	srv.Serve(podsResource, podKind, true)
	srv.Serve(configMaps, corev1.SchemeGroupVersion.WithKind("ConfigMap"), true)
	for _, name := range []string{"a", "b", "c"} {
		p := informer.NewPod("default", name, "")
		p.Labels = map[string]string{"app": "web"}
		srv.Create(podsResource, p)
	}
	srv.Create(podsResource, informer.NewPod("default", "other", "")) // not selected
	dir := filepath.Join(t.TempDir(), "snapshots")
	newInformer := func() *informer.Informer[*corev1.Pod] {
		lw, err := informer.NewRESTListerWatcher[*corev1.Pod](srv.Config(), informer.RESTOptions{
			TweakListOptions: func(o *metav1.ListOptions) { o.LabelSelector = "app=web" },
		})
		if err != nil {
			t.Fatal(err)
		}
		return informer.MustNewInformer(t, lw, informer.InformerOptions[*corev1.Pod]{Name: "pods", Snapshot: informer.SnapshotOptions{Dir: dir}})
	}
	cold := newInformer()
	if got := runUntilSynced(t, cold).Snapshot.Saved; got != 1 {
		t.Fatalf("the cold informer saved %d snapshots, want 1", got)
	}
	want := cachedVersionsOf(t, cold)
	srv.Create(configMaps, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "lease-like"}})
	before := len(srv.Requests())

	warm := newInformer()
	stats := runUntilSynced(t, warm)
	if diff := cmp.Diff(informer.SnapshotStats{Restored: 1, RestoredObjects: 3, ResumedWatches: 1, Saved: 1, LastSaveBytes: stats.Snapshot.LastSaveBytes}, stats.Snapshot); diff != "" {
		t.Errorf("snapshot stats (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, cachedVersionsOf(t, warm)); diff != "" {
		t.Errorf("cache (-want +got):\n%s", diff)
	}
	type podsRequest struct {
		Watch, Metadata bool
		Query           string
	}
	var got []podsRequest
	for _, r := range srv.Requests()[before:] {
		if strings.HasSuffix(r.Path, "/pods") {
			got = append(got, podsRequest{Watch: r.Watch, Metadata: strings.Contains(r.Accept, "as=PartialObjectMetadataList"), Query: r.Query})
		}
	}
	// The one-item read of the current version, the resumed watch, the
	// versions list; then, once synced, at most the watch from the listed
	// version (the informer may stop before it is made). No list of the
	// pods themselves.
	wantRequests := []podsRequest{{Query: "labelSelector=app=web"}, {Watch: true, Query: "labelSelector=app=web"}, {Metadata: true, Query: "labelSelector=app=web"}}
	if len(got) > len(wantRequests) && got[len(got)-1].Watch {
		got = got[:len(got)-1]
	}
	if diff := cmp.Diff(wantRequests, got); diff != "" {
		t.Errorf("requests for pods (-want +got):\n%s", diff)
	}
}

// cachedVersionsOf returns the resource version of each object inf caches,
// by key.
func cachedVersionsOf[T informer.Object](t *testing.T, inf *informer.Informer[T]) map[string]string {
	t.Helper()
	objs, err := inf.Lister().List(nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, obj := range objs {
		out[obj.GetNamespace()+"/"+obj.GetName()] = obj.GetResourceVersion()
	}
	return out
}
