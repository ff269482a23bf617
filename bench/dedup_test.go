package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubetyped/informer"
)

// TestDeduplicationChangesNoCachedValue caches the production-like pods,
// decoded from their protobuf bytes, with deduplication (Deduplicate) and
// without (the default), and compares the two caches.
func TestDeduplicationChangesNoCachedValue(t *testing.T) {
	pages, err := encodeProdPages(newProdPods(1200), prodListRV)
	if err != nil {
		t.Fatal(err)
	}
	cached := func(dedup bool) []*corev1.Pod {
		src := &prodSource{pages: pages, watches: newWatchScript(nil)}
		inf, err := informer.NewInformer[*corev1.Pod](ourProdListerWatcher{src}, informer.InformerOptions[*corev1.Pod]{Deduplicate: new(dedup)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); inf.Run(ctx) }()
		defer func() { cancel(); <-done }()
		if err := waitFor("HasSynced", inf.HasSynced, syncTimeout); err != nil {
			t.Fatal(err)
		}
		var pods []*corev1.Pod
		// HasSynced reports the list delivered to the cache's queue; wait
		// for the cache itself.
		if err := waitFor("the cache", func() bool {
			pods, _ = inf.Lister().List(nil)
			return len(pods) == 1200
		}, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(pods, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
		return pods
	}
	if diff := cmp.Diff(cached(true), cached(false)); diff != "" {
		t.Fatalf("deduplication changed cached pods (-without +with):\n%s", diff)
	}
}
