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
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/crcache"
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
	// StartLine is the message of the line a start of ours (or crcache's)
	// with snapshots logs once synced ("Synced from a snapshot by resuming
	// its watch", "Synced cold", ...).
	StartLine string `json:"startLine,omitempty"`

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

// startLineSink is the restart child's klog logger: it drops everything
// but the line a start with snapshots logs once synced, whose message it
// keeps (the E4 parent tells resumed from listed starts of crcache by it,
// since crcache has no statistics).
type startLineSink struct {
	mu   sync.Mutex
	line string
}

func (s *startLineSink) Init(logr.RuntimeInfo)  {}
func (s *startLineSink) Enabled(level int) bool { return level == 0 }
func (s *startLineSink) Info(_ int, msg string, _ ...any) {
	if strings.HasPrefix(msg, "Synced") {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.line = msg
	}
}
func (s *startLineSink) Error(error, string, ...any)    {}
func (s *startLineSink) WithValues(...any) logr.LogSink { return s }
func (s *startLineSink) WithName(string) logr.LogSink   { return s }
func (s *startLineSink) get() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.line
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
	startLine := &startLineSink{}
	klog.SetLogger(logr.New(startLine))
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
	case implCRCache:
		inf, err = startRestartCRCache(ctx, cancel, config, c.SnapshotDir)
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
	// The line is logged by a goroutine of its own once synced: wait for
	// it (a failure guard, not a measurement).
	for wait := time.Now(); c.Impl != implClientGo && startLine.get() == "" && time.Since(wait) < time.Minute; {
		time.Sleep(time.Millisecond)
	}
	res.StartLine = startLine.get()
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

// startRestartCRCache starts crcache's pod informer, default options but
// for its snapshots in dir, as a controller-runtime manager would (its
// snapshot statistics are not exposed: the parent reads the start's line).
func startRestartCRCache(ctx context.Context, cancel context.CancelFunc, config *rest.Config, dir string) (restartInformer, error) {
	c, err := crcache.NewWith(crcache.Options{Snapshot: informer.SnapshotOptions{Dir: dir}})(config, cache.Options{Scheme: scheme.Scheme})
	if err != nil {
		return restartInformer{}, err
	}
	if _, err := c.GetInformer(ctx, &corev1.Pod{}, cache.BlockUntilSynced(false)); err != nil {
		return restartInformer{}, err
	}
	done := make(chan struct{})
	go func() {
		if err := c.Start(ctx); err != nil {
			logf("crcache: Start: %v", err)
		}
		close(done)
	}()
	synced := make(chan struct{})
	go func() {
		// crcache waits on its informers' HasSyncedChecker channels: no
		// polling.
		if c.WaitForCacheSync(ctx) {
			close(synced)
		}
	}()
	return restartInformer{
		synced: synced,
		cache: func() map[string]string {
			m := map[string]string{}
			var pods corev1.PodList
			if err := c.List(ctx, &pods); err != nil {
				return m
			}
			for _, pod := range pods.Items {
				m[pod.Namespace+"/"+pod.Name] = pod.ResourceVersion
			}
			return m
		},
		snapshot: func() informer.SnapshotStats { return informer.SnapshotStats{} },
		stop: func() {
			cancel()
			<-done
		},
	}, nil
}
