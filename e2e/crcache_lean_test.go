package e2e

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/crcache"
)

// startCRCache starts c until the test ends, waits for its goroutine then,
// and waits for it to sync.
func startCRCache(ctx context.Context, t *testing.T, c cache.Cache) {
	t.Helper()
	cacheCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(cacheCtx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("cache: %v", err)
		}
	})
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("the cache did not sync")
	}
}

// TestCRCacheReadYourWrites checks controller-runtime's read-your-own-writes
// consistency (client.CacheOptions.EnableReadYourWritesConsistency) over
// crcache: every read through the client right after a write through it
// sees that write, by Get and by List with a label selector.
func TestCRCacheReadYourWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ns := newNamespace(ctx, t, newClientset(t))
	c, err := crcache.New(restConfig, cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(restConfig, client.Options{Cache: &client.CacheOptions{Reader: c, EnableReadYourWritesConsistency: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	// The informers the reads use exist before the cache starts.
	if _, err := c.GetInformer(ctx, &corev1.Pod{}, cache.BlockUntilSynced(false)); err != nil {
		t.Fatal(err)
	}
	startCRCache(ctx, t, c)

	type readBack struct{ Get, List string }
	const writes = 21
	var want, got []readBack
	pod := newPod("ryw", "0")
	pod.Namespace = ns
	if err := cl.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	for i := range writes {
		gen := strconv.Itoa(i + 1)
		before := pod.DeepCopy()
		pod.Labels[genLabel] = gen
		if err := cl.Patch(ctx, pod, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
		want = append(want, readBack{Get: pod.ResourceVersion, List: pod.ResourceVersion})
		var read corev1.Pod
		if err := cl.Get(ctx, client.ObjectKeyFromObject(pod), &read); err != nil {
			t.Fatal(err)
		}
		var listed corev1.PodList
		if err := cl.List(ctx, &listed, client.InNamespace(ns), client.MatchingLabels{genLabel: gen}); err != nil {
			t.Fatal(err)
		}
		rb := readBack{Get: read.ResourceVersion}
		for _, p := range listed.Items {
			rb.List += p.ResourceVersion
		}
		got = append(got, rb)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("resource versions read back right after each write (-written +read):\n%s", diff)
	}
}

// TestCRCacheLeanOptions checks crcache's options against the real server:
// by default, cached pods decoded from protobuf share their equal parts
// (sharing is on where reads deep-copy) and keep their managed fields;
// DropFields drops them on the wire; Deduplicate false turns sharing off.
// Reads deep-copy either way and return what the server stores.
func TestCRCacheLeanOptions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	clientset := newClientset(t)
	ns := newNamespace(ctx, t, clientset)
	for i := range 3 {
		createPod(ctx, t, clientset, ns, fmt.Sprintf("lean-%d", i))
	}
	type outcome struct {
		// Shared: the 3 cached pods' equal labels are fewer than 3 maps
		// (a value's first sighting may keep its own copy).
		Shared        bool
		ManagedFields bool
	}
	for _, tc := range []struct {
		name string
		o    crcache.Options
		want outcome
	}{
		{"defaults", crcache.Options{}, outcome{Shared: true, ManagedFields: true}},
		{"DropFields", crcache.Options{DropFields: []string{informer.ManagedFields}}, outcome{Shared: true}},
		{"Deduplicate off", crcache.Options{Deduplicate: ptr.To(false)}, outcome{Shared: false, ManagedFields: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// One informer over the test's namespace (a field selector on
			// the namespace narrows it), whose store holds its pods only.
			c, err := crcache.NewWith(tc.o)(restConfig, cache.Options{DefaultFieldSelector: fields.OneTermEqualSelector("metadata.namespace", ns)})
			if err != nil {
				t.Fatal(err)
			}
			inf, err := c.GetInformer(ctx, &corev1.Pod{}, cache.BlockUntilSynced(false))
			if err != nil {
				t.Fatal(err)
			}
			startCRCache(ctx, t, c)
			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
				t.Fatal(err)
			}
			if len(pods.Items) != 3 {
				t.Fatalf("listed %d pods, want 3", len(pods.Items))
			}
			got := outcome{ManagedFields: len(pods.Items[0].ManagedFields) > 0}
			maps := map[uintptr]bool{}
			store, ok := inf.(toolscache.SharedIndexInformer)
			if !ok {
				t.Fatalf("crcache's informer is a %T, not a SharedIndexInformer", inf)
			}
			for _, obj := range store.GetStore().List() {
				maps[reflect.ValueOf(obj.(*corev1.Pod).Labels).Pointer()] = true
			}
			got.Shared = len(maps) < 3
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			// Reads are the server's objects, with or without sharing.
			fresh, err := clientset.CoreV1().Pods(ns).Get(ctx, pods.Items[0].Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want.ManagedFields {
				fresh.ManagedFields = nil
			}
			fresh.TypeMeta = pods.Items[0].TypeMeta
			if diff := cmp.Diff(fresh, &pods.Items[0]); diff != "" {
				t.Errorf("read from the cache (-server +cache):\n%s", diff)
			}
		})
	}
}
