package informer

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TestRelistKeepsUnchangedCachedObjects relists, by pages, by one list and
// by a streaming list, objects of which some are unchanged: those keep
// their cached object, which handlers get as both old and new; the changed
// ones are replaced, and every value equals what was listed.
func TestRelistKeepsUnchangedCachedObjects(t *testing.T) {
	for _, mode := range []string{"paginated", "one list", "streaming"} {
		t.Run(mode, func(t *testing.T) {
			inf, lw := plInformer(t, InformerOptions[*corev1.Pod]{})
			lw.SetDisableWatchList(mode != "streaming")
			lw.SetPagination(mode == "paginated")
			var listed []*corev1.Pod
			for i := range 1200 { // more than a page of 500
				listed = append(listed, NewPod("ns", fmt.Sprintf("p%d", i), "10", PodNode("node-1")))
			}
			lw.SetList("10", listed...)
			capture := NewUpdateCapture()
			_, err := inf.AddEventHandler(capture)
			plMust(t, err)
			plRun(t, inf)
			Eventually(t, "the first list to be cached", inf.HasSynced)
			before := map[string]*corev1.Pod{}
			for _, p := range inf.indexer.List() {
				before[KeyOf(p)] = p
			}

			changed := listed[7].DeepCopy()
			changed.ResourceVersion = "11"
			changed.Spec.NodeName = "node-2"
			relisted := append([]*corev1.Pod{changed}, listed[:7]...)
			relisted = append(relisted, listed[8:]...)
			lw.SetList("12", relisted...)
			plMust(t, lw.FailWatch(plCtx(t), apierrors.NewResourceExpired("too old resource version")))
			Eventually(t, "the relist's updates", func() bool {
				_, last := capture.Get(KeyOf(listed[len(listed)-1]))
				_, first := capture.Get(KeyOf(changed))
				return last && first
			})

			for _, p := range listed {
				key := KeyOf(p)
				u, _ := capture.Get(key)
				cached, _, _ := inf.indexer.GetByKey(key)
				if key == KeyOf(changed) {
					if u[1] == u[0] || u[0] != before[key] || u[1] != cached {
						t.Errorf("%s changed: update (%p, %p), want (old cached %p, new cached %p)", key, u[0], u[1], before[key], cached)
					}
					if diff := cmp.Diff(changed, cached); diff != "" {
						t.Errorf("%s: cached object differs from the one listed (-listed +cached):\n%s", key, diff)
					}
					continue
				}
				if u[0] != before[key] || u[1] != before[key] || cached != before[key] {
					t.Errorf("%s unchanged: update (%p, %p), cached %p, want the object cached before the relist, %p", key, u[0], u[1], cached, before[key])
				}
				if diff := cmp.Diff(p, cached); diff != "" {
					t.Errorf("%s: cached object differs from the one listed (-listed +cached):\n%s", key, diff)
				}
			}
		})
	}
}
