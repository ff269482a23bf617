package informer

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// A dynamic shard's informer runs one reflector per range it gained: the
// first assignment starts one for all the member's slots, and each later
// widening one for the slots gained, which lists and watches them alone
// and delivers their objects as adds, leaving the other ranges' watches
// alone. A narrowing drops the objects of the slots lost from the cache,
// notified as moved deletions, in order with the events; the reflectors
// that held those slots keep their watches, whose events of the lost slots
// their stores drop, and ask only for the slots they keep when they next
// watch (the server ends every watch after 5 to 10 minutes): no relist.
// A reflector left with no slot stops. (Ending a watch from the client
// would narrow it at once, but client-go's stream watcher may then report
// an error, and a watch shorter than a second counts as failed: both make
// the reflector list again.)

// maxRangeReflectors bounds the reflectors of one informer: a widening
// beyond it replaces them all by one over every slot held, which lists
// them again (their objects are notified as updates).
const maxRangeReflectors = 8

// shardGroupStartGrace is how long a dynamic shard's informer waits for
// its ShardGroup to run before it reports that it cannot sync: Run is
// usually started with a go statement next to Factory.Start, so it may
// legitimately begin a little after the informer.
const shardGroupStartGrace = 5 * time.Second

// dynamicShard is the part of an informer that follows its ShardGroup.
type dynamicShard[T Object] struct {
	group *ShardGroup
	clock clock.Clock
	// blocked is closed when the group was still not running
	// shardGroupStartGrace after the informer started (see syncBlocked).
	blocked chan struct{}
	// count returns the number of cached objects and whether the current
	// assignment is synced; the group publishes it under countName to spot
	// a skewed split.
	countName      string
	count          func() (objects int, synced bool)
	key            ShardKey
	filterOnClient bool
	inner          ListerWatcher[T]
	feed           queueFeed[T]
	// ownedLW lists the slots held now; the informer reads its DropFields
	// counter through it.
	ownedLW *shardListerWatcher[T]
	// storeVersion is the resource version the cache has reached: with
	// one reflector per range, the informer's LastSyncResourceVersion.
	storeVersion func() string

	// mu guards owned, reflectors and each reflector's slots. Stores hold
	// it for reading while they queue, so that once a narrowing has queued
	// its drop, no event of a dropped slot can follow.
	mu         sync.RWMutex
	owned      slotSet
	reflectors []*rangeReflector[T]
	// stopping are the reflectors taken out of reflectors whose Run has
	// not returned yet, and retired adds up the counters of those whose Run
	// has: so that reflectorStats never goes down.
	stopping map[*rangeReflector[T]]bool
	retired  ReflectorStats

	// assigned is set once the first assignment is applied; unsynced
	// counts the running reflectors whose list is not applied yet.
	assigned atomic.Bool
	unsynced atomic.Int32
}

// rangeReflector is one reflector of a dynamic shard and the slots it
// holds.
type rangeReflector[T Object] struct {
	slots  slotSet // guarded by the shard's mu
	lw     *shardListerWatcher[T]
	r      *Reflector[T]
	cancel context.CancelFunc
	synced atomic.Bool
	shard  *dynamicShard[T]
}

// markSynced records that the reflector's list was applied, or that it
// stopped: either way nothing of it is pending.
func (rr *rangeReflector[T]) markSynced() {
	if rr.synced.CompareAndSwap(false, true) {
		rr.shard.unsynced.Add(-1)
	}
}

func newDynamicShard[T Object](inner ListerWatcher[T], shard *Shard, clk clock.Clock) *dynamicShard[T] {
	return &dynamicShard[T]{group: shard.Group, clock: clk, blocked: make(chan struct{}),
		key: shard.key(), filterOnClient: shard.FilterOnClient, inner: inner,
		ownedLW: newShardListerWatcher(inner, shard.key(), shard.FilterOnClient, nil)}
}

// synced reports whether the current assignment is listed and applied.
func (d *dynamicShard[T]) synced() bool {
	return d.assigned.Load() && d.unsynced.Load() == 0
}

// lastError returns why the informer cannot sync: its group is not
// running, or the last error of a reflector; nil if neither.
func (d *dynamicShard[T]) lastError() error {
	if err := d.group.notRunning(); err != nil {
		return err
	}
	d.mu.RLock()
	defer d.mu.RUnlock()
	for _, rr := range d.reflectors {
		if err := rr.r.lastError(); err != nil {
			return err
		}
	}
	return nil
}

var _ source[*metav1.PartialObjectMetadata] = (*dynamicShard[*metav1.PartialObjectMetadata])(nil)

// stats adds up the counters of every reflector the shard ran.
func (d *dynamicShard[T]) stats() ReflectorStats {
	d.mu.RLock()
	defer d.mu.RUnlock()
	sum := d.retired
	for _, rr := range d.reflectors {
		sum = sum.plus(rr.r.Stats())
	}
	for rr := range d.stopping {
		sum = sum.plus(rr.r.Stats())
	}
	return sum
}

// retire moves the counters of rr, whose Run has returned, to retired if
// it was taken out of the reflectors; one still in them (all stop when the
// informer does) stays counted there.
func (d *dynamicShard[T]) retire(rr *rangeReflector[T]) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopping[rr] {
		delete(d.stopping, rr)
		d.retired = d.retired.plus(rr.r.Stats())
	}
}

// lastSyncResourceVersion is the cache's resource version: each range
// reflector has its own.
func (d *dynamicShard[T]) lastSyncResourceVersion() string { return d.storeVersion() }

// requestStats is zero: the shard has no single reflector whose requests
// to count.
func (d *dynamicShard[T]) requestStats() ReflectorRequestStats { return ReflectorRequestStats{} }

// listerWatcher lists the slots held now.
func (d *dynamicShard[T]) listerWatcher() ListerWatcher[T] { return d.ownedLW }

// relister refuses consistency checks: each range reflector has reached
// its own resource version, so no single list can be compared with the
// cache.
func (d *dynamicShard[T]) relister() (func(), error) { return nil, errDynamicShard }

// watches returns the number of running reflectors.
func (d *dynamicShard[T]) watches() int {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return len(d.reflectors)
}

// run follows the group's assignment until ctx is done, then stops the
// reflectors and returns once they have returned.
// If the group has no view shardGroupStartGrace after the start because it
// is not running, it logs a warning and closes d.blocked, and keeps
// waiting: a group started later still assigns it its ranges.
func (d *dynamicShard[T]) run(ctx context.Context, logger klog.Logger, feed queueFeed[T], opts ReflectorOptions) {
	d.feed = feed
	if d.count != nil {
		defer d.group.countObjects(d.countName, d.count)()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	grace := d.clock.NewTimer(shardGroupStartGrace)
	defer grace.Stop()
	graceC := grace.C()
	for {
		members, known, changed := d.group.view()
		if known && graceC != nil {
			grace.Stop()
			graceC = nil
		}
		if known {
			d.apply(ctx, &wg, members, opts)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-graceC:
			graceC = nil
			if err := d.group.notRunning(); err != nil {
				logger.Info("Warning: the informer cannot sync until its shard group runs", "err", err, "waited", shardGroupStartGrace)
				close(d.blocked)
			}
		}
	}
}

// syncBlocked returns a channel closed when the informer has waited
// shardGroupStartGrace for a group that is not running.
func (d *dynamicShard[T]) syncBlocked() <-chan struct{} { return d.blocked }

// apply moves the informer to the slots members give this member.
func (d *dynamicShard[T]) apply(ctx context.Context, wg *sync.WaitGroup, members []string, opts ReflectorOptions) {
	owned := ownedSlots(members, d.group.Identity())
	d.mu.Lock()
	removed, added := d.owned.minus(owned), owned.minus(d.owned)
	d.owned = owned
	d.ownedLW.setRanges(owned.ranges())
	var stopped []*rangeReflector[T]
	if !removed.empty() {
		kept := d.reflectors[:0]
		for _, rr := range d.reflectors {
			left := rr.slots.minus(removed)
			changed := left != rr.slots
			rr.slots = left
			switch {
			case left.empty():
				stopped = append(stopped, rr)
				continue
			case changed:
				rr.lw.setRanges(left.ranges())
			}
			kept = append(kept, rr)
		}
		clear(d.reflectors[len(kept):])
		d.reflectors = kept
		d.feed.dropWithin(d.within(removed), true)
	}
	var started *rangeReflector[T]
	if !added.empty() {
		if len(d.reflectors) >= maxRangeReflectors {
			for _, rr := range d.reflectors {
				rr.slots = slotSet{} // its store queues nothing more
			}
			stopped = append(stopped, d.reflectors...)
			d.reflectors, added = nil, owned
		}
		started = d.newRangeReflector(added, opts)
		d.reflectors = append(d.reflectors, started)
	}
	if !d.assigned.Load() && started == nil {
		// Nothing to list: the informer is synced with no object.
		d.feed.dropWithin(d.within(slotSet{}), false)
	}
	d.assigned.Store(true)
	for _, rr := range stopped {
		if d.stopping == nil {
			d.stopping = map[*rangeReflector[T]]bool{}
		}
		d.stopping[rr] = true
	}
	d.mu.Unlock()

	for _, rr := range stopped {
		rr.cancel()
		rr.markSynced()
	}
	if started != nil {
		rctx, cancel := context.WithCancel(ctx)
		started.cancel = cancel
		wg.Go(func() {
			started.r.Run(rctx)
			d.retire(started)
		})
	}
}

// newRangeReflector returns a reflector of slots, not yet running. d.mu
// must be held.
func (d *dynamicShard[T]) newRangeReflector(slots slotSet, opts ReflectorOptions) *rangeReflector[T] {
	rr := &rangeReflector[T]{slots: slots, shard: d, cancel: func() {}}
	rr.lw = newShardListerWatcher(d.inner, d.key, d.filterOnClient, slots.ranges())
	rr.r = NewReflector(rr.lw, d.feed.partStore(rr), opts)
	d.unsynced.Add(1)
	return rr
}

// within returns a function accepting the objects in slots.
func (d *dynamicShard[T]) within(slots slotSet) func(T) bool {
	return func(obj T) bool { return slots.containsHash(shardHash(shardValue(d.key, obj))) }
}

// A range reflector's store (queueFeed.partStore) queues what falls in the
// reflector's current slots and drops the rest (a slot lost since the
// request was made, or every object the server did not filter): the
// reflector is the part of the cache it feeds.

var _ cachePart[*metav1.PartialObjectMetadata] = (*rangeReflector[*metav1.PartialObjectMetadata])(nil)

// hold takes the shard's mu for reading: a narrowing, which takes it for
// writing, waits until the store has queued what it decided to.
func (rr *rangeReflector[T]) hold()    { rr.shard.mu.RLock() }
func (rr *rangeReflector[T]) release() { rr.shard.mu.RUnlock() }

// holds reports whether obj is in the reflector's slots. The slot is that
// of the transformed object, as the cache's (see within).
func (rr *rangeReflector[T]) holds(obj T) bool {
	return rr.slots.containsHash(shardHash(shardValue(rr.shard.key, obj)))
}

// within accepts the objects of the reflector's current slots.
func (rr *rangeReflector[T]) within() func(T) bool { return rr.shard.within(rr.slots) }

// listed records that the reflector's list was applied.
func (rr *rangeReflector[T]) listed() { rr.markSynced() }
