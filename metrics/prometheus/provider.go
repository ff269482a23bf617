// Package informerprom exports the metrics of github.com/kubetyped/informer
// informers to Prometheus. It lives in its own module so that the informer
// package does not depend on Prometheus.
//
// Import it under its package name, which does not clash with
// github.com/prometheus/client_golang/prometheus:
//
//	import informerprom "github.com/kubetyped/informer/metrics/prometheus"
//
//	provider, err := informerprom.NewProvider(prometheus.DefaultRegisterer)
//	...
//	factory, err := informer.NewFactory(config, informer.FactoryOptions{Metrics: provider})
//
// The series are listed in README.md beside this file.
package informerprom

import (
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubetyped/informer"
)

// Option configures a Provider.
type Option func(*settings)

type settings struct {
	buckets []float64
}

// defaultBatchDurationBuckets span 100 µs to about 26 s: a batch is one
// notification for a handler that keeps up, up to 512 for one that does not.
var defaultBatchDurationBuckets = prometheus.ExponentialBuckets(0.0001, 4, 10)

// WithBatchDurationBuckets sets the buckets, in seconds, of
// informer_handler_batch_duration_seconds.
func WithBatchDurationBuckets(buckets []float64) Option {
	return func(s *settings) { s.buckets = buckets }
}

// Provider is an informer.MetricsProvider that exports informers' metrics
// through a prometheus.Collector. Values the informers count anyway are read
// when the registry collects; only handler batch durations are observed as
// they happen.
//
// One Provider can serve any number of informers and factories; it is safe
// for concurrent use. Two informers with the same name (or two handlers of
// one informer with the same name) would produce clashing series: the later
// one is exported under its name followed by "#2" (or "#3", …) while the
// earlier one is registered.
type Provider struct {
	batchDurations *prometheus.HistogramVec

	mu        sync.Mutex
	informers map[string]*informerEntry // by exported name
	fleets    map[string]*fleetEntry    // by exported name
}

var _ informer.FleetMetricsProvider = (*Provider)(nil)

// NewProvider returns a Provider whose collector is registered with reg. It
// fails if reg refuses the collector, for example because another Provider
// is registered with it already: share one Provider instead.
func NewProvider(reg prometheus.Registerer, opts ...Option) (*Provider, error) {
	s := settings{buckets: defaultBatchDurationBuckets}
	for _, opt := range opts {
		opt(&s)
	}
	p := &Provider{
		batchDurations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "informer_handler_batch_duration_seconds",
			Help:    "Time a handler spent on one batch of notifications, from before its first call to after its last one returned.",
			Buckets: s.buckets,
		}, []string{"informer", "handler"}),
		informers: map[string]*informerEntry{},
		fleets:    map[string]*fleetEntry{},
	}
	if err := reg.Register((*collector)(p)); err != nil {
		return nil, fmt.Errorf("registering the informer metrics collector: %w", err)
	}
	return p, nil
}

// AddInformer implements informer.MetricsProvider.
func (p *Provider) AddInformer(id informer.InformerID, read func() informer.InformerSnapshot) informer.InformerMetrics {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := &informerEntry{
		p:        p,
		name:     uniqueName(id.Name, func(n string) bool { return p.informers[n] != nil }),
		resource: id.Resource.GroupResource().String(),
		read:     read,
		handlers: map[string]*handlerEntry{},
	}
	p.informers[e.name] = e
	return e
}

// AddFleet implements informer.FleetMetricsProvider: the fleet's series
// exist until remove is called.
func (p *Provider) AddFleet(id informer.InformerID, read func() informer.FleetStats) (remove func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := &fleetEntry{
		name:     uniqueName(id.Name, func(n string) bool { return p.fleets[n] != nil }),
		resource: id.Resource.GroupResource().String(),
		read:     read,
	}
	p.fleets[e.name] = e
	return func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.fleets[e.name] == e {
			delete(p.fleets, e.name)
		}
	}
}

// fleetEntry is a registered fleet.
type fleetEntry struct {
	name, resource string
	read           func() informer.FleetStats
}

// uniqueName returns name, or name followed by "#2", "#3", … if taken.
func uniqueName(name string, taken func(string) bool) string {
	candidate := name
	for n := 2; taken(candidate); n++ {
		candidate = name + "#" + strconv.Itoa(n)
	}
	return candidate
}

// informerEntry is a registered informer. Its handlers map is guarded by
// the provider's mu.
type informerEntry struct {
	p        *Provider
	name     string
	resource string
	read     func() informer.InformerSnapshot
	handlers map[string]*handlerEntry // by exported name
}

// AddHandler implements informer.InformerMetrics.
func (e *informerEntry) AddHandler(name string, read func() informer.HandlerStats) informer.HandlerMetrics {
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	h := &handlerEntry{
		informer: e,
		name:     uniqueName(name, func(n string) bool { return e.handlers[n] != nil }),
		read:     read,
	}
	h.batches = e.p.batchDurations.WithLabelValues(e.name, h.name)
	e.handlers[h.name] = h
	return h
}

// Remove implements informer.InformerMetrics: the informer's series
// disappear, and so do those of any handler still registered.
func (e *informerEntry) Remove() {
	e.p.mu.Lock()
	defer e.p.mu.Unlock()
	for _, h := range e.handlers {
		h.removeLocked()
	}
	if e.p.informers[e.name] == e {
		delete(e.p.informers, e.name)
	}
}

// handlerEntry is a registered handler.
type handlerEntry struct {
	informer *informerEntry
	name     string
	read     func() informer.HandlerStats
	batches  prometheus.Observer
}

// ObserveBatch implements informer.HandlerMetrics.
func (h *handlerEntry) ObserveBatch(elapsed time.Duration) {
	h.batches.Observe(elapsed.Seconds())
}

// Remove implements informer.HandlerMetrics: the handler's series
// disappear.
func (h *handlerEntry) Remove() {
	h.informer.p.mu.Lock()
	defer h.informer.p.mu.Unlock()
	h.removeLocked()
}

// removeLocked unregisters h, once. The provider's mu must be held.
func (h *handlerEntry) removeLocked() {
	if h.informer.handlers[h.name] != h {
		return
	}
	delete(h.informer.handlers, h.name)
	h.informer.p.batchDurations.DeleteLabelValues(h.informer.name, h.name)
}
