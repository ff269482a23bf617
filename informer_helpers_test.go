package informer

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2/ktesting"

	"github.com/kubetyped/informer/informertest"
	"github.com/kubetyped/informer/internal/testkit"
)

// Helpers shared by the pipeline's tests (informer, registration,
// processor, listener, queue and handler tests).

// plTimeout bounds every wait in the pipeline tests.
const plTimeout = testkit.Timeout

// plEvent is one notification as a handler saw it, comparable with cmp.Diff.
type plEvent struct {
	Op      string // "add", "update" or "delete"
	Key     string
	RV      string // the new (or deleted) object's resource version
	OldRV   string // update only
	Initial bool   // add only
	FSU     bool   // delete only
}

func plAdd(key, rv string, initial bool) plEvent {
	return plEvent{Op: "add", Key: key, RV: rv, Initial: initial}
}
func plUpdate(key, oldRV, rv string) plEvent {
	return plEvent{Op: "update", Key: key, RV: rv, OldRV: oldRV}
}
func plDelete(key, rv string, fsu bool) plEvent {
	return plEvent{Op: "delete", Key: key, RV: rv, FSU: fsu}
}

// plRecorder is a handler that records what it receives. hook, if set, runs
// for every notification before it is recorded.
type plRecorder struct {
	hook    func(plEvent)
	mu      sync.Mutex
	events  []plEvent
	changed chan struct{}
}

func newPLRecorder() *plRecorder { return &plRecorder{changed: make(chan struct{})} }

func (r *plRecorder) OnAdd(obj *corev1.Pod, initial bool) {
	r.record(plAdd(KeyOf(obj), obj.ResourceVersion, initial))
}
func (r *plRecorder) OnUpdate(oldObj, newObj *corev1.Pod) {
	r.record(plUpdate(KeyOf(newObj), oldObj.ResourceVersion, newObj.ResourceVersion))
}
func (r *plRecorder) OnDelete(d DeletedObject[*corev1.Pod]) {
	if d.Name != NameOf(d.Object) {
		panic(fmt.Sprintf("DeletedObject name %v does not match its object %v", d.Name, NameOf(d.Object)))
	}
	r.record(plDelete(d.Name.String(), d.Object.ResourceVersion, d.FinalStateUnknown))
}

func (r *plRecorder) record(e plEvent) {
	if r.hook != nil {
		r.hook(e)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
	close(r.changed)
	r.changed = make(chan struct{})
}

// get returns a copy of the events recorded so far.
func (r *plRecorder) get() []plEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]plEvent(nil), r.events...)
}

// reset forgets the events recorded so far.
func (r *plRecorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = nil
}

// waitFor waits until at least n events were recorded and returns them.
func (r *plRecorder) waitFor(t testing.TB, n int) []plEvent {
	t.Helper()
	deadline := time.After(plTimeout)
	for {
		r.mu.Lock()
		if len(r.events) >= n {
			events := append([]plEvent(nil), r.events...)
			r.mu.Unlock()
			return events
		}
		changed := r.changed
		r.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("timed out waiting for %d events, got %v", n, r.get())
		}
	}
}

// expect waits for len(want) events and compares the whole sequence.
func (r *plRecorder) expect(t testing.TB, want ...plEvent) {
	t.Helper()
	got := r.waitFor(t, len(want))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}
}

// Eventually is testkit.Eventually: the one polling helper of this
// package's tests, internal and external.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testkit.Eventually(t, what, cond)
}

// waitUntil is testkit.WaitUntil, for the few waits that report an error
// instead of failing.
func waitUntil(cond func() bool) bool { return testkit.WaitUntil(cond) }

// plPipelineGoroutines returns the stacks of goroutines running the
// pipeline's code.
func plPipelineGoroutines() []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var found []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		for _, marker := range []string{"informer.(*listener[", "informer.(*Informer[", "informer.(*Reflector["} {
			if strings.Contains(g, marker) {
				found = append(found, g)
				break
			}
		}
	}
	return found
}

// plFastBackoff makes relists immediate in tests.
var plFastBackoff = &wait.Backoff{Duration: time.Millisecond, Factor: 1, Steps: 1 << 30}

// plInformer returns an informer over a new fake with a namespace index and
// fast retries.
func plInformer(t testing.TB, opts InformerOptions[*corev1.Pod]) (*Informer[*corev1.Pod], *informertest.FakeListerWatcher[*corev1.Pod]) {
	t.Helper()
	lw := informertest.NewFakeListerWatcher[*corev1.Pod]()
	if opts.Indexers == nil {
		opts.Indexers = map[string]IndexFunc[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]}
	}
	if opts.Backoff == nil {
		opts.Backoff = plFastBackoff
	}
	return MustNewInformer(t, lw, opts), lw
}

// plRun runs inf until the test ends (or stop is called) and then checks
// that Run returned and left no goroutine behind.
func plRun[T Object](t testing.TB, inf *Informer[T]) (stop func()) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	return plRunContext(t, ctx, inf)
}

// plRunContext is plRun with the context (and so the logger) Run gets.
func plRunContext[T Object](t testing.TB, ctx context.Context, inf *Informer[T]) (stop func()) {
	t.Helper()
	checkGoroutines := ExpectNoGoroutineLeak(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.Run(ctx)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			cancelled := time.Now()
			select {
			case <-done:
				t.Logf("Run returned %v after its context was cancelled", time.Since(cancelled))
			case <-time.After(plTimeout): // a failure guard, not a timing assertion
				t.Fatalf("Run did not return after its context was cancelled:\n%s", strings.Join(plPipelineGoroutines(), "\n\n"))
			}
			checkGoroutines()
		})
	}
	t.Cleanup(stop)
	return stop
}

// plMust fails the test on error.
func plMust(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// plCtx is a context for fake calls bounded by the test timeout.
func plCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), plTimeout)
	t.Cleanup(cancel)
	return ctx
}

// plRV returns a pod's resource version as a number.
func plRV(p *corev1.Pod) int {
	n, _ := strconv.Atoi(p.ResourceVersion)
	return n
}

// plChainCheck verifies, per object, that a handler saw a consistent
// sequence: an add first (or after a delete), then updates whose old state
// is the state it saw last, and no event after a delete but an add.
type plChainCheck struct {
	mu     sync.Mutex
	last   map[string]string // key -> last resource version seen; absent = not present
	errors []string
}

func (c *plChainCheck) observe(e plEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last = map[string]string{}
	}
	last, present := c.last[e.Key]
	switch {
	case e.Op == "add" && present:
		c.errors = append(c.errors, "add of a present object: "+e.Key+"@"+e.RV)
	case e.Op == "update" && (!present || last != e.OldRV):
		c.errors = append(c.errors, "update "+e.Key+" from "+e.OldRV+" but last seen "+last)
	case e.Op == "delete" && !present:
		c.errors = append(c.errors, "delete of an absent object: "+e.Key)
	}
	if e.Op == "delete" {
		delete(c.last, e.Key)
	} else {
		c.last[e.Key] = e.RV
	}
}

// plSorted returns a sorted copy of keys.
func plSorted(keys []string) []string {
	out := append([]string{}, keys...)
	slices.Sort(out)
	return out
}

// NewPod is testkit.NewPod, the one pod constructor of the tests.
func NewPod(namespace, name, rv string, opts ...func(*corev1.Pod)) *corev1.Pod {
	return testkit.NewPod(namespace, name, rv, opts...)
}

// PodLabels is testkit.PodLabels.
func PodLabels(labels map[string]string) func(*corev1.Pod) { return testkit.PodLabels(labels) }

// PodNode is testkit.PodNode.
func PodNode(node string) func(*corev1.Pod) { return testkit.PodNode(node) }

// diffLarge is testkit.DiffLarge: cmp.Diff that first tries
// reflect.DeepEqual, for randomized tests of large values.
func diffLarge(want, got any, opts ...cmp.Option) string {
	return testkit.DiffLarge(want, got, opts...)
}

// UpdateCapture is a handler that records, per pod key, the objects of the
// last update it received; the internal and external tests of relists
// share it.
type UpdateCapture struct {
	mu      sync.Mutex
	updates map[string][2]*corev1.Pod
}

// NewUpdateCapture returns an UpdateCapture that recorded nothing.
func NewUpdateCapture() *UpdateCapture {
	return &UpdateCapture{updates: map[string][2]*corev1.Pod{}}
}

func (c *UpdateCapture) OnAdd(*corev1.Pod, bool) {}
func (c *UpdateCapture) OnUpdate(oldObj, newObj *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates[KeyOf(newObj)] = [2]*corev1.Pod{oldObj, newObj}
}
func (c *UpdateCapture) OnDelete(DeletedObject[*corev1.Pod]) {}

// Get returns the old and new objects of the last update of key.
func (c *UpdateCapture) Get(key string) ([2]*corev1.Pod, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.updates[key]
	return u, ok
}

// Snapshot returns a copy of every key's last update.
func (c *UpdateCapture) Snapshot() map[string][2]*corev1.Pod {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.updates)
}
