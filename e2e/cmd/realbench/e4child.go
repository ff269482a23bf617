package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/internal/benchkit"
)

// restartResult is what a restart child (E4) reports: first its sync's
// figures, then, once it has seen the write the parent names on stdin, its
// cache and (ours) the cost of the snapshot written on its clean stop.
type restartResult struct {
	// SyncedAt is when the informer synced (Unix nanoseconds; the parent
	// subtracts the time it started the process).
	SyncedAt int64 `json:"syncedAt"`
	// CPUSeconds is the process's user and system CPU time from its start
	// until synced (getrusage: start-up, snapshot read and sync).
	CPUSeconds float64 `json:"cpuSeconds"`
	// BytesReceived is the bytes of response bodies read from the server
	// until synced, as the transport hands them over (after gzip, if the
	// server compressed them).
	BytesReceived int64 `json:"bytesReceived"`
	// PeakHeap and PeakGCCycles are as in syncResult.
	PeakHeap     uint64 `json:"peakHeap"`
	PeakGCCycles uint64 `json:"peakGCCycles"`
	// Snapshot is ours' snapshot statistics once synced.
	Snapshot informer.SnapshotStats `json:"snapshot"`

	// Cache maps namespace/name to resource version, once the child has
	// seen the parent's last write.
	Cache map[string]string `json:"cache,omitempty"`
	// SaveSeconds and SaveCPUSeconds are the wall and CPU time of the clean
	// stop (cancel, Shutdown), which writes ours' snapshot; SavedBytes is
	// then Stats().Snapshot.LastSaveBytes.
	SaveSeconds    float64 `json:"saveSeconds,omitempty"`
	SaveCPUSeconds float64 `json:"saveCPUSeconds,omitempty"`
	SavedBytes     int64   `json:"savedBytes,omitempty"`
}

// countingTransport counts the bytes of every response body read through
// it.
type countingTransport struct {
	next  http.RoundTripper
	bytes *atomic.Int64
}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if resp != nil && resp.Body != nil {
		resp.Body = &countingBody{ReadCloser: resp.Body, bytes: t.bytes}
	}
	return resp, err
}

// countingBody adds what is read from the body to bytes.
type countingBody struct {
	io.ReadCloser
	bytes *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.bytes.Add(int64(n))
	return n, err
}

// restartInformer is the part of a restart child's informer it uses.
type restartInformer struct {
	// synced is closed once the informer has synced (its
	// HasSyncedChecker's Done): waited on, not polled, since a poll
	// every 100 µs took about 4% of a core, counted in the client CPU of
	// each start for as long as it synced.
	synced   <-chan struct{}
	cache    func() map[string]string
	snapshot func() informer.SnapshotStats
	stop     func()
}

// runRestartChild is the restart child (E4): it syncs the pods with
// c.Impl (ours with its snapshots in c.SnapshotDir), writes its
// restartResult's sync figures as one JSON line, reads "namespace/name
// resourceVersion" from stdin, waits until its cache holds that pod at that
// version, stops cleanly (ours writes its snapshot) and writes its cache and
// the stop's cost as a second JSON line.
func runRestartChild(c childSpec) error {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	config, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	var received atomic.Int64
	config.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, bytes: &received} })
	profile, err := startRestartProfile(c.Profile)
	if err != nil {
		return err
	}
	sampler := benchkit.StartHeapSampler(time.Millisecond)
	var inf restartInformer
	switch c.Impl {
	case implClientGo:
		inf, err = startRestartClientGo(ctx, cancel, config)
	case implOurs:
		inf, err = startRestartOurs(ctx, cancel, config, c.SnapshotDir)
	default:
		err = fmt.Errorf("unknown implementation %q", c.Impl)
	}
	if err != nil {
		return err
	}
	select {
	case <-inf.synced:
	case <-time.After(10 * time.Minute):
		return fmt.Errorf("%s: not synced after 10 minutes", c.Impl)
	}
	res := restartResult{SyncedAt: time.Now().UnixNano(), BytesReceived: received.Load()}
	cpu, err := benchkit.CPUTime()
	if err != nil {
		return err
	}
	if err := profile.stop(); err != nil {
		return err
	}
	res.CPUSeconds = cpu.Seconds()
	res.PeakHeap, res.PeakGCCycles = sampler.Stop(), sampler.GCCycles()
	res.Snapshot = inf.snapshot()
	out := json.NewEncoder(os.Stdout)
	if err := out.Encode(res); err != nil {
		return err
	}

	in := bufio.NewScanner(os.Stdin)
	if !in.Scan() {
		return fmt.Errorf("no last write on stdin: %v", in.Err())
	}
	key, rv, ok := strings.Cut(strings.TrimSpace(in.Text()), " ")
	if !ok {
		return fmt.Errorf("last write %q is not \"namespace/name resourceVersion\"", in.Text())
	}
	deadline := time.Now().Add(5 * time.Minute)
	for inf.cache()[key] != rv {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s not at resource version %s after 5 minutes", c.Impl, key, rv)
		}
		time.Sleep(10 * time.Millisecond)
	}
	final := restartResult{Cache: inf.cache()}
	before, err := benchkit.CPUTime()
	if err != nil {
		return err
	}
	start := time.Now()
	inf.stop()
	final.SaveSeconds = time.Since(start).Seconds()
	after, err := benchkit.CPUTime()
	if err != nil {
		return err
	}
	final.SaveCPUSeconds = (after - before).Seconds()
	final.SavedBytes = inf.snapshot().LastSaveBytes
	return out.Encode(final)
}

// startRestartProfile starts the restart child's profile (see
// startSyncProfile) if prefix is not empty; it covers the child from its
// flags' parsing until synced, so a warm start's snapshot read is in it.
func startRestartProfile(prefix string) (*syncProfile, error) {
	if prefix == "" {
		return nil, nil
	}
	return startSyncProfile(prefix)
}

// startRestartClientGo starts client-go's pod informer from its shared
// informer factory over a protobuf clientset, as a controller builds it.
func startRestartClientGo(ctx context.Context, cancel context.CancelFunc, config *rest.Config) (restartInformer, error) {
	client, err := clientset(config)
	if err != nil {
		return restartInformer{}, err
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	inf := factory.Core().V1().Pods().Informer()
	factory.Start(ctx.Done())
	return restartInformer{
		synced: inf.HasSyncedChecker().Done(),
		cache: func() map[string]string {
			m := map[string]string{}
			for _, obj := range inf.GetStore().List() {
				if pod, ok := obj.(*corev1.Pod); ok {
					m[pod.Namespace+"/"+pod.Name] = pod.ResourceVersion
				}
			}
			return m
		},
		snapshot: func() informer.SnapshotStats { return informer.SnapshotStats{} },
		stop: func() {
			cancel()
			factory.Shutdown()
		},
	}, nil
}

// startRestartOurs starts this library's pod informer from its factory with
// default settings and its snapshots in dir.
func startRestartOurs(ctx context.Context, cancel context.CancelFunc, config *rest.Config, dir string) (restartInformer, error) {
	factory, err := informer.NewFactory(config, informer.FactoryOptions{Snapshot: informer.SnapshotOptions{Dir: dir}})
	if err != nil {
		return restartInformer{}, err
	}
	inf, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{})
	if err != nil {
		return restartInformer{}, err
	}
	factory.Start(ctx)
	return restartInformer{
		synced: inf.HasSyncedChecker().Done(),
		cache: func() map[string]string {
			m := map[string]string{}
			pods, _ := inf.Lister().List(labels.Everything())
			for _, pod := range pods {
				m[pod.Namespace+"/"+pod.Name] = pod.ResourceVersion
			}
			return m
		},
		snapshot: func() informer.SnapshotStats { return inf.Stats().Snapshot },
		stop: func() {
			cancel()
			factory.Shutdown()
		},
	}, nil
}
