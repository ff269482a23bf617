package informer_test

import (
	"context"
	"testing"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	informer "github.com/kubetyped/informer"
	"github.com/kubetyped/informer/internal/prodpods"
)

// TestDynamicInformerDecodesLean runs a dynamic informer over production-
// like pods served as JSON, listed then watched: every cached object equals
// what client-go's dynamic client decodes from the same server, the
// strings repeated between pods (a container's image) are kept once, and
// with Deduplicate the sub-trees repeated between the replicas of a
// template (a container's env list) are kept once too, while without it
// each pod has its own.
func TestDynamicInformerDecodesLean(t *testing.T) {
	for _, dedup := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "Deduplicate"}[dedup], func(t *testing.T) {
			srv := newFakeAPIServer(t)
			srv.Serve(podsResource, podKind, false)
			pods := prodpods.New(60)
			for i := range pods[:40] {
				srv.Create(podsResource, &pods[i])
			}
			lw, err := informer.NewDynamicListerWatcher(srv.Config(), informer.RESTOptions{Resource: podsResource})
			if err != nil {
				t.Fatal(err)
			}
			inf := runInformerOf(t, srv, podsResource, lw, informer.InformerOptions[*unstructured.Unstructured]{Deduplicate: new(dedup), DisableWatchList: true})
			for i := range pods[40:] {
				srv.Create(podsResource, &pods[40+i])
			}
			var cached []*unstructured.Unstructured
			informer.Eventually(t, "the informer cached every pod", func() bool {
				cached, err = inf.Lister().List(nil)
				return err == nil && len(cached) == len(pods)
			})

			client, err := dynamic.NewForConfig(srv.Config())
			if err != nil {
				t.Fatal(err)
			}
			list, err := client.Resource(podsResource).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]*unstructured.Unstructured{}
			templates := map[string]bool{}
			for i := range list.Items {
				u := &list.Items[i]
				want[u.GetNamespace()+"/"+u.GetName()] = u
				templates[u.GetLabels()["app"]] = true
			}
			got := map[string]*unstructured.Unstructured{}
			images := map[*byte]bool{}
			envs := map[*any]bool{}
			for _, u := range cached {
				got[u.GetNamespace()+"/"+u.GetName()] = u
				containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "containers")
				first := u.Object["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
				images[unsafe.StringData(first["image"].(string))] = true
				if env, ok := first["env"].([]any); ok && len(containers) > 0 {
					envs[unsafe.SliceData(env)] = true
				}
			}
			if diff := informer.DiffLarge(want, got); diff != "" {
				t.Fatalf("cached pods (-client-go's dynamic client +cache):\n%s", diff)
			}
			// A string or sub-tree is shared from its second sighting on.
			if len(images) > 2*len(templates) {
				t.Errorf("%d copies of the first container's image for %d templates, want at most 2 each", len(images), len(templates))
			}
			if dedup && len(envs) > 2*len(templates) {
				t.Errorf("%d env lists for %d templates, want at most 2 each", len(envs), len(templates))
			}
			if !dedup && len(envs) != len(pods) {
				t.Errorf("%d env lists for %d pods without Deduplicate, want one each", len(envs), len(pods))
			}
		})
	}
}
