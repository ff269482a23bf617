package informer

import (
	"context"
	"crypto/sha256"
	"encoding/binary"

	"k8s.io/klog/v2"
)

// A fleet's clusters split among the replicas of a controller
// (FleetOptions.Group): the group's rendezvous assignment of the hash
// space (shardassign.go), applied to the hash of each cluster's name, so
// that a cluster is the unit and every replica computes the same split.

// holds reports whether this replica runs the cluster named name by the
// group's assignment; f.mu held.
func (f *Fleet[T]) holds(name string) bool {
	return f.groupKnown && f.owned.containsHash(clusterHash(name))
}

// clusterHash places a cluster in the hash space: the first 8 bytes of the
// SHA-256 of its name. Not shardHash: the slots are the hash's top bits,
// and FNV-1a leaves them nearly the same for names that differ only in
// their last characters ("prod-01", "prod-02"…), which would all fall to
// one replica; a cluster is hashed once per change of the group.
func clusterHash(name string) uint64 {
	sum := sha256.Sum256([]byte(name))
	return binary.BigEndian.Uint64(sum[:8])
}

// followGroup applies the group's assignment whenever its members change,
// until ctx is done. Like a dynamic shard's informer, it warns once if the
// group has not run within shardGroupStartGrace: no cluster starts before.
func (f *Fleet[T]) followGroup(ctx context.Context) {
	group := f.opts.Group
	grace := f.clock.NewTimer(shardGroupStartGrace)
	defer grace.Stop()
	graceC := grace.C()
	for {
		members, known, changed := group.view()
		if known {
			graceC = nil
			f.reassign(ownedSlots(members, group.Identity()))
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		case <-graceC:
			graceC = nil
			if err := group.notRunning(); err != nil {
				klog.FromContext(ctx).Info("Warning: the fleet runs no cluster until its shard group runs", "err", err, "waited", shardGroupStartGrace)
			}
		}
	}
}

// reassign makes this replica run the clusters of owned: it starts those
// it gained, and stops those it lost, whose handlers receive OnDelete with
// DeletedObject.Moved for what they held.
func (f *Fleet[T]) reassign(owned slotSet) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return
	}
	f.owned, f.groupKnown = owned, true
	for _, c := range *f.view.Load() {
		held := c.run.Load() != nil
		switch want := f.holds(c.name); {
		case want && !held:
			run, err := f.newRun(c)
			if err != nil {
				f.logger.Error(err, "Cannot run a cluster the shard group assigned to this replica", "cluster", c.name)
				continue
			}
			c.run.Store(run)
			f.start(c, run)
		case !want && held:
			f.retire(c, func(d *DeletedObject[T]) { d.Moved = true }, nil)
		}
	}
}
