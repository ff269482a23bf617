package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/kubetyped/informer/internal/benchkit"
)

// childSpec is what an informer process is told on its command line.
type childSpec struct {
	Mode              string // sync (E1) or watch (E2)
	Impl              string // implClientGo or implOurs
	Kubeconfig        string
	Pods              int
	DropManagedFields bool
	Deduplicate       bool   // ours only: InformerOptions.Deduplicate
	Profile           string // path prefix of the sync's profiles; empty for none
	Kind              string // "" for pods (E1, E2), kindWorkloads for E5
	Form              string // E5: formTyped or formUnstructured
	SnapshotDir       string // E4, ours: SnapshotOptions.Dir
}

// name describes the child's configuration in logs and profile names.
func (c childSpec) name() string {
	name := c.Impl
	if c.Kind != "" {
		name += "-" + c.Kind + "-" + c.Form
	}
	if c.Deduplicate {
		name += "-dedup"
	}
	if c.DropManagedFields {
		name += "-dropped"
	}
	return name
}

// command returns this command run again as the informer process c.
func (c childSpec) command(ctx context.Context) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self, "-child="+c.Mode, "-impl="+c.Impl, "-kubeconfig="+c.Kubeconfig,
		"-n="+strconv.Itoa(c.Pods), "-drop-managed-fields="+strconv.FormatBool(c.DropManagedFields),
		"-deduplicate="+strconv.FormatBool(c.Deduplicate), "-profile-prefix="+c.Profile,
		"-kind="+c.Kind, "-form="+c.Form, "-snapshot-dir="+c.SnapshotDir)
	cmd.Stderr = os.Stderr
	return cmd, nil
}

// syncOnce runs the sync child c and returns what it measured.
func syncOnce(ctx context.Context, c childSpec) (syncResult, error) {
	c.Mode = "sync"
	cmd, err := c.command(ctx)
	if err != nil {
		return syncResult{}, err
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return syncResult{}, fmt.Errorf("%s sync: %w", c.name(), err)
	}
	var res syncResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return syncResult{}, fmt.Errorf("%s sync: reading %q: %w", c.name(), out.String(), err)
	}
	return res, nil
}

// runE1 measures the initial sync of cfg.pods pods, each implementation in a
// process of its own, cfg.runs times each, interleaved (client-go, ours,
// client-go, …) after one untimed sync that warms the server up; with
// cfg.dedupCase, ours with Deduplicate on syncs too after each of ours,
// and is compared with the same client-go runs; with cfg.droppedCase, all
// of it again with managed fields dropped on both sides.
func runE1(ctx context.Context, cfg config, kubeconfig string) ([]benchkit.Row, error) {
	drops := []bool{false}
	if cfg.droppedCase {
		drops = append(drops, true)
	}
	var rows []benchkit.Row
	for _, drop := range drops {
		name := strconv.Itoa(cfg.pods) + " pods, same data"
		if drop {
			name = strconv.Itoa(cfg.pods) + " pods, managed fields dropped"
		}
		base := childSpec{Kubeconfig: kubeconfig, Pods: cfg.pods, DropManagedFields: drop}
		children := []childSpec{base, base}
		children[0].Impl, children[1].Impl = implClientGo, implOurs
		if cfg.dedupCase {
			dedup := children[1]
			dedup.Deduplicate = true
			children = append(children, dedup)
		}
		results, err := syncRuns(ctx, cfg, "E1 "+name, children)
		if err != nil {
			return nil, err
		}
		for i := 1; i < len(children); i++ {
			kase := name
			if children[i].Deduplicate {
				kase += ", ours with Deduplicate"
			}
			rows = append(rows, syncRows("E1", kase, "pod", cfg.pods, results[0], results[i])...)
		}
	}
	return rows, nil
}

// syncRuns runs each of children cfg.runs times, interleaved (the first,
// the second, …, the first again), after one untimed sync of the first
// that warms the server up, and returns each child's results in the order
// of children; label heads the progress lines.
func syncRuns(ctx context.Context, cfg config, label string, children []childSpec) ([][]syncResult, error) {
	if _, err := syncOnce(ctx, children[0]); err != nil {
		return nil, err
	}
	results := make([][]syncResult, len(children))
	for run := range cfg.runs {
		for i, c := range children {
			if cfg.profileDir != "" {
				c.Profile = filepath.Join(cfg.profileDir, fmt.Sprintf("%s-run%d", c.name(), run+1))
			}
			res, err := syncOnce(ctx, c)
			if err != nil {
				return nil, err
			}
			logf("%s, run %d, %s: %.2f CPU s, %.2f s wall, peak heap %.1f MB (%d GC cycles), retained %.1f MB",
				label, run+1, c.name(), res.CPUSeconds, res.WallSeconds, mb(res.PeakHeap), res.PeakGCCycles, mb(res.RetainedHeap))
			results[i] = append(results[i], res)
		}
	}
	return results, nil
}

// syncRows returns the rows of one comparison of syncs of n objects (each
// a unit, as "pod"): the medians of theirs and ours, and their ratio.
func syncRows(workload, kase, unit string, n int, theirs, ours []syncResult) []benchkit.Row {
	metric := func(label string, f func(syncResult) float64) benchkit.Row {
		return newRow(workload, kase, label, benchkit.MedianOf(theirs, f), benchkit.MedianOf(ours, f))
	}
	return []benchkit.Row{
		metric("client CPU s until synced", func(r syncResult) float64 { return r.CPUSeconds }),
		metric(peakMetric(theirs, ours), func(r syncResult) float64 { return mb(r.PeakHeap) }),
		metric("retained heap MB", func(r syncResult) float64 { return mb(r.RetainedHeap) }),
		metric("retained B/"+unit+" above baseline", func(r syncResult) float64 {
			return (float64(r.RetainedHeap) - float64(r.BaselineHeap)) / float64(n)
		}),
		metric("wall s until synced", func(r syncResult) float64 { return r.WallSeconds }),
	}
}

// peakMetric names the peak heap's row: "peak heap MB" when a GC cycle
// completed during every sync of both sides, so that the sampled heap rose
// and fell; otherwise what it is, the heap's growth, bytes allocated.
func peakMetric(sides ...[]syncResult) string {
	for _, runs := range sides {
		for _, r := range runs {
			if r.PeakGCCycles == 0 {
				return "heap growth MB (no GC cycle completed: bytes allocated, not a peak)"
			}
		}
	}
	return "peak heap MB"
}

// mb converts bytes to megabytes (10⁶).
func mb(b uint64) float64 { return float64(b) / 1e6 }
