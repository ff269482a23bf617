package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/kubetyped/informer/internal/benchkit"
	"github.com/kubetyped/informer/internal/replayserver"
	"github.com/kubetyped/informer/internal/synctrial"
)

// E7's replay rows (shared/benchmarks.md): one informer of many pods
// served by a replay server (internal/replayserver) in a process of its
// own, each informer a trial in a process of its own
// (internal/synctrial) that syncs, then relists once when the server
// expires its watch:
//
//   - ours with Deduplicate and managed fields dropped (DropFields) at
//     e7Pods (1,000,000);
//   - at e7ClientGoPods, client-go with managed fields stripped by a
//     transform against ours with its default configuration, and against
//     ours as above.
//
// With -e7fit, e7ClientGoPods is found first: the largest pod count (to
// e7FitStep) at which client-go's trial completes inside a memory cgroup
// of e7Box bytes, by bisection, each probe a trial in that cgroup; the
// rows name the first count that did not fit.

// e7Config is E7's part of a run's configuration.
type e7Config struct {
	// pods is the size of ours' million-pod case; clientGoPods that of the
	// comparison with client-go.
	pods, clientGoPods int
	// fit searches clientGoPods in box bytes (see above), between fitLow
	// (assumed to fit, 0 if not known) and fitHigh (assumed not to, pods
	// if not known).
	fit             bool
	box             uint64
	fitLow, fitHigh int
	// profileDir, if set, gets each trial's CPU and heap profiles.
	profileDir string
}

// e7FitStep is the resolution of the search for client-go's largest count.
const e7FitStep = 25_000

// e7Case is one configuration of an E7 trial.
type e7Case struct {
	name string
	spec synctrial.Spec
}

var (
	e7ClientGoStripped = e7Case{"client-go, managed fields stripped by a transform", synctrial.Spec{Impl: synctrial.ImplClientGo, DropManagedFields: true}}
	e7OursDefault      = e7Case{"ours, default configuration", synctrial.Spec{Impl: synctrial.ImplOurs}}
	e7OursLean         = e7Case{"ours, Deduplicate and DropFields managed fields", synctrial.Spec{Impl: synctrial.ImplOurs, Deduplicate: true, DropManagedFields: true}}
)

// runE7 runs E7's replay rows.
func runE7(cfg config) ([]benchkit.Row, error) {
	ctx := context.Background()
	e7 := cfg.e7
	var notes []string
	if e7.fit {
		fits, fails, err := e7FindFit(ctx, e7)
		if err != nil {
			return nil, err
		}
		e7.clientGoPods = fits
		notes = append(notes, fmt.Sprintf("client-go fits %d pods in a %s cgroup and not %d", fits, gib(e7.box), fails))
	}
	var rows []benchkit.Row
	if e7.pods > 0 {
		lean, err := e7Trials(ctx, e7, e7.pods, []e7Case{e7OursLean})
		if err != nil {
			return nil, err
		}
		kase := strconv.Itoa(e7.pods) + " pods, " + e7OursLean.name + " (ours only)"
		for _, r := range e7Rows("E7", kase, e7.pods, synctrial.Result{}, lean[0]) {
			rows = append(rows, withoutRatio(r))
		}
	}
	if e7.clientGoPods > 0 {
		res, err := e7Trials(ctx, e7, e7.clientGoPods, []e7Case{e7ClientGoStripped, e7OursDefault, e7OursLean})
		if err != nil {
			return nil, err
		}
		for i, c := range []e7Case{e7OursDefault, e7OursLean} {
			kase := fmt.Sprintf("%d pods, %s against %s", e7.clientGoPods, e7ClientGoStripped.name, c.name)
			rows = append(rows, e7Rows("E7", kase, e7.clientGoPods, res[0], res[i+1])...)
		}
	}
	for _, n := range notes {
		fmt.Fprintln(os.Stderr, "bench: E7:", n)
	}
	return rows, nil
}

// e7Trials starts a replay server of pods and runs each case's trial
// against it (relisting once), in order, and returns their results.
func e7Trials(ctx context.Context, e7 e7Config, pods int, cases []e7Case) ([]synctrial.Result, error) {
	start := time.Now()
	server, err := replayserver.StartProcess(ctx, replayserver.Options{Pods: pods})
	if err != nil {
		return nil, err
	}
	defer server.Close()
	mem, _ := benchkit.ReadProcessMemory(server.PID())
	fmt.Fprintf(os.Stderr, "bench: E7: replay server of %d pods ready in %v, resident %s\n", pods, time.Since(start).Round(time.Second), mib(mem.RSS))
	out := make([]synctrial.Result, len(cases))
	for i, c := range cases {
		spec := c.spec
		spec.Host, spec.Pods, spec.Relist = server.Clusters()[0].URL, pods, synctrial.RelistReplay
		if e7.profileDir != "" {
			spec.Profile = filepath.Join(e7.profileDir, fmt.Sprintf("e7-%d-%s", pods, c.spec.Impl))
			if c.spec.Deduplicate {
				spec.Profile += "-lean"
			}
		}
		cpu0, _ := benchkit.ProcessCPUTime(server.PID())
		res, err := synctrial.RunChild(ctx, spec)
		if err != nil {
			return nil, fmt.Errorf("%d pods, %s: %w", pods, c.name, err)
		}
		cpu1, _ := benchkit.ProcessCPUTime(server.PID())
		fmt.Fprintf(os.Stderr, "bench: E7: %d pods, %s: synced in %.1f s (%.1f CPU s), peak RSS %s, steady RSS %s, peak heap %s (%d GC), retained %s; relist %.1f s, peak RSS %s, peak heap %s (%d GC); server CPU %.1f s\n",
			pods, c.name, res.WallSeconds, res.CPUSeconds, mib(res.PeakRSS), mib(res.SteadyRSS), mib(res.PeakHeap), res.PeakGCCycles, mib(res.RetainedHeap),
			res.RelistWallSeconds, mib(res.RelistPeakRSS), mib(res.RelistPeakHeap), res.RelistGCCycles, (cpu1 - cpu0).Seconds())
		out[i] = res
	}
	return out, nil
}

// e7FindFit finds the largest pod count, to e7FitStep, at which client-go's
// trial (sync and relist) completes in a cgroup of e7.box bytes, and the
// smallest count above it that does not.
func e7FindFit(ctx context.Context, e7 e7Config) (fits, fails int, err error) {
	lo, hi := e7.fitLow, e7.fitHigh
	if hi <= lo {
		hi = max(e7.pods, lo+e7FitStep)
	}
	probe := func(pods int) (bool, error) {
		cg, err := benchkit.NewMemoryCgroup(fmt.Sprintf("e7-fit-%d", pods), e7.box)
		if err != nil {
			return false, err
		}
		defer cg.Remove()
		server, err := replayserver.StartProcess(ctx, replayserver.Options{Pods: pods})
		if err != nil {
			return false, err
		}
		defer server.Close()
		spec := e7ClientGoStripped.spec
		spec.Host, spec.Pods, spec.Relist, spec.Cgroup = server.Clusters()[0].URL, pods, synctrial.RelistReplay, cg.Dir()
		_, runErr := synctrial.RunChild(ctx, spec)
		kills, err := cg.OOMKills()
		if err != nil {
			return false, err
		}
		peak, _ := cg.Peak()
		fmt.Fprintf(os.Stderr, "bench: E7 fit: client-go at %d pods in %s: error %v, OOM kills %d, cgroup peak %s\n", pods, gib(e7.box), runErr, kills, mib(peak))
		if runErr != nil && kills == 0 {
			return false, runErr
		}
		return runErr == nil, nil
	}
	for hi-lo > e7FitStep {
		mid := (lo + hi) / 2 / e7FitStep * e7FitStep
		if mid <= lo {
			mid = lo + e7FitStep
		}
		ok, err := probe(mid)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, hi, nil
}

// e7Rows returns one comparison's rows of n pods.
func e7Rows(workload, kase string, n int, theirs, ours synctrial.Result) []benchkit.Row {
	metric := func(label string, f func(synctrial.Result) float64) benchkit.Row {
		return newRow(workload, kase, label, f(theirs), f(ours))
	}
	perPod := func(b uint64) float64 { return float64(b) / float64(n) }
	return []benchkit.Row{
		metric("CPU s until synced", func(r synctrial.Result) float64 { return r.CPUSeconds }),
		metric("wall s until synced", func(r synctrial.Result) float64 { return r.WallSeconds }),
		metric("peak RSS MiB until synced (VmHWM)", func(r synctrial.Result) float64 { return mibf(r.PeakRSS) }),
		metric("peak heap MiB until synced", func(r synctrial.Result) float64 { return mibf(r.PeakHeap) }),
		metric("retained heap B/pod", func(r synctrial.Result) float64 { return perPod(r.RetainedHeap - r.BaselineHeap) }),
		metric("steady RSS MiB", func(r synctrial.Result) float64 { return mibf(r.SteadyRSS) }),
		metric("relist wall s", func(r synctrial.Result) float64 { return r.RelistWallSeconds }),
		metric("relist peak RSS MiB", func(r synctrial.Result) float64 { return mibf(r.RelistPeakRSS) }),
		withoutRatio(metric("relist peak RSS ÷ steady RSS (each side's own)", func(r synctrial.Result) float64 { return peakOver(r.RelistPeakRSS, r.SteadyRSS) })),
		withoutRatio(metric("relist peak heap ÷ retained heap (each side's own)", func(r synctrial.Result) float64 { return peakOver(r.RelistPeakHeap, r.RetainedHeap) })),
	}
}

// peakOver returns a ÷ b (0 when b is 0).
func peakOver(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func mibf(b uint64) float64 { return float64(b) / (1 << 20) }
func mib(b uint64) string   { return fmt.Sprintf("%.0f MiB", mibf(b)) }
func gib(b uint64) string   { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }
