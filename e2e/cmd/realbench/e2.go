package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubetyped/informer/e2e/internal/cluster"
	"github.com/kubetyped/informer/internal/benchkit"
)

// watcher is a running watch child (E2).
type watcher struct {
	impl  string
	stdin io.WriteCloser
	out   *bufio.Reader
	wait  func() error
}

// startWatcher starts the watch child of impl and waits until its informer
// has synced.
func startWatcher(ctx context.Context, impl, kubeconfig string, pods int) (*watcher, error) {
	cmd, err := childSpec{Mode: "watch", Impl: impl, Kubeconfig: kubeconfig, Pods: pods}.command(ctx)
	if err != nil {
		return nil, err
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	w := &watcher{impl: impl, stdin: stdin, out: bufio.NewReader(stdout), wait: cmd.Wait}
	line, err := w.out.ReadString('\n')
	if err != nil || line != "synced\n" {
		return nil, fmt.Errorf("%s watch: got %q instead of synced: %v (exit: %v)", impl, line, err, cmd.Wait())
	}
	return w, nil
}

// finish tells the child the last resource version written and returns its
// records once it has seen it.
func (w *watcher) finish(lastRV string) ([]watchRecord, error) {
	if _, err := fmt.Fprintln(w.stdin, lastRV); err != nil {
		return nil, err
	}
	var records []watchRecord
	decodeErr := json.NewDecoder(w.out).Decode(&records)
	if err := w.wait(); err != nil {
		return nil, fmt.Errorf("%s watch: %w", w.impl, err)
	}
	if decodeErr != nil {
		return nil, fmt.Errorf("%s watch: reading its records: %w", w.impl, decodeErr)
	}
	return records, nil
}

// write is one update made through the API: the resource version the
// server gave it, when its request was sent and when its response arrived
// (Unix nanoseconds).
type write struct {
	rv         uint64
	sent, done int64
}

// e2Metrics name E2's figures, in the order of the table. The watch event
// often reaches an informer before the writer has read the response, so
// latency from the response (the workload's definition) is often negative at
// the median; latency from the request, always positive, is shown beside it.
var e2Metrics = []struct {
	name     string
	q        float64
	response bool
}{
	{"p50 latency ms from response", 0.5, true},
	{"p99 latency ms from response", 0.99, true},
	{"p50 latency ms from request", 0.5, false},
	{"p99 latency ms from request", 0.99, false},
}

// runE2 runs cfg.runs rounds of E2 (see e2Round) and reports the median of
// each round's figures.
func runE2(ctx context.Context, c *cluster.Cluster, cfg config, kubeconfig string) ([]benchkit.Row, error) {
	client, err := clientset(c.Config())
	if err != nil {
		return nil, err
	}
	pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	var rounds [][][2]float64 // per round, per metric: client-go, ours
	for round := range cfg.runs {
		figures, err := e2Round(ctx, client, pods.Items, cfg, kubeconfig, round)
		if err != nil {
			return nil, err
		}
		logf("E2 round %d: p99 from response %.1f ms (client-go), %.1f ms (ours)", round+1, figures[1][0], figures[1][1])
		rounds = append(rounds, figures)
	}
	name := fmt.Sprintf("%d updates, %d writers", cfg.updates, cfg.writers)
	var rows []benchkit.Row
	for m, metric := range e2Metrics {
		rows = append(rows, newRow("E2", name, metric.name,
			benchkit.MedianOf(rounds, func(f [][2]float64) float64 { return f[m][0] }),
			benchkit.MedianOf(rounds, func(f [][2]float64) float64 { return f[m][1] })))
	}
	return rows, nil
}

// e2Round starts both implementations' watch children side by side, each in
// a process of its own as in E1, makes cfg.updates pod updates through the
// API with cfg.writers concurrent writers once both have synced, and returns
// e2Metrics' figures for each: latencies from each write to each
// implementation's handler notification of its resource version.
func e2Round(ctx context.Context, client kubernetes.Interface, pods []corev1.Pod, cfg config, kubeconfig string, round int) ([][2]float64, error) {
	var watchers []*watcher
	for _, impl := range []string{implClientGo, implOurs} {
		w, err := startWatcher(ctx, impl, kubeconfig, cfg.pods)
		if err != nil {
			return nil, err
		}
		watchers = append(watchers, w)
	}
	logf("E2: both informers synced; making %d updates with %d writers", cfg.updates, cfg.writers)
	writes, err := update(ctx, client, pods, cfg.updates, cfg.writers, round)
	if err != nil {
		return nil, err
	}
	var last uint64
	for _, w := range writes {
		last = max(last, w.rv)
	}
	figures := make([][2]float64, len(e2Metrics))
	for side, w := range watchers {
		records, err := w.finish(strconv.FormatUint(last, 10))
		if err != nil {
			return nil, err
		}
		notified := make(map[string]int64, len(records))
		for _, r := range records {
			notified[r.RV] = r.At
		}
		var fromResponse, fromRequest []float64
		for _, wr := range writes {
			at, ok := notified[strconv.FormatUint(wr.rv, 10)]
			if !ok {
				return nil, fmt.Errorf("%s: no notification of the update at resource version %d", w.impl, wr.rv)
			}
			fromResponse = append(fromResponse, float64(at-wr.done)/1e6)
			fromRequest = append(fromRequest, float64(at-wr.sent)/1e6)
		}
		for m, metric := range e2Metrics {
			latencies := fromRequest
			if metric.response {
				latencies = fromResponse
			}
			figures[m][side] = quantile(latencies, metric.q)
		}
	}
	return figures, nil
}

// update makes n updates, each a merge patch of one annotation of a pod
// (pods in turn), by writers concurrent writers. The annotation's value
// names the round and the update, so that no patch leaves a pod unchanged
// (the server would answer with the old resource version and send no event).
func update(ctx context.Context, client kubernetes.Interface, pods []corev1.Pod, n, writers, round int) ([]write, error) {
	var mu sync.Mutex
	writes := make([]write, 0, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(writers)
	for u := range n {
		pod := &pods[u%len(pods)]
		g.Go(func() error {
			sent := time.Now().UnixNano()
			patch := []byte(`{"metadata":{"annotations":{"realbench/update":"` + strconv.Itoa(round) + "-" + strconv.Itoa(u) + `"}}}`)
			got, err := client.CoreV1().Pods(pod.Namespace).Patch(gctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
			done := time.Now().UnixNano()
			if err != nil {
				return fmt.Errorf("update %d of pod %s/%s: %w", u, pod.Namespace, pod.Name, err)
			}
			rv, err := strconv.ParseUint(got.ResourceVersion, 10, 64)
			if err != nil {
				return fmt.Errorf("update %d: resource version %q: %w", u, got.ResourceVersion, err)
			}
			mu.Lock()
			writes = append(writes, write{rv: rv, sent: sent, done: done})
			mu.Unlock()
			return nil
		})
	}
	return writes, g.Wait()
}

// quantile returns the q-quantile of vs (nearest rank).
func quantile(vs []float64, q float64) float64 {
	sorted := append([]float64(nil), vs...)
	slices.Sort(sorted)
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
