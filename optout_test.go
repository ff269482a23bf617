package informer_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubetyped/informer"
)

// Each factory default an informer can turn off for itself: the informer
// given the explicit "off" does without it, while an informer of the same
// factory that inherits it has it.

// optOutServer serves pods and configmaps: count pods with the same labels
// and UIDs 0-uid, 1-uid…, and one configmap.
func optOutServer(t *testing.T, count int) *fakeAPIServer {
	srv := newFakeAPIServer(t)
	srv.Serve(podsResource, podKind, true)
	srv.Serve(configMapsResource, corev1.SchemeGroupVersion.WithKind("ConfigMap"), true)
	for k := range count {
		pod := informer.NewPod("ns", fmt.Sprintf("pod-%d", k), "", informer.PodLabels(map[string]string{"app": "web", "tier": "front"}))
		// UIDs that differ early, so that their hashes spread.
		pod.UID = types.UID(fmt.Sprintf("%d-uid", k))
		srv.Create(podsResource, pod)
	}
	srv.Create(configMapsResource, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm", UID: "cm-uid"}})
	return srv
}

var configMapsResource = corev1.SchemeGroupVersion.WithResource("configmaps")

// startSynced starts f and waits for its informers' sync.
func startSynced(t *testing.T, f *informer.Factory) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f.Start(ctx)
	if _, err := f.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestInformerTurnsOffFactoryResync(t *testing.T) {
	srv := optOutServer(t, 1)
	f := newFactory(t, srv.Config(), informer.FactoryOptions{ResyncPeriod: time.Hour})
	off := must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{ResyncPeriod: new(time.Duration(0))}))
	inherits := must[*informer.Informer[*corev1.ConfigMap]](t)(informer.For(f, informer.InformerOptions[*corev1.ConfigMap]{}))
	startSynced(t, f)
	defer f.Shutdown()

	// A running informer without resync rejects a handler's resync
	// period; one resyncing every hour accepts it.
	period := time.Hour
	_, err := off.AddEventHandlerWithOptions(informer.ResourceEventHandlerFuncs[*corev1.Pod]{}, informer.HandlerOptions{Name: "h", ResyncPeriod: &period})
	if err == nil || !strings.Contains(err.Error(), "runs without resync") {
		t.Errorf("handler resync on the informer that turned resync off: got error %v, want one saying it runs without resync", err)
	}
	if _, err := inherits.AddEventHandlerWithOptions(informer.ResourceEventHandlerFuncs[*corev1.ConfigMap]{}, informer.HandlerOptions{Name: "h", ResyncPeriod: &period}); err != nil {
		t.Errorf("handler resync on the informer inheriting the factory's resync: %v", err)
	}
}

func TestInformerTurnsOffFactoryShard(t *testing.T) {
	const pods = 16
	srv := optOutServer(t, pods)
	cached := func(opts informer.InformerOptions[*corev1.Pod]) int {
		f := newFactory(t, srv.Config(), informer.FactoryOptions{Shard: &informer.Shard{Index: 0, Count: 2, FilterOnClient: true}})
		inf := must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, opts))
		startSynced(t, f)
		defer f.Shutdown()
		return len(inf.Cache().List())
	}
	if got := cached(informer.InformerOptions[*corev1.Pod]{Shard: informer.NoShard}); got != pods {
		t.Errorf("the informer that turned the shard off caches %d pods, want all %d", got, pods)
	}
	// The UIDs are fixed, and so is the split.
	if got := cached(informer.InformerOptions[*corev1.Pod]{}); got == 0 || got >= pods {
		t.Errorf("the informer inheriting the factory's shard caches %d of %d pods, want some but not all", got, pods)
	}
}

func TestInformerTurnsOffFactoryDeduplication(t *testing.T) {
	const pods = 4
	srv := optOutServer(t, pods)
	labelsMaps := func(opts informer.InformerOptions[*corev1.Pod]) int {
		f := newFactory(t, srv.Config(), informer.FactoryOptions{Deduplicate: true})
		inf := must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, opts))
		startSynced(t, f)
		defer f.Shutdown()
		maps := map[unsafe.Pointer]bool{}
		for _, pod := range inf.Cache().List() {
			maps[reflect.ValueOf(pod.Labels).UnsafePointer()] = true
		}
		return len(maps)
	}
	// Deduplicated on decode, a labels map is shared from its second
	// sighting: the first pod keeps its own.
	got := map[string]int{
		"inherited":  labelsMaps(informer.InformerOptions[*corev1.Pod]{}),
		"turned off": labelsMaps(informer.InformerOptions[*corev1.Pod]{Deduplicate: new(false)}),
	}
	want := map[string]int{"inherited": 2, "turned off": pods}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("distinct labels maps of %d pods with equal labels (-want +got):\n%s", pods, diff)
	}
}

func TestInformerTurnsOffFactoryMutationDetector(t *testing.T) {
	srv := optOutServer(t, 1)
	f := newFactory(t, srv.Config(), informer.FactoryOptions{DetectMutations: true})
	off := must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{DetectMutations: new(false)}))
	inherits := must[*informer.Informer[*corev1.ConfigMap]](t)(informer.For(f, informer.InformerOptions[*corev1.ConfigMap]{}))
	startSynced(t, f)
	// Writing into cached objects breaks the no-mutation rule: only the
	// detector that runs reports it, at the latest when Run ends.
	off.Cache().List()[0].Labels["mutated"] = "yes"
	inherits.Cache().List()[0].Labels = map[string]string{"mutated": "yes"}
	f.Shutdown()
	got := map[string]int64{"turned off": off.Stats().MutatedObjects, "inherited": inherits.Stats().MutatedObjects}
	want := map[string]int64{"turned off": 0, "inherited": 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mutated objects found (-want +got):\n%s", diff)
	}
}

func TestInformerTurnsOffFactoryConsistencyCheck(t *testing.T) {
	srv := optOutServer(t, 1)
	f := newFactory(t, srv.Config(), informer.FactoryOptions{ConsistencyCheck: informer.ConsistencyCheckOptions{Period: 5 * time.Millisecond}})
	off := must[*informer.Informer[*corev1.Pod]](t)(informer.For(f, informer.InformerOptions[*corev1.Pod]{ConsistencyCheck: &informer.ConsistencyCheckOptions{}}))
	inherits := must[*informer.Informer[*corev1.ConfigMap]](t)(informer.For(f, informer.InformerOptions[*corev1.ConfigMap]{}))
	startSynced(t, f)
	defer f.Shutdown()
	// Once the inheriting informer has checked three times, the one that
	// turned the checks off would have too.
	informer.Eventually(t, "three checks of the inheriting informer", func() bool { return inherits.Stats().Consistency.Checks >= 3 })
	if got := off.Stats().Consistency; got != (informer.ConsistencyStats{}) {
		t.Errorf("the informer that turned the factory's checks off checked: %+v", got)
	}
}
