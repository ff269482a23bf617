package synctrial

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kubetyped/informer/internal/replayserver"
)

func TestMain(m *testing.M) {
	RunIfChild()
	os.Exit(m.Run())
}

// TestTrials runs each implementation's trial, with a relist made by the
// replay server and one made by the client's transport, and checks that
// each reports figures.
func TestTrials(t *testing.T) {
	s, err := replayserver.Start(replayserver.Options{Pods: 1500})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, impl := range []string{ImplClientGo, ImplOurs} {
		for _, relist := range []Relist{RelistReplay, RelistInject} {
			t.Run(fmt.Sprintf("%s/%s", impl, relist), func(t *testing.T) {
				res, err := RunChild(ctx, Spec{Impl: impl, Host: s.Clusters()[0].URL, Pods: 1500, Relist: relist, DropManagedFields: true, Deduplicate: impl == ImplOurs})
				if err != nil {
					t.Fatal(err)
				}
				if res.CPUSeconds <= 0 || res.WallSeconds <= 0 || res.PeakRSS == 0 || res.RetainedHeap <= res.BaselineHeap ||
					res.SteadyRSS == 0 || res.RelistWallSeconds <= 0 || res.RelistPeakRSS == 0 {
					t.Errorf("missing figures: %+v", res)
				}
			})
		}
	}
	stats, err := s.Clusters()[0].Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Each trial streams its list, and once more after its relist.
	if stats.WatchLists < 8 {
		t.Errorf("%d streaming lists for 4 trials of a sync and a relist each, want 8: %+v", stats.WatchLists, stats)
	}
}
