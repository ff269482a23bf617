package crcache

import (
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// leanOutcome is what Options did to the pod informer of a cache: whether
// its cached pods share their equal labels maps, and the fields its
// ListerWatcher was asked to drop.
type leanOutcome struct {
	Shared     bool
	DropFields []string
}

// podInformerOutcome caches three pods with equal labels through a cache
// built with opts and lean, and reports what the pod informer did.
func podInformerOutcome(t *testing.T, opts cache.Options, lean Options) leanOutcome {
	t.Helper()
	cluster := newFakeCluster()
	for _, name := range []string{"a", "b", "c"} {
		// Equal labels in distinct maps of distinct strings, as decoded.
		cluster.Create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
			Labels: map[string]string{strings.Clone("app"): strings.Clone("web")}}})
	}
	c := newTestCacheWith(t, cluster, opts, lean)
	inf, err := c.GetInformer(t.Context(), &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	maps := map[uintptr]bool{}
	for _, obj := range inf.(toolscache.SharedIndexInformer).GetStore().List() {
		maps[reflect.ValueOf(obj.(*corev1.Pod).Labels).Pointer()] = true
	}
	sources := cluster.Sources(podGVK)
	if len(sources) != 1 {
		t.Fatalf("%d pod sources, want 1", len(sources))
	}
	// The first sighting of a value keeps its own copy: three pods
	// sharing hold at most two maps.
	return leanOutcome{Shared: len(maps) < 3, DropFields: sources[0].dropFields}
}

// TestOptionsDefaultsAndOverrides checks crcache's Options: sharing on by
// default where reads deep-copy, off by default for UnsafeDisableDeepCopy,
// each overridden cache-wide and per kind, and DropFields reaching the
// informer's ListerWatcher, per kind replacing the cache-wide paths.
func TestOptionsDefaultsAndOverrides(t *testing.T) {
	noDeepCopy := func() cache.Options {
		opts := testOptions(t)
		opts.DefaultUnsafeDisableDeepCopy = ptr.To(true)
		return opts
	}
	managed := []string{"metadata.managedFields"}
	for _, tc := range []struct {
		name string
		opts cache.Options
		lean Options
		want leanOutcome
	}{
		{"defaults", testOptions(t), Options{}, leanOutcome{Shared: true}},
		{"UnsafeDisableDeepCopy", noDeepCopy(), Options{}, leanOutcome{Shared: false}},
		{"Deduplicate off", testOptions(t), Options{Deduplicate: ptr.To(false)}, leanOutcome{Shared: false}},
		{"UnsafeDisableDeepCopy, Deduplicate on", noDeepCopy(), Options{Deduplicate: ptr.To(true)}, leanOutcome{Shared: true}},
		{"ByObject Deduplicate off", testOptions(t), Options{
			ByObject: map[client.Object]ByObject{&corev1.Pod{}: {Deduplicate: ptr.To(false)}},
		}, leanOutcome{Shared: false}},
		{"ByObject of another kind", testOptions(t), Options{
			Deduplicate: ptr.To(false), DropFields: managed,
			ByObject: map[client.Object]ByObject{&corev1.ConfigMap{}: {Deduplicate: ptr.To(true), DropFields: []string{"data"}}},
		}, leanOutcome{Shared: false, DropFields: managed}},
		{"DropFields", testOptions(t), Options{DropFields: managed}, leanOutcome{Shared: true, DropFields: managed}},
		{"ByObject DropFields replace", testOptions(t), Options{
			DropFields: managed,
			ByObject:   map[client.Object]ByObject{&corev1.Pod{}: {DropFields: []string{"status.conditions"}}},
		}, leanOutcome{Shared: true, DropFields: []string{"status.conditions"}}},
		{"ByObject DropFields empty", testOptions(t), Options{
			DropFields: managed,
			ByObject:   map[client.Object]ByObject{&corev1.Pod{}: {DropFields: []string{}}},
		}, leanOutcome{Shared: true, DropFields: []string{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := podInformerOutcome(t, tc.opts, tc.lean)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestOptionsErrors checks that bad Options are errors of the
// constructor, naming what is wrong.
func TestOptionsErrors(t *testing.T) {
	for name, tc := range map[string]struct {
		lean Options
		want string
	}{
		"unknown field": {Options{ByObject: map[client.Object]ByObject{&corev1.Pod{}: {DropFields: []string{"spec.nope"}}}}, "Options.ByObject[/v1, Kind=Pod].DropFields"},
		"unknown kind":  {Options{ByObject: map[client.Object]ByObject{&unregistered{}: {}}}, "Options.ByObject: failed to get GVK"},
	} {
		_, err := NewWith(tc.lean)(fakeConfig(), testOptions(t))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", name, err, tc.want)
		}
	}
}

// unregistered is a kind no scheme knows.
type unregistered struct{ corev1.Pod }
