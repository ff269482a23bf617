package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/kubetyped/informer/internal/benchkit"
	"github.com/kubetyped/informer/internal/synctrial"
)

// E7's memory limit (shared/benchmarks.md): the lowest memory cgroup limit
// under which each side completes the initial sync and then a relist of
// the server's pods, found by bisection, each probe a trial in a cgroup of
// its own (benchkit.MemoryCgroup: the informer process joins it first, so
// that everything it maps counts, its binary's pages included). A probe
// fails when the kernel kills the process for lack of memory, or when it
// has not finished in e7ProbeTimeout (a process starved of memory may
// thrash instead of dying). Each side runs as a container would run it:
// without GOMEMLIMIT, and with GOMEMLIMIT at e7MemLimitShare of the
// cgroup's limit (what automemlimit and most charts set).

// e7LimitStep is the bisection's resolution: it stops when the lowest
// limit known to pass is within this factor of the highest known to fail.
const e7LimitStep = 1.03

// e7ProbeTimeout bounds one probe's sync and relist each.
const e7ProbeTimeout = 5 * time.Minute

// e7MemLimitShare is GOMEMLIMIT's share of the cgroup's limit in the
// probes that set it.
const e7MemLimitShare = 0.9

// e7LimitSide is one side of the bisection.
type e7LimitSide struct {
	spec       synctrial.Spec
	goMemLimit bool
}

// name names the side in logs and rows.
func (s e7LimitSide) name() string {
	name := e7SideName(s.spec)
	if s.goMemLimit {
		name += fmt.Sprintf(", GOMEMLIMIT %.0f%% of the limit", 100*e7MemLimitShare)
	}
	return name
}

// runE7Limit finds each side's lowest passing limit at n pods and returns
// the rows: client-go's limit against ours', by default and with
// Deduplicate, without and with GOMEMLIMIT. unconstrained are the
// trials' results at n without a limit (e7Runs, by e7Sides), whose peaks
// start the search.
func runE7Limit(ctx context.Context, cfg config, kubeconfig string, n int, unconstrained [][]synctrial.Result) ([]benchkit.Row, []string, error) {
	var rows []benchkit.Row
	var notes []string
	for _, goMemLimit := range []bool{false, true} {
		limits := make([]float64, len(e7Sides))
		for i, spec := range e7Sides {
			side := e7LimitSide{spec: spec, goMemLimit: goMemLimit}
			var peak uint64
			for _, r := range unconstrained[i] {
				peak = max(peak, r.PeakRSS, r.RelistPeakRSS)
			}
			limit, failed, err := e7Bisect(ctx, kubeconfig, n, side, peak)
			if err != nil {
				return nil, nil, err
			}
			logf("E7 limit: %s passes at %.0f MiB, fails at %.0f MiB", side.name(), mib(limit), mib(failed))
			notes = append(notes, fmt.Sprintf("E7 memory limit, %s: completes the sync and relist of %d pods under %.0f MiB, not under %.0f MiB.", side.name(), n, mib(limit), mib(failed)))
			limits[i] = mib(limit)
		}
		suffix := ", no GOMEMLIMIT"
		if goMemLimit {
			suffix = fmt.Sprintf(", GOMEMLIMIT %.0f%% of the limit", 100*e7MemLimitShare)
		}
		for i := 1; i < len(e7Sides); i++ {
			kase := e7CaseName(n, e7Sides[i]) + ", sync and relist" + suffix
			rows = append(rows, newRow("E7 memory limit", kase, "lowest passing cgroup memory limit MiB", limits[0], limits[i]))
		}
	}
	return rows, notes, nil
}

// e7Bisect returns the lowest limit (to e7LimitStep) under which side
// passes, and the highest under which it failed, starting from the peak
// resident set it reached without a limit.
func e7Bisect(ctx context.Context, kubeconfig string, n int, side e7LimitSide, peak uint64) (pass, fail uint64, err error) {
	hi := uint64(float64(peak) * 1.25)
	for {
		ok, err := e7Probe(ctx, kubeconfig, n, side, hi)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			break
		}
		hi = hi * 3 / 2
	}
	lo := hi / 2
	for {
		ok, err := e7Probe(ctx, kubeconfig, n, side, lo)
		if err != nil {
			return 0, 0, err
		}
		if !ok {
			break
		}
		hi, lo = lo, lo/2
	}
	for float64(hi)/float64(lo) > e7LimitStep {
		mid := uint64(math.Sqrt(float64(hi) * float64(lo)))
		ok, err := e7Probe(ctx, kubeconfig, n, side, mid)
		if err != nil {
			return 0, 0, err
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, lo, nil
}

// e7Probe runs side's trial under a memory cgroup of limit bytes and
// reports whether it completed; an error is a failure that is not for
// lack of memory.
func e7Probe(ctx context.Context, kubeconfig string, n int, side e7LimitSide, limit uint64) (bool, error) {
	cg, err := benchkit.NewMemoryCgroup("realbench-e7-"+strconv.FormatUint(limit, 10), limit)
	if err != nil {
		return false, err
	}
	defer cg.Remove()
	spec := side.spec
	spec.Kubeconfig, spec.Pods, spec.Relist, spec.Cgroup, spec.Timeout = kubeconfig, n, synctrial.RelistInject, cg.Dir(), e7ProbeTimeout
	var env []string
	if side.goMemLimit {
		env = append(env, "GOMEMLIMIT="+strconv.FormatUint(uint64(float64(limit)*e7MemLimitShare), 10))
	}
	start := time.Now()
	res, runErr := synctrial.RunChild(ctx, spec, env...)
	kills, err := cg.OOMKills()
	if err != nil {
		return false, err
	}
	cgPeak, _ := cg.Peak()
	passed := runErr == nil
	logf("E7 limit probe: %s under %.0f MiB: passed %v (OOM kills %d, cgroup peak %.0f MiB, peak RSS %.0f MiB, relist peak RSS %.0f MiB, %s)",
		side.name(), mib(limit), passed, kills, mib(cgPeak), mib(res.PeakRSS), mib(res.RelistPeakRSS), time.Since(start).Round(time.Second))
	var exit *exec.ExitError
	switch {
	case passed:
		return true, nil
	case kills > 0:
		return false, nil
	case errors.As(runErr, &exit) && exit.Sys().(syscall.WaitStatus).Signaled():
		return false, nil // killed, as a starved process may be before the counter shows it
	case time.Since(start) >= e7ProbeTimeout:
		return false, nil // thrashing: not done in time
	}
	return false, fmt.Errorf("E7 limit probe %s under %.0f MiB: %w", side.name(), mib(limit), runErr)
}
