package crcache

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	informer "github.com/kubetyped/informer"
	"github.com/kubetyped/informer/crcache/internal/pods"
)

// versions maps "namespace/name" to the resource version of every pod of
// list.
func versions(list client.ObjectList) map[string]string {
	out := map[string]string{}
	switch l := list.(type) {
	case *corev1.PodList:
		for i := range l.Items {
			out[client.ObjectKeyFromObject(&l.Items[i]).String()] = l.Items[i].ResourceVersion
		}
	case *unstructured.UnstructuredList:
		for i := range l.Items {
			out[client.ObjectKeyFromObject(&l.Items[i]).String()] = l.Items[i].GetResourceVersion()
		}
	}
	return out
}

// TestSnapshotRestart: with Options.Snapshot, a cache stopped cleanly
// writes each informer's snapshot, and a new cache over the same cluster
// starts from it: it serves the writes made while no cache ran, having
// listed nothing but the current resource version, and goes on watching.
// Typed and unstructured pods alike.
func TestSnapshotRestart(t *testing.T) {
	for _, tc := range []struct {
		name string
		list func() client.ObjectList
	}{
		{"typed", func() client.ObjectList { return &corev1.PodList{} }},
		{"unstructured", func() client.ObjectList {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(podGVK.GroupVersion().WithKind("PodList"))
			return l
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cluster := newFakeCluster()
			for i := range 20 {
				cluster.Create(pods.Pod(i, 2))
			}
			lean := Options{Snapshot: informer.SnapshotOptions{Dir: filepath.Join(t.TempDir(), "snapshots")}}

			// The first process: reads pods, then stops cleanly.
			first, err := newCache(fakeConfig(), testOptions(t), lean, cluster.newSource)
			if err != nil {
				t.Fatal(err)
			}
			stop := startCache(t, first)
			if !first.WaitForCacheSync(t.Context()) {
				t.Fatal("cache not synced")
			}
			if err := first.List(t.Context(), tc.list()); err != nil {
				t.Fatal(err)
			}
			stop() // a clean stop: each informer writes its snapshot
			snapshots, err := filepath.Glob(filepath.Join(lean.Snapshot.Dir, "*.snapshot"))
			if err != nil || len(snapshots) != 1 {
				t.Fatalf("snapshot files %q (%v), want one", snapshots, err)
			}
			stoppedAt := cluster.rv

			// While no process runs: an update, a delete, a create.
			changed := pods.Pod(3, 2)
			changed.Labels["restart"] = "changed"
			cluster.Update(changed)
			cluster.Delete(pods.Pod(4, 2))
			cluster.Create(pods.Pod(20, 2))

			second := newTestCacheWith(t, cluster, testOptions(t), lean)
			got := tc.list()
			if err := second.List(t.Context(), got); err != nil {
				t.Fatal(err)
			}
			want := &corev1.PodList{}
			for _, obj := range cluster.objects[podGVK] {
				want.Items = append(want.Items, *obj.(*corev1.Pod))
			}
			if diff := cmp.Diff(versions(want), versions(got)); diff != "" {
				t.Errorf("restarted cache against the cluster (-want +got):\n%s", diff)
			}
			sources := cluster.Sources(podGVK)
			requests := sources[len(sources)-1].Requests()
			if len(requests) < 2 || requests[0].Limit != 1 || requests[1].ResourceVersion != strconv.Itoa(stoppedAt) {
				t.Errorf("restarted informer's requests %+v, want the current version (limit 1) and a watch from %d", requests, stoppedAt)
			}

			// It goes on watching.
			changed.Labels["restart"] = "after"
			cluster.Update(changed)
			deadline := time.Now().Add(time.Minute)
			for {
				pod := &corev1.Pod{}
				if err := second.Get(t.Context(), client.ObjectKeyFromObject(changed), pod); err != nil {
					t.Fatal(err)
				}
				if pod.Labels["restart"] == "after" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the restarted cache did not receive an update within a minute")
				}
				time.Sleep(time.Millisecond)
			}
			if _, err := os.Stat(snapshots[0]); err != nil {
				t.Errorf("the snapshot restored from: %v", err)
			}
		})
	}
}
