package crcache

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// TestCost reports the cost of each informer of a cache with pods and
// config maps in two namespaces: one report per informer, with the
// objects each holds and their fields; and it rejects a cache of another
// package.
func TestCost(t *testing.T) {
	cluster := newFakeCluster()
	testPods(cluster)
	cluster.Create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns-1", Name: "a"}, Data: map[string]string{"key": strings.Repeat("v", 1000)}})
	opts := testOptions(t)
	opts.DefaultNamespaces = map[string]cache.Config{"ns-1": {}, "ns-2": {}}
	c := newTestCache(t, cluster, opts)
	ctx := t.Context()
	var pods corev1.PodList
	if err := c.List(ctx, &pods); err != nil {
		t.Fatal(err)
	}
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms); err != nil {
		t.Fatal(err)
	}
	costs, err := Cost(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	type informerOf struct {
		Kind, Form, Namespace string
		Objects               int
		Data, Name            bool
	}
	var got []informerOf
	for _, ic := range costs {
		rows := map[string]bool{}
		for _, row := range ic.Report.Rows {
			rows[row.Path] = row.Bytes > 0
		}
		if ic.Report.Bytes <= 0 || ic.Report.Objects > 0 && len(ic.Report.Suggestions) == 0 {
			t.Errorf("%s in %q: a report of %d B, suggestions %v", ic.GroupVersionKind.Kind, ic.Namespace, ic.Report.Bytes, ic.Report.Suggestions)
		}
		got = append(got, informerOf{ic.GroupVersionKind.Kind, ic.Form, ic.Namespace, ic.Report.Objects, rows["data"], rows["metadata.name"]})
	}
	// The pods' informers hold 30 pods each, the config maps' one and
	// none; the order is by size, largest first.
	want := []informerOf{
		{"Pod", "typed", "ns-1", 30, false, true},
		{"Pod", "typed", "ns-2", 30, false, true},
		{"ConfigMap", "typed", "ns-1", 1, true, true},
		{"ConfigMap", "typed", "ns-2", 0, false, false},
	}
	if costs[0].Report.Bytes < costs[1].Report.Bytes {
		want[0], want[1] = want[1], want[0]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("informers (-want +got):\n%s", diff)
	}

	if _, err := Cost(ctx, otherCache{c}); err == nil || !strings.Contains(err.Error(), "crcache.New") {
		t.Errorf("Cost of another cache: %v", err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Cost(canceled, c); err != context.Canceled {
		t.Errorf("Cost with a canceled context: %v, want %v", err, context.Canceled)
	}
}

// otherCache is a cache of another package.
type otherCache struct{ cache.Cache }
