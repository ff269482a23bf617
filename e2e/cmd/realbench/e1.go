package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
)

// childCommand returns this command run again as the informer process of
// impl in mode (sync or watch).
func childCommand(ctx context.Context, mode, impl, kubeconfig string, pods int, dropManagedFields bool) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self, "-child="+mode, "-impl="+impl, "-kubeconfig="+kubeconfig,
		"-n="+strconv.Itoa(pods), "-drop-managed-fields="+strconv.FormatBool(dropManagedFields))
	cmd.Stderr = os.Stderr
	return cmd, nil
}

// syncOnce runs one sync child of impl and returns what it measured.
func syncOnce(ctx context.Context, impl, kubeconfig string, pods int, dropManagedFields bool) (syncResult, error) {
	cmd, err := childCommand(ctx, "sync", impl, kubeconfig, pods, dropManagedFields)
	if err != nil {
		return syncResult{}, err
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		return syncResult{}, fmt.Errorf("%s sync: %w", impl, err)
	}
	var res syncResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return syncResult{}, fmt.Errorf("%s sync: reading %q: %w", impl, out.String(), err)
	}
	return res, nil
}

// runE1 measures the initial sync of cfg.pods pods, each implementation in a
// process of its own, cfg.runs times each, interleaved (client-go, ours,
// client-go, …) after one untimed sync that warms the server up; with
// cfg.droppedCase, again with managed fields dropped on both sides.
func runE1(ctx context.Context, cfg config, kubeconfig string) ([]row, error) {
	cases := []bool{false}
	if cfg.droppedCase {
		cases = append(cases, true)
	}
	var rows []row
	for _, drop := range cases {
		name := strconv.Itoa(cfg.pods) + " pods, same data"
		if drop {
			name = strconv.Itoa(cfg.pods) + " pods, managed fields dropped"
		}
		if _, err := syncOnce(ctx, implClientGo, kubeconfig, cfg.pods, drop); err != nil {
			return nil, err
		}
		var cg, ours []syncResult
		for run := range cfg.runs {
			for _, impl := range []string{implClientGo, implOurs} {
				res, err := syncOnce(ctx, impl, kubeconfig, cfg.pods, drop)
				if err != nil {
					return nil, err
				}
				logf("E1 %s, run %d, %s: %.2f CPU s, %.2f s wall, peak heap %.1f MB, retained %.1f MB",
					name, run+1, impl, res.CPUSeconds, res.WallSeconds, mb(res.PeakHeap), mb(res.RetainedHeap))
				if impl == implClientGo {
					cg = append(cg, res)
				} else {
					ours = append(ours, res)
				}
			}
		}
		metric := func(label string, f func(syncResult) float64) row {
			return newRow("E1", name, label, median(cg, f), median(ours, f))
		}
		rows = append(rows,
			metric("client CPU s until synced", func(r syncResult) float64 { return r.CPUSeconds }),
			metric("peak heap MB", func(r syncResult) float64 { return mb(r.PeakHeap) }),
			metric("retained heap MB", func(r syncResult) float64 { return mb(r.RetainedHeap) }),
			metric("retained B/pod above baseline", func(r syncResult) float64 {
				return (float64(r.RetainedHeap) - float64(r.BaselineHeap)) / float64(cfg.pods)
			}),
			metric("wall s until synced", func(r syncResult) float64 { return r.WallSeconds }),
		)
	}
	return rows, nil
}

// mb converts bytes to megabytes (10⁶).
func mb(b uint64) float64 { return float64(b) / 1e6 }

// median returns the median of f over runs.
func median[S any](runs []S, f func(S) float64) float64 {
	vs := make([]float64, len(runs))
	for i, r := range runs {
		vs[i] = f(r)
	}
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}
