package informer_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/informertest"
)

// Helpers of the metrics tests: a fake MetricsProvider, handlers and
// synctest helpers.

// fakeMetrics is a MetricsProvider that records the registrations in order
// and keeps the read functions and batch durations it was given.
type fakeMetrics struct {
	// nilInformers and nilHandlers make AddInformer and AddHandler return
	// nil.
	nilInformers, nilHandlers bool

	mu        sync.Mutex
	log       []string
	ids       []informer.InformerID
	informers map[string]func() informer.InformerSnapshot
	handlers  map[string]*fakeHandlerMetrics
}

func newFakeMetrics() *fakeMetrics {
	return &fakeMetrics{
		informers: map[string]func() informer.InformerSnapshot{},
		handlers:  map[string]*fakeHandlerMetrics{},
	}
}

// calls returns the registrations and removals so far, in order.
func (p *fakeMetrics) calls() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.log)
}

// snapshot reads the values of the registered informer name.
func (p *fakeMetrics) snapshot(t *testing.T, name string) informer.InformerSnapshot {
	t.Helper()
	p.mu.Lock()
	read := p.informers[name]
	p.mu.Unlock()
	if read == nil {
		t.Fatalf("informer %q is not registered", name)
	}
	return read()
}

// handler returns the registered handler "informer/handler", or nil.
func (p *fakeMetrics) handler(key string) *fakeHandlerMetrics {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.handlers[key]
}

func (p *fakeMetrics) AddInformer(id informer.InformerID, read func() informer.InformerSnapshot) informer.InformerMetrics {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log = append(p.log, "add informer "+id.Name)
	p.ids = append(p.ids, id)
	if p.nilInformers {
		return nil
	}
	p.informers[id.Name] = read
	return &fakeInformerMetrics{p: p, name: id.Name}
}

type fakeInformerMetrics struct {
	p    *fakeMetrics
	name string
}

func (m *fakeInformerMetrics) AddHandler(name string, read func() informer.HandlerStats) informer.HandlerMetrics {
	key := m.name + "/" + name
	m.p.mu.Lock()
	defer m.p.mu.Unlock()
	m.p.log = append(m.p.log, "add handler "+key)
	if m.p.nilHandlers {
		return nil
	}
	h := &fakeHandlerMetrics{p: m.p, key: key, read: read}
	m.p.handlers[key] = h
	return h
}

func (m *fakeInformerMetrics) Remove() {
	m.p.mu.Lock()
	defer m.p.mu.Unlock()
	m.p.log = append(m.p.log, "remove informer "+m.name)
	delete(m.p.informers, m.name)
}

type fakeHandlerMetrics struct {
	p    *fakeMetrics
	key  string
	read func() informer.HandlerStats

	mu      sync.Mutex
	batches []time.Duration
}

func (h *fakeHandlerMetrics) ObserveBatch(elapsed time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.batches = append(h.batches, elapsed)
}

func (h *fakeHandlerMetrics) observed() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.batches)
}

func (h *fakeHandlerMetrics) Remove() {
	h.p.mu.Lock()
	defer h.p.mu.Unlock()
	h.p.log = append(h.p.log, "remove handler "+h.key)
	delete(h.p.handlers, h.key)
}

func mtNoErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// mtCounter is a handler counting its notifications; it panics on objects
// named "bad".
type mtCounter struct {
	mu    sync.Mutex
	calls int
}

func (c *mtCounter) count(obj *corev1.Pod) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	if obj.Name == "bad" {
		panic("bad object")
	}
}

func (c *mtCounter) OnAdd(obj *corev1.Pod, _ bool)                  { c.count(obj) }
func (c *mtCounter) OnUpdate(_, obj *corev1.Pod)                    { c.count(obj) }
func (c *mtCounter) OnDelete(d informer.DeletedObject[*corev1.Pod]) { c.count(d.Object) }

func (c *mtCounter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

// runInformer runs inf in the current synctest bubble until the test
// stops it, and returns the function that stops it and waits for Run.
func runInformer[T informer.Object](t *testing.T, inf *informer.Informer[T]) (stop func()) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.Run(ctx)
	}()
	stop = func() {
		cancel()
		<-done
	}
	t.Cleanup(stop)
	return stop
}

// advanceUntil lets the bubble's fake time pass in small steps until cond
// holds; it fails after an hour of fake time. Backoff delays elapse this way.
func advanceUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for step := 0; !cond(); step++ {
		if step == 36000 {
			t.Fatalf("%s did not happen", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func callsAtLeast(lw *informertest.FakeListerWatcher[*corev1.Pod], n int) func() bool {
	return func() bool { return len(lw.Calls()) >= n }
}
