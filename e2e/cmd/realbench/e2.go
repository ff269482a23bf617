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
	cmd, err := childCommand(ctx, "watch", impl, kubeconfig, pods, false)
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

// runE2 starts both implementations' watch children side by side, each in a
// process of its own as in E1, makes cfg.updates pod updates through the API
// with cfg.writers concurrent writers once both have synced, and reports
// the latency from each write's response to each implementation's handler
// notification of that resource version.
func runE2(ctx context.Context, c *cluster.Cluster, cfg config, kubeconfig string) ([]row, error) {
	client, err := clientset(c.Config())
	if err != nil {
		return nil, err
	}
	pods, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	var watchers []*watcher
	for _, impl := range []string{implClientGo, implOurs} {
		w, err := startWatcher(ctx, impl, kubeconfig, cfg.pods)
		if err != nil {
			return nil, err
		}
		watchers = append(watchers, w)
	}
	logf("E2: both informers synced; making %d updates with %d writers", cfg.updates, cfg.writers)
	writes, err := update(ctx, client, pods.Items, cfg.updates, cfg.writers)
	if err != nil {
		return nil, err
	}
	var last uint64
	for _, w := range writes {
		last = max(last, w.rv)
	}
	fromResponse, fromRequest := map[string][]float64{}, map[string][]float64{}
	for _, w := range watchers {
		records, err := w.finish(strconv.FormatUint(last, 10))
		if err != nil {
			return nil, err
		}
		notified := make(map[string]int64, len(records))
		for _, r := range records {
			notified[r.RV] = r.At
		}
		for _, wr := range writes {
			at, ok := notified[strconv.FormatUint(wr.rv, 10)]
			if !ok {
				return nil, fmt.Errorf("%s: no notification of the update at resource version %d", w.impl, wr.rv)
			}
			fromResponse[w.impl] = append(fromResponse[w.impl], float64(at-wr.done)/1e6)
			fromRequest[w.impl] = append(fromRequest[w.impl], float64(at-wr.sent)/1e6)
		}
	}
	// The watch event often reaches an informer before the writer has read
	// the response, so latency from the response (the workload's
	// definition) is often negative; latency from the request, always
	// positive, is reported beside it.
	name := fmt.Sprintf("%d updates, %d writers", cfg.updates, cfg.writers)
	var rows []row
	for _, from := range []struct {
		label     string
		latencies map[string][]float64
	}{{"from response", fromResponse}, {"from request", fromRequest}} {
		for _, q := range []float64{0.5, 0.99} {
			rows = append(rows, newRow("E2", name, fmt.Sprintf("p%.0f latency ms %s", q*100, from.label),
				quantile(from.latencies[implClientGo], q), quantile(from.latencies[implOurs], q)))
		}
	}
	return rows, nil
}

// update makes n updates, each a merge patch of one annotation of a pod
// (pods in turn), by writers concurrent writers.
func update(ctx context.Context, client kubernetes.Interface, pods []corev1.Pod, n, writers int) ([]write, error) {
	var mu sync.Mutex
	writes := make([]write, 0, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(writers)
	for u := range n {
		pod := &pods[u%len(pods)]
		g.Go(func() error {
			sent := time.Now().UnixNano()
			patch := []byte(`{"metadata":{"annotations":{"realbench/update":"` + strconv.Itoa(u) + `"}}}`)
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
