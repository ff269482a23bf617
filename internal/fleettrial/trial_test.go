package fleettrial

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubetyped/informer/internal/replayserver"
)

func TestMain(m *testing.M) {
	RunIfChild()
	os.Exit(m.Run())
}

// testFleet starts an in-process replay server of clusters × pods, half of
// each cluster's pods fleet-common as in E6, and returns its clusters' URLs.
func testFleet(t *testing.T, clusters, pods int) (*replayserver.Server, []string) {
	t.Helper()
	s, err := replayserver.Start(replayserver.Options{Clusters: clusters, Pods: pods, Common: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var urls []string
	for _, c := range s.Clusters() {
		urls = append(urls, c.URL)
	}
	return s, urls
}

// testSelector selects the first fleet-common Deployment's replicas, as E6.
const testSelector = "app=checkout-api-0"

// TestTrialsAgree runs each implementation's trial over the same fleet,
// with writes and the fleet-wide query, in each configuration E6 runs each
// side in, and checks that each reports its figures and that every query
// found the pods client-go's first found.
func TestTrialsAgree(t *testing.T) {
	const clusters, pods, writes = 3, 120, 9
	_, urls := testFleet(t, clusters, pods)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var hits int
	for i, spec := range []Spec{
		{Impl: ImplClientGo},
		{Impl: ImplOurs},
		{Impl: ImplOurs, Deduplicate: true},
		{Impl: ImplClientGo, DropManagedFields: true},
		{Impl: ImplOurs, DropManagedFields: true},
		{Impl: ImplOurs, DropManagedFields: true, Deduplicate: true},
	} {
		spec.Clusters, spec.Pods, spec.Writes, spec.Selector = urls, pods, writes, testSelector
		res, err := RunChild(ctx, spec)
		if err != nil {
			t.Fatalf("%+v: %v", spec, err)
		}
		if res.CPUSeconds <= 0 || res.WallSeconds <= 0 || res.PeakHeap == 0 || res.RetainedHeap <= res.BaselineHeap ||
			res.QueriedHeap == 0 || res.Goroutines <= res.BaselineGoroutines || res.Latency.P50 <= 0 || res.Latency.P99 < res.Latency.P50 ||
			res.Query.FirstNanos <= 0 || res.Query.MedianNanos <= 0 || res.Query.Repetitions < 11 {
			t.Errorf("%+v: missing figures: %+v", spec, res)
		}
		if res.Latency.Events != writes {
			t.Errorf("%+v: %d writes timed, want %d", spec, res.Latency.Events, writes)
		}
		if res.FailedClusters != 0 {
			t.Errorf("%+v: %d failed clusters", spec, res.FailedClusters)
		}
		switch {
		case i == 0 && res.Query.Hits == 0:
			t.Fatalf("the fleet-wide query %q found no pod", testSelector)
		case i == 0:
			hits = res.Query.Hits
		case res.Query.Hits != hits:
			t.Errorf("%+v: the query found %d pods, client-go's %d", spec, res.Query.Hits, hits)
		}
	}
}

// TestTrialWarmRestart runs ours' trial keeping snapshots, changes pods
// while no trial runs, and checks that a second trial restores every
// cluster and resumes its watch without a relist.
func TestTrialWarmRestart(t *testing.T) {
	const clusters, pods = 3, 50
	s, urls := testFleet(t, clusters, pods)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	spec := Spec{Impl: ImplOurs, Clusters: urls, Pods: pods, DropManagedFields: true, Deduplicate: true, SnapshotDir: t.TempDir()}
	cold, err := RunChild(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if cold.Snapshots.Saved != clusters || cold.Snapshots.SaveBytes == 0 || cold.Snapshots.Restored != 0 {
		t.Errorf("cold start: snapshots %+v, want %d saved and none restored", cold.Snapshots, clusters)
	}
	for _, c := range s.Clusters() {
		if _, err := c.Write(ctx, 2); err != nil {
			t.Fatal(err)
		}
	}
	warm, err := RunChild(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	got := warm.Snapshots
	got.Saved, got.SaveBytes = 0, 0 // the final saves' figures vary with the bytes
	want := SnapshotTotals{Restored: clusters, RestoredObjects: clusters * pods, ResumedWatches: clusters}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warm restart's snapshot counters (-want +got):\n%s", diff)
	}
}

// TestTrialRefusesAnUnknownImplementation checks the error a misspelt
// implementation gets.
func TestTrialRefusesAnUnknownImplementation(t *testing.T) {
	_, err := run(Spec{Impl: "client-go2"})
	if err == nil || !strings.Contains(err.Error(), `unknown implementation "client-go2"`) {
		t.Errorf("run with an unknown implementation: %v", err)
	}
}

func TestPercentile(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3, 6, 7, 8, 9, 10}
	got := []time.Duration{percentile(ds, 0.5), percentile(ds, 0.99), percentile(ds, 0), percentile(nil, 0.5)}
	if diff := cmp.Diff([]time.Duration{5, 10, 1, 0}, got); diff != "" {
		t.Errorf("percentiles (-want +got):\n%s", diff)
	}
}
