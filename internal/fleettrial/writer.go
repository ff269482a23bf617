package fleettrial

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubetyped/informer/internal/benchkit"
	"github.com/kubetyped/informer/internal/replayserver"
)

// recorder is what the handlers of a trial's caches report to: every add
// is counted, and while recording, every update is noted with the time
// the handler saw it, for the writer's latencies.
type recorder struct {
	adds      atomic.Int64
	recording atomic.Bool
	mu        sync.Mutex
	seen      map[change]time.Time
}

// change is one version of one pod of one cluster.
type change struct {
	cluster                          int
	namespace, name, resourceVersion string
}

func newRecorder() *recorder {
	return &recorder{seen: map[change]time.Time{}}
}

// add counts an add.
func (r *recorder) add() { r.adds.Add(1) }

// update notes, while recording, that cluster's handler saw pod.
func (r *recorder) update(cluster int, pod *corev1.Pod) {
	if !r.recording.Load() {
		return
	}
	now := time.Now()
	c := change{cluster: cluster, namespace: pod.Namespace, name: pod.Name, resourceVersion: pod.ResourceVersion}
	r.mu.Lock()
	if _, ok := r.seen[c]; !ok {
		r.seen[c] = now
	}
	r.mu.Unlock()
}

// seenAt returns when the handler saw c, if it has.
func (r *recorder) seenAt(c change) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.seen[c]
	return t, ok
}

// defaultWriteRate is the writer's pace, requests (one pod each) per
// second, unless Spec.WriteRate says otherwise.
const defaultWriteRate = 500

// writeAndTime has the replay server change writes pods, one per request,
// cluster after cluster round-robin (so that the writes are spread across
// the clusters), at rate requests a second, and returns the latencies of
// their events as the handlers saw them (see Latency), once every change
// has been seen.
func writeAndTime(ctx context.Context, clusters []replayserver.Cluster, writes int, rate float64, rec *recorder, timeout time.Duration) (Latency, error) {
	if rate <= 0 {
		rate = defaultWriteRate
	}
	interval := time.Duration(float64(time.Second) / rate)
	type sent struct {
		change
		at time.Time
	}
	out := make([]sent, 0, writes)
	rec.recording.Store(true)
	defer rec.recording.Store(false)
	began := time.Now()
	for k := range writes {
		if wait := time.Until(began.Add(time.Duration(k) * interval)); wait > 0 {
			time.Sleep(wait)
		}
		c := k % len(clusters)
		at := time.Now()
		ws, err := clusters[c].Write(ctx, 1)
		if err != nil {
			return Latency{}, err
		}
		if len(ws) != 1 {
			return Latency{}, fmt.Errorf("cluster %d: asked for one write, the server made %d", c, len(ws))
		}
		w := ws[0]
		out = append(out, sent{change: change{cluster: c, namespace: w.Namespace, name: w.Name, resourceVersion: strconv.FormatUint(w.ResourceVersion, 10)}, at: at})
	}
	lat := Latency{Events: len(out), WriteSeconds: time.Since(began).Seconds()}
	// seen is how many of out, from the first, the handlers have seen.
	seen := 0
	allSeen := func() bool {
		for ; seen < len(out); seen++ {
			if _, ok := rec.seenAt(out[seen].change); !ok {
				return false
			}
		}
		return true
	}
	if err := benchkit.WaitUntil(timeout, allSeen); err != nil {
		return Latency{}, fmt.Errorf("written change %d of %d (%+v) never reached a handler: %w", seen, len(out), out[seen].change, err)
	}
	ds := make([]time.Duration, len(out))
	for i, s := range out {
		seen, _ := rec.seenAt(s.change)
		ds[i] = seen.Sub(s.at)
	}
	lat.P50, lat.P99 = percentile(ds, 0.50).Nanoseconds(), percentile(ds, 0.99).Nanoseconds()
	return lat, nil
}
