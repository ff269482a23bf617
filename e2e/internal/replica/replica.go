// Package replica runs the replicas of a sharded controller in one process,
// for the sharding end-to-end test and the E3 command (cmd/e3-sharding):
// each replica has its own clients, ShardGroup and factory with a dynamic
// shard of the pods of one namespace, and a handler that follows what it
// was told it holds. A replica can crash: its requests then fail, so its
// Lease stays behind until it expires, as a killed process's does.
package replica

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer"
)

// Options are the replicas' settings.
type Options struct {
	// Namespace holds the pods and the Leases.
	Namespace string
	// Group names the shard group.
	Group string
	// LeaseDuration and RenewInterval are the group's Lease timing.
	LeaseDuration, RenewInterval time.Duration
}

// Replica is one member of the group.
type Replica struct {
	Name  string
	Group *informer.ShardGroup
	Pods  *informer.Informer[*corev1.Pod]

	crashed atomic.Bool
	stop    func()

	mu      sync.Mutex
	held    map[string]bool // by the handler's notifications
	moved   []string
	updates int
}

// errCrashed fails the requests of a crashed replica.
var errCrashed = errors.New("replica crashed")

type crashTransport struct {
	next    http.RoundTripper
	crashed *atomic.Bool
}

func (c crashTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if c.crashed.Load() {
		return nil, errCrashed
	}
	return c.next.RoundTrip(req)
}

// Start starts a replica named name and waits for its informer to sync.
func Start(ctx context.Context, config *rest.Config, opts Options, name string) (*Replica, error) {
	r := &Replica{Name: name, held: map[string]bool{}}
	leaseConfig := rest.CopyConfig(config)
	leaseConfig.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return crashTransport{rt, &r.crashed} }
	leaseClient, err := kubernetes.NewForConfig(leaseConfig)
	if err != nil {
		return nil, err
	}
	r.Group, err = informer.NewShardGroup(leaseClient.CoordinationV1(), informer.ShardGroupOptions{
		Name: opts.Group, Namespace: opts.Namespace, Identity: name, LeaseDuration: opts.LeaseDuration, RenewInterval: opts.RenewInterval,
	})
	if err != nil {
		return nil, err
	}
	factory, err := informer.NewFactory(config, informer.FactoryOptions{Namespace: opts.Namespace, Shard: &informer.Shard{Group: r.Group}})
	if err != nil {
		return nil, err
	}
	if r.Pods, err = informer.For(factory, informer.InformerOptions[*corev1.Pod]{}); err != nil {
		return nil, err
	}
	if _, err := r.Pods.AddEventHandler(r.handler()); err != nil {
		return nil, err
	}
	groupCtx, stopGroup := context.WithCancel(ctx)
	groupDone := make(chan struct{})
	go func() {
		defer close(groupDone)
		_ = r.Group.Run(groupCtx) // fails only if already running
	}()
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			factory.Shutdown()
			stopGroup()
			<-groupDone
		})
	}
	factory.Start(ctx)
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		r.stop()
		return nil, fmt.Errorf("replica %s: %w", name, err)
	}
	return r, nil
}

func (r *Replica) handler() informer.ResourceEventHandlerFuncs[*corev1.Pod] {
	return informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		AddFunc: func(p *corev1.Pod, _ bool) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.held[informer.KeyOf(p)] = true
		},
		UpdateFunc: func(_, _ *corev1.Pod) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.updates++
		},
		DeleteFunc: func(d informer.DeletedObject[*corev1.Pod]) {
			r.mu.Lock()
			defer r.mu.Unlock()
			delete(r.held, d.Name.String())
			if d.Moved {
				r.moved = append(r.moved, d.Name.String())
			}
		},
	}
}

// Stop stops the replica as a process that exits does: it deletes its
// Lease. It returns once the replica has stopped.
func (r *Replica) Stop() { r.stop() }

// Crash stops the replica as a killed process: its Lease stays until it
// expires.
func (r *Replica) Crash() {
	r.crashed.Store(true)
	r.stop()
}

// Updates returns the number of updates the handler was notified of.
func (r *Replica) Updates() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.updates
}

// TakeMoved returns the keys of the objects the handler was told moved
// away since the last call, sorted.
func (r *Replica) TakeMoved() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	moved := r.moved
	r.moved = nil
	slices.Sort(moved)
	return moved
}

// Keys returns the keys of the pods the replica's cache holds, sorted.
func (r *Replica) Keys() []string {
	pods, _ := r.Pods.Lister().List(nil)
	keys := make([]string, 0, len(pods))
	for _, p := range pods {
		keys = append(keys, informer.KeyOf(p))
	}
	slices.Sort(keys)
	return keys
}

// Differences compares the replicas' caches with a LIST.
type Differences struct {
	// Held is the number of pods each replica caches.
	Held []int
	// Missing pods are listed but cached by no replica; Extra are cached
	// but not listed; Duplicated are cached by more than one; Stale are
	// cached at another resource version than listed; Unnotified are
	// cached by a replica whose handler does not hold them, or the other
	// way round.
	Missing, Extra, Duplicated, Stale, Unnotified int
}

// Total is the number of differences.
func (d Differences) Total() int {
	return d.Missing + d.Extra + d.Duplicated + d.Stale + d.Unnotified
}

func (d Differences) String() string {
	return fmt.Sprintf("held %v; missing %d, extra %d, duplicated %d, stale %d, unnotified %d", d.Held, d.Missing, d.Extra, d.Duplicated, d.Stale, d.Unnotified)
}

// Compare compares the replicas' caches and handlers with listed.
func Compare(replicas []*Replica, listed []corev1.Pod) Differences {
	var d Differences
	want := map[string]string{}
	for i := range listed {
		want[informer.KeyOf(&listed[i])] = listed[i].ResourceVersion
	}
	seen := map[string]bool{}
	for _, r := range replicas {
		pods, _ := r.Pods.Lister().List(nil)
		d.Held = append(d.Held, len(pods))
		r.mu.Lock()
		cached := map[string]bool{}
		for _, p := range pods {
			key := informer.KeyOf(p)
			cached[key] = true
			rv, ok := want[key]
			switch {
			case seen[key]:
				d.Duplicated++
			case !ok:
				d.Extra++
			case rv != p.ResourceVersion:
				d.Stale++
			}
			seen[key] = true
			if !r.held[key] {
				d.Unnotified++
			}
		}
		for key := range r.held {
			if !cached[key] {
				d.Unnotified++
			}
		}
		r.mu.Unlock()
	}
	for key := range want {
		if !seen[key] {
			d.Missing++
		}
	}
	return d
}

// WaitSettled waits until every replica sees the others as the group's
// members and has synced, and the replicas' caches and handlers partition a
// LIST of the namespace with no difference. It returns how long that took
// and the last comparison (with an error if ctx ended first).
func WaitSettled(ctx context.Context, client kubernetes.Interface, namespace string, replicas []*Replica) (time.Duration, Differences, error) {
	start := time.Now()
	var names []string
	for _, r := range replicas {
		names = append(names, r.Name)
	}
	slices.Sort(names)
	for {
		settled := true
		for _, r := range replicas {
			settled = settled && slices.Equal(r.Group.Members(), names) && r.Pods.HasSynced()
		}
		list, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return time.Since(start), Differences{}, err
		}
		d := Compare(replicas, list.Items)
		if settled && d.Total() == 0 {
			return time.Since(start), d, nil
		}
		select {
		case <-ctx.Done():
			return time.Since(start), d, fmt.Errorf("replicas %v did not settle: %w", names, context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// CreatePods creates n pending pods named pod-<i> in namespace, 8 at a
// time.
func CreatePods(ctx context.Context, client kubernetes.Interface, namespace string, n int) error {
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	var next atomic.Int64
	for range 8 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n) && failed.Load() == nil; i = next.Add(1) - 1 {
				pod := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i)},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/none:latest"}}},
				}
				if _, err := client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
					failed.Store(&err)
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		return fmt.Errorf("create pods: %w", *err)
	}
	return nil
}
