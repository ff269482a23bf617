package informer

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubetyped/informer/informertest"
)

// manyPods returns n pods named p0000… with resource versions 1…n.
func manyPods(n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = NewPod("ns", fmt.Sprintf("p%04d", i), fmt.Sprint(i+1))
	}
	return pods
}

func TestReflectorPaginatedFirstListKeepsPaginating(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
	pods := manyPods(1001)
	h.lw.SetList("2000", pods...)
	h.lw.SetPagination(true)
	h.start()

	got := h.store.waitFor(t, 1)
	diffOrFail(t, "store calls", []storeCall{{Op: "replace", Keys: podKeys(pods...), RV: "2000"}}, got)
	// The watch expires; the relist at the last resource version is
	// paginated too, because the server showed that it paginates.
	h.must(h.lw.Add(h.ctx, NewPod("ns", "new", "2001")))
	h.must(h.lw.FailWatch(h.ctx, apierrors.NewResourceExpired("too old")))
	h.skipBackoff()
	h.store.waitFor(t, 3)
	diffOrFail(t, "calls", []informertest.FakeCall{
		listCall("0", 500, ""),
		listCall("", 500, "fake:2000:500"),
		listCall("", 500, "fake:2000:1000"),
		watchCall("2000"),
		listCall("2001", 500, ""),
		listCall("", 500, "fake:2000:500"),
		listCall("", 500, "fake:2000:1000"),
		watchCall("2000"),
	}, h.calls(8))
	h.noHandledErrors()
}

func TestReflectorUnpaginatedServerRelistsWithoutLimit(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
	h.lw.SetList("7", manyPods(3)...)
	h.start()
	h.must(h.lw.Modify(h.ctx, NewPod("ns", "p0000", "8")))
	h.must(h.lw.FailWatch(h.ctx, apierrors.NewResourceExpired("too old")))
	h.skipBackoff()
	h.store.waitFor(t, 3)
	// The relist at a known resource version is not paginated, so that the
	// watch cache can serve it.
	diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 500, ""), watchCall("7"), listCall("8", 0, ""), watchCall("7")}, h.calls(4))
}

func TestReflectorPageSizeOption(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true, PageSize: 2})
	pods := manyPods(3)
	h.lw.SetList("7", pods...)
	h.lw.SetPagination(true)
	h.start()
	diffOrFail(t, "store calls", []storeCall{{Op: "replace", Keys: podKeys(pods...), RV: "7"}}, h.store.waitFor(t, 1))
	diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 2, ""), listCall("", 2, "fake:7:2"), watchCall("7")}, h.calls(3))
}

func TestReflectorExpiredContinueTokenListsEverything(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true, PageSize: 2})
	pods := manyPods(3)
	h.lw.SetList("7", pods...)
	h.lw.SetPagination(true)
	h.lw.FailNextList(nil, apierrors.NewResourceExpired("continue token expired"))
	h.start()
	diffOrFail(t, "store calls", []storeCall{{Op: "replace", Keys: podKeys(pods...), RV: "7"}}, h.store.waitFor(t, 1))
	// Like client-go's pager: one unpaginated list at the requested version.
	diffOrFail(t, "calls", []informertest.FakeCall{
		listCall("0", 2, ""),
		listCall("", 2, "fake:7:2"),
		listCall("0", 0, ""),
		watchCall("7"),
	}, h.calls(4))
	h.noHandledErrors()
}

func TestReflectorUnavailableResourceVersionRelistsLatest(t *testing.T) {
	tooLarge := apierrors.NewTimeoutError("Too large resource version", 1)
	tooLarge.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge}}
	for name, err := range map[string]error{
		"expired":               apierrors.NewResourceExpired("too old"),
		"gone":                  apierrors.NewGone("gone"),
		"too large":             tooLarge,
		"too large, old server": apierrors.NewTimeoutError("Too large resource version", 1),
	} {
		t.Run(name, func(t *testing.T) {
			h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
			h.lw.SetList("7", NewPod("ns", "a", "1"))
			h.lw.FailNextList(err)
			h.start()
			h.store.waitFor(t, 1)
			diffOrFail(t, "calls", []informertest.FakeCall{listCall("0", 500, ""), listCall("", 500, ""), watchCall("7")}, h.calls(3))

			// A watch that expires relists at the last version; when that
			// version is gone too, the reflector lists the latest state.
			h.must(h.lw.Add(h.ctx, NewPod("ns", "b", "8")))
			h.lw.FailNextList(err)
			h.must(h.lw.FailWatch(h.ctx, apierrors.NewResourceExpired("too old")))
			h.skipBackoff()
			h.store.waitFor(t, 3)
			diffOrFail(t, "calls", []informertest.FakeCall{listCall("8", 0, ""), listCall("", 0, ""), watchCall("7")}, h.calls(6)[3:])
			h.noHandledErrors()
		})
	}
}

func TestReflectorDropsInvalidListItems(t *testing.T) {
	h := newReflectorHarness(t, ReflectorOptions{DisableWatchList: true})
	h.lw.SetList("7", NewPod("ns", "a", "1"), nil, NewPod("ns", "", "2"), NewPod("ns", "b", "3"))
	h.start()
	diffOrFail(t, "store calls", []storeCall{{Op: "replace", Keys: []string{"ns/a", "ns/b"}, RV: "7"}}, h.store.waitFor(t, 1))
	h.stop()
	diffOrFail(t, "stats", ReflectorStats{InvalidListItems: 2}, h.r.Stats())
}
