package informer

import (
	"context"
	"errors"
	"net/http"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"

	"github.com/kubetyped/informer/internal/wire"
)

// clusterListerWatcher is the ListerWatcher of one cluster of a fleet: it
// lists and watches through the cluster's current ListerWatcher, which
// UpdateCluster replaces, holds one of the fleet's sync slots from a
// list's first page to its last (FleetOptions.MaxConcurrentSyncs), and
// describes the cluster to its informer by its name in the fleet (the
// snapshot scope's serverIdentity.Cluster).
type clusterListerWatcher[T Object] struct {
	// desc is the description of the first ListerWatcher, named after the
	// cluster; the zero value's (no interning, no dropped fields) for one
	// that does not describe itself. Its DropFields transport counts what
	// every later ListerWatcher's fails to parse too (replace).
	desc  lwDescription
	slots chan struct{}
	clock clock.Clock

	mu sync.Mutex
	lw ListerWatcher[T]
	// client is the HTTP client of the fleet's own lw requests through,
	// closed when it is replaced or the cluster removed; nil for a
	// ListerWatcher of the user's.
	client *http.Client
	// slot is the sync slot held by the list in progress; nil if none.
	slot *syncSlot
}

func newClusterListerWatcher[T Object](cluster string, lw ListerWatcher[T], client *http.Client, slots chan struct{}, clk clock.Clock) *clusterListerWatcher[T] {
	desc, _ := describe(lw)
	desc.listed.server.Cluster = cluster
	return &clusterListerWatcher[T]{desc: desc, slots: slots, clock: clk, lw: lw, client: client}
}

// syncSlot is one sync slot held, released once.
type syncSlot struct {
	once  sync.Once
	slots chan struct{}
	// expired is closed when the slot is released, which ends the timer
	// that releases it after syncSlotHold.
	released chan struct{}
}

func (s *syncSlot) release() {
	s.once.Do(func() {
		<-s.slots
		close(s.released)
	})
}

// List lists one page through the cluster's ListerWatcher. A first page
// waits for a sync slot (and fails if ctx ends first); the slot is
// released by the last page, by a failed one, by the cluster's next watch,
// or after syncSlotHold.
func (c *clusterListerWatcher[T]) List(ctx context.Context, options metav1.ListOptions) (*ListResult[T], error) {
	if c.slots != nil && options.Continue == "" {
		if err := c.acquire(ctx); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	lw := c.lw
	c.mu.Unlock()
	res, err := lw.List(ctx, options)
	if err != nil || res.Continue == "" {
		c.releaseSlot()
	}
	return res, err
}

// acquire waits for a sync slot, releasing the one a list abandoned
// without its last page still held.
func (c *clusterListerWatcher[T]) acquire(ctx context.Context) error {
	c.releaseSlot()
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	s := &syncSlot{slots: c.slots, released: make(chan struct{})}
	c.mu.Lock()
	c.slot = s
	c.mu.Unlock()
	timer := c.clock.NewTimer(syncSlotHold)
	go func() {
		defer timer.Stop()
		select {
		case <-timer.C():
			s.release()
		case <-s.released:
		}
	}()
	return nil
}

// releaseSlot releases the slot held, if any.
func (c *clusterListerWatcher[T]) releaseSlot() {
	c.mu.Lock()
	s := c.slot
	c.slot = nil
	c.mu.Unlock()
	if s != nil {
		s.release()
	}
}

// Watch starts a watch through the cluster's ListerWatcher, releasing the
// sync slot a list still holds: a watch means the cluster is done listing
// for now. Without it, the one-item consistent read of a warm restart
// (which has more items and is never continued) held its slot for
// syncSlotHold: a warm restart of 1,000 clusters resumed 16 a minute with
// 8 slots (E6 -e6large).
func (c *clusterListerWatcher[T]) Watch(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	c.releaseSlot()
	c.mu.Lock()
	lw := c.lw
	c.mu.Unlock()
	return lw.Watch(ctx, options)
}

// replace makes lw, requesting through client, the cluster's ListerWatcher
// for every later request. The watch in progress goes on: the server
// authenticated it when it was opened, and ending it would cost a relist
// (a watch that ends early is an error to the reflector, as to
// client-go's). The old client's connections close once idle. What lw's
// DropFields transport fails to parse is counted with the first
// ListerWatcher's (the description's), which the informer's Stats read.
func (c *clusterListerWatcher[T]) replace(lw ListerWatcher[T], client *http.Client) {
	if d, ok := describe(lw); ok {
		d.drop.ContinueCount(c.desc.drop)
	}
	c.mu.Lock()
	old := c.client
	c.lw, c.client = lw, client
	c.mu.Unlock()
	if old != nil {
		old.CloseIdleConnections()
	}
}

// close releases what the cluster holds once its informer has stopped: a
// sync slot and the idle connections of its client.
func (c *clusterListerWatcher[T]) close() {
	c.releaseSlot()
	c.mu.Lock()
	client := c.client
	c.mu.Unlock()
	if client != nil {
		client.CloseIdleConnections()
	}
}

// description describes the cluster's first ListerWatcher under the
// cluster's name (see describedListerWatcher).
func (c *clusterListerWatcher[T]) description() lwDescription { return c.desc }

// decodingWith is never needed: the fleet's clusters decode with the
// fleet's table from the start (Fleet.decodingWithFleet), and an informer
// asks for another only for a table that shares sub-objects when its
// ListerWatcher's does not, which the fleet's table then does (see
// Informer.deduplicate).
func (c *clusterListerWatcher[T]) decodingWith(table *wire.InternTable) (ListerWatcher[T], error) {
	if err := checkDecodingWith(c.desc, table); err != nil {
		return nil, err
	}
	if table == c.desc.interns {
		return c, nil
	}
	return nil, errFleetTable
}

// errFleetTable is decodingWith's error for a table not the fleet's.
var errFleetTable = errors.New("a fleet's cluster decodes with the fleet's intern table only")
