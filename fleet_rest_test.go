package informer_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer"
)

// runSyncedFleet runs f until the test ends and returns once it has
// synced.
func runSyncedFleet(t *testing.T, f *informer.Fleet[*corev1.Pod]) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); f.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	informer.Eventually(t, "fleet synced", f.HasSynced)
}

func TestFleetUpdateClusterReplacesCredentialsWithoutRelisting(t *testing.T) {
	srv := newFakeAPIServer(t)
	srv.Serve(podsResource, podKind, true)
	srv.Create(podsResource, informer.NewPod("ns", "a", ""))
	var token atomic.Value
	token.Store("old")
	var refused, acceptedNew atomic.Int64
	auth := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		got := req.Header.Get("Authorization")
		if got != "Bearer "+token.Load().(string) {
			refused.Add(1)
			srv.writeStatus(rw, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
			return
		}
		if got == "Bearer new" {
			acceptedNew.Add(1)
		}
		srv.handle(rw, req)
	}))
	t.Cleanup(auth.Close)

	f, err := informer.NewFleet(informer.FleetOptions[*corev1.Pod]{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.AddCluster("a", &rest.Config{Host: auth.URL, BearerToken: "old"}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []string
	record := func(e string) {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, e)
	}
	_, err = f.AddEventHandler(informer.FleetEventHandlerFuncs[*corev1.Pod]{
		AddFunc: func(cluster string, obj *corev1.Pod, initial bool) {
			record(fmt.Sprintf("%s add %s@%s initial=%v", cluster, informer.KeyOf(obj), obj.ResourceVersion, initial))
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	runSyncedFleet(t, f)
	srv.WaitForWatches(t, podsResource, 1)

	if err := f.UpdateCluster("a", &rest.Config{Host: "http://127.0.0.1:1", BearerToken: "new"}); err == nil || !strings.Contains(err.Error(), "another server") {
		t.Errorf("UpdateCluster to another server: %v", err)
	}
	if err := f.UpdateCluster("a", &rest.Config{Host: auth.URL, BearerToken: "new"}); err != nil {
		t.Fatal(err)
	}
	token.Store("new") // the old credentials are revoked
	// The open watch goes on: the cache is kept, nothing is listed again.
	srv.Create(podsResource, informer.NewPod("ns", "b", ""))
	var got []string
	informer.Eventually(t, "two adds", func() bool {
		mu.Lock()
		defer mu.Unlock()
		got = slices.Clone(events)
		return len(got) >= 2
	})
	want := []string{"a add ns/a@101 initial=true", "a add ns/b@102 initial=false"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	lists := 0
	for _, r := range srv.Requests() {
		if !r.Watch {
			lists++
		}
	}
	if lists != 1 {
		t.Errorf("%d lists, want 1: new credentials must not cost a relist\n%v", lists, srv.Requests())
	}
	// Once the connection drops, the cluster reconnects with the new
	// credentials.
	auth.CloseClientConnections()
	informer.Eventually(t, "a request with the new credentials", func() bool { return acceptedNew.Load() > 0 })
	if n := refused.Load(); n != 0 {
		t.Errorf("%d requests refused: some used the old credentials", n)
	}
}

// The clusters of a fleet decode with one table: a string that repeats
// across clusters is held once, and with Deduplicate an equal sub-object
// too. (The table keeps a value from the second time it is seen: the
// copies of the cluster decoded first, whichever it is, are its own, and
// the other two share.)
func TestFleetClustersShareWhatTheyRepeat(t *testing.T) {
	for _, dedup := range []bool{false, true} {
		t.Run(fmt.Sprintf("Deduplicate=%v", dedup), func(t *testing.T) {
			f, err := informer.NewFleet(informer.FleetOptions[*corev1.Pod]{Informer: informer.InformerOptions[*corev1.Pod]{Deduplicate: &dedup}})
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"a", "b", "c"} {
				srv := newFakeAPIServer(t)
				srv.Serve(podsResource, podKind, true)
				srv.Create(podsResource, informer.NewPod("ns", "web-"+name, "", informer.PodLabels(map[string]string{"app": "web-frontend"})))
				if err := f.AddCluster(name, srv.Config()); err != nil {
					t.Fatal(err)
				}
			}
			runSyncedFleet(t, f)
			objs, err := f.Lister().List(labels.Everything())
			if err != nil {
				t.Fatal(err)
			}
			if len(objs) != 3 {
				t.Fatalf("%d objects, want 3", len(objs))
			}
			type shared struct{ LabelValue, Labels bool }
			var got shared
			for i := range objs {
				for _, o := range objs[i+1:] {
					a, b := objs[i].Object, o.Object
					got.LabelValue = got.LabelValue || unsafe.StringData(a.Labels["app"]) == unsafe.StringData(b.Labels["app"])
					got.Labels = got.Labels || reflect.ValueOf(a.Labels).UnsafePointer() == reflect.ValueOf(b.Labels).UnsafePointer()
				}
			}
			want := shared{LabelValue: true, Labels: dedup}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("shared across clusters (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFleetUpdateClusterKeepsCountingDropFieldsFailures checks that what
// the DropFields transport of a cluster's new client cannot parse is
// counted in the cluster's informer's Stats, as its first client's is.
func TestFleetUpdateClusterKeepsCountingDropFieldsFailures(t *testing.T) {
	srv := newFakeAPIServer(t)
	srv.Serve(podsResource, podKind, true)
	srv.Create(podsResource, informer.NewPod("ns", "a", ""))
	var broken atomic.Bool
	front := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		if w := req.URL.Query().Get("watch"); broken.Load() && (w == "true" || w == "1") {
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(http.StatusOK)
			_, _ = rw.Write([]byte("{]\n"))
			return
		}
		srv.handle(rw, req)
	}))
	t.Cleanup(front.Close)
	f, err := informer.NewFleet(informer.FleetOptions[*corev1.Pod]{REST: informer.RESTOptions{DropFields: []string{informer.ManagedFields}}})
	if err != nil {
		t.Fatal(err)
	}
	config := &rest.Config{Host: front.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}}
	if err := f.AddCluster("a", config); err != nil {
		t.Fatal(err)
	}
	runSyncedFleet(t, f)
	srv.WaitForWatches(t, podsResource, 1)
	if err := f.UpdateCluster("a", rest.CopyConfig(config)); err != nil {
		t.Fatal(err)
	}
	// The next watch goes through the new client and gets what its
	// transport cannot parse.
	broken.Store(true)
	front.CloseClientConnections()
	informer.Eventually(t, "a failure counted", func() bool {
		s := f.Stats()
		return len(s.Clusters) == 1 && s.Clusters[0].Informer.DropFieldsFailures > 0
	})
}
