package informer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	coordinationclient "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// ShardGroupLabel is the label of the Leases of a [ShardGroup]; its value
// is the group's name.
const ShardGroupLabel = "informer.kubetyped.io/shard-group"

// shardObjectsAnnotation is the annotation of a member's Lease that holds
// the number of objects each of its informers caches, as a JSON object by
// informer name, so that the members can see a skewed split.
const shardObjectsAnnotation = "informer.kubetyped.io/shard-objects"

// A split is skewed when one member caches more than skewFactor times the
// members' mean, and at least skewMinObjects: with 3 members, 2.7 and 3.0
// for numbered namespaces (docs/sharding.md), 1.0 to 1.1 for UIDs and
// realistic namespace names; the minimum keeps small caches quiet.
const (
	skewFactor     = 1.5
	skewMinObjects = 100
)

// ShardGroupOptions configures a [ShardGroup].
type ShardGroupOptions struct {
	// Name names the group: the replicas of one controller share it. It is
	// the value of every member Lease's ShardGroupLabel. Required.
	Name string
	// Namespace holds the group's Leases. Required.
	Namespace string
	// Identity names this member, unique in the group; default the
	// hostname (a pod's name). The member's Lease is "<Name>-<Identity>".
	Identity string
	// LeaseDuration is how long a member's Lease lasts without renewal:
	// the others take over a member's ranges this long (plus up to two
	// RenewIntervals) after its last renewal. Default 15s.
	LeaseDuration time.Duration
	// RenewInterval is how often the member renews its Lease and reads the
	// group's: members that join or leave are seen this often. It must be
	// shorter than LeaseDuration; default LeaseDuration/3.
	//
	// A Lease of the group whose renewal a member has seen unchanged for 4
	// times the Lease's duration (1 minute by default) belongs to a member
	// gone without deleting it (a crashed pod): that member deletes it,
	// with preconditions on its UID and resource version, so that a Lease
	// renewed meanwhile is never deleted.
	RenewInterval time.Duration
	// Clock measures the leases' age; nil means the real clock.
	Clock clock.WithTicker
}

// ShardGroup is the membership of the replicas of one controller that share
// resources through dynamic shards (a [Shard] with Group set). Each member
// holds a coordination.k8s.io Lease, labelled with the group's name, which
// Run renews; a member whose Lease has not been renewed for its duration,
// or was deleted, has left. The hash space is split among the live members
// by rendezvous hashing of 1,024 slots, a function of the set of members
// only, so every member computes the same split and a change of membership
// moves only the ranges of the member that left or joined. See
// docs/sharding.md for the handover's bounds.
//
// Each member also publishes in its Lease (annotation
// informer.kubetyped.io/shard-objects) how many objects each of its
// informers caches, and logs a warning, once until it is even again, when
// one member holds more than 1.5 times the members' mean (and at least 100
// objects): the sign of a skewed split, such as namespace sharding of
// numbered namespaces.
//
// Its methods are safe for concurrent use.
type ShardGroup struct {
	client    coordinationclient.LeasesGetter
	opts      ShardGroupOptions
	leaseName string
	clock     clock.WithTicker
	running   atomic.Bool

	mu      sync.Mutex
	members []string // live members, sorted
	known   bool     // members holds a view of the group
	changed chan struct{}

	// counters are the object counts of the informers following the
	// group, published in the member's Lease.
	countersMu sync.Mutex
	counters   map[*objectCounter]struct{}

	// Run's goroutine only: when each Lease was seen to change, when this
	// member last renewed its own, and which informers' splits are skewed.
	seen      map[string]leaseSighting
	lastRenew time.Time
	skewed    map[string]bool
}

// objectCounter is the object count of one informer of the group.
type objectCounter struct {
	name  string
	count func() (objects int, synced bool)
}

// countObjects adds an informer's object count, published in the member's
// Lease from the next renewal on, and returns the function that removes it.
func (g *ShardGroup) countObjects(name string, count func() (objects int, synced bool)) (remove func()) {
	c := &objectCounter{name: name, count: count}
	g.countersMu.Lock()
	defer g.countersMu.Unlock()
	if g.counters == nil {
		g.counters = map[*objectCounter]struct{}{}
	}
	g.counters[c] = struct{}{}
	return func() {
		g.countersMu.Lock()
		defer g.countersMu.Unlock()
		delete(g.counters, c)
	}
}

// objectCounts returns the member's object counts by informer name, nil if
// no informer follows the group. An informer still listing a range it
// gained is left out: its count would make a member that just joined look
// empty, and the others skewed.
func (g *ShardGroup) objectCounts() map[string]int {
	g.countersMu.Lock()
	counters := slices.Collect(maps.Keys(g.counters))
	g.countersMu.Unlock()
	if len(counters) == 0 {
		return nil
	}
	counts := map[string]int{}
	for _, c := range counters {
		if n, synced := c.count(); synced {
			counts[c.name] += n
		}
	}
	return counts
}

// leaseSighting is when a Lease's renewal was first seen.
type leaseSighting struct {
	renew string
	// at is when the renewal counts from: when it was first seen, or its
	// renewal time if that was earlier, at first sight of the Lease.
	at time.Time
	// observed is when this member first saw the renewal, on its own
	// clock: a Lease is deleted as stale only by this measure, so that a
	// holder whose clock runs late never loses its Lease.
	observed time.Time
}

// staleLeaseFactor is how many of a Lease's durations its renewal must be
// seen unchanged before a member deletes it as its holder's leftover:
// long after the others stopped counting the holder (one duration), so
// that a holder that lost the API server for a while, or a reader that
// just joined, does not make the Lease flicker.
const staleLeaseFactor = 4

// NewShardGroup returns the membership of this replica in the group
// opts.Name. It makes no request: the replica joins when Run starts.
func NewShardGroup(client coordinationclient.LeasesGetter, opts ShardGroupOptions) (*ShardGroup, error) {
	if client == nil {
		return nil, errors.New("shard group: the Lease client is nil")
	}
	if opts.Name == "" || opts.Namespace == "" {
		return nil, errors.New("shard group: Name and Namespace are required")
	}
	if opts.Identity == "" {
		host, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("shard group %s: no Identity and no hostname: %w", opts.Name, err)
		}
		opts.Identity = strings.ToLower(host)
	}
	if opts.LeaseDuration == 0 {
		opts.LeaseDuration = 15 * time.Second
	}
	if opts.RenewInterval == 0 {
		opts.RenewInterval = opts.LeaseDuration / 3
	}
	if opts.RenewInterval <= 0 || opts.RenewInterval >= opts.LeaseDuration {
		return nil, fmt.Errorf("shard group %s: RenewInterval %v must be positive and shorter than LeaseDuration %v", opts.Name, opts.RenewInterval, opts.LeaseDuration)
	}
	g := &ShardGroup{
		client:    client,
		opts:      opts,
		leaseName: opts.Name + "-" + opts.Identity,
		clock:     opts.Clock,
		changed:   make(chan struct{}),
		seen:      map[string]leaseSighting{},
		skewed:    map[string]bool{},
	}
	if errs := validation.IsDNS1123Subdomain(g.leaseName); len(errs) > 0 {
		return nil, fmt.Errorf("shard group %s: the Lease name %q is invalid: %s", opts.Name, g.leaseName, strings.Join(errs, "; "))
	}
	if g.clock == nil {
		g.clock = clock.RealClock{}
	}
	return g, nil
}

// Identity returns this member's name.
func (g *ShardGroup) Identity() string { return g.opts.Identity }

// Members returns the live members, sorted, as this member last saw them;
// nil before Run has read the group.
func (g *ShardGroup) Members() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.members)
}

// notRunning returns an error saying that the group is not running, if
// Run has not been called (or has not begun) and the group has no view of
// its members; nil otherwise, in particular once Run has begun or ended.
func (g *ShardGroup) notRunning() error {
	if g.running.Load() {
		return nil
	}
	if _, known, _ := g.view(); known {
		return nil
	}
	return fmt.Errorf("shard group %s is not running: call ShardGroup.Run, which its informers need to get their ranges", g.opts.Name)
}

// view returns the members, whether they are known yet, and a channel
// closed at the next change.
func (g *ShardGroup) view() (members []string, known bool, changed <-chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.members, g.known, g.changed
}

// publish makes members the group's view if it changed.
func (g *ShardGroup) publish(members []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.known && slices.Equal(g.members, members) {
		return
	}
	g.members, g.known = members, true
	close(g.changed)
	g.changed = make(chan struct{})
}

// Run joins the group and keeps this member in it until ctx is done:
// every RenewInterval it renews its Lease and reads the group's Leases. It
// then deletes its Lease, so that the others take over its ranges at their
// next reading, and leaves the group's informers with no range. It returns
// nil then, or an error at once if the group is already running. Failed
// requests are logged and retried at the next interval; a member that
// could not renew its Lease for LeaseDuration gives its ranges up.
func (g *ShardGroup) Run(ctx context.Context) error {
	if !g.running.CompareAndSwap(false, true) {
		return fmt.Errorf("shard group %s: already running", g.opts.Name)
	}
	defer g.running.Store(false)
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "shardGroup", g.opts.Name, "identity", g.opts.Identity)
	ctx = klog.NewContext(ctx, logger)
	ticker := g.clock.NewTicker(g.opts.RenewInterval)
	defer ticker.Stop()
	for {
		g.refresh(ctx)
		select {
		case <-ctx.Done():
			g.publish(nil)
			// The Lease outlives ctx: delete it with a context of its own.
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), g.opts.RenewInterval)
			err := g.client.Leases(g.opts.Namespace).Delete(dctx, g.leaseName, metav1.DeleteOptions{})
			cancel()
			if err != nil && !apierrors.IsNotFound(err) {
				logger.Error(err, "Could not delete the member's Lease; the others take over when it expires", "lease", g.leaseName)
			}
			return nil
		case <-ticker.C():
		}
	}
}

// refresh renews the member's Lease, reads the group's and publishes the
// live members.
func (g *ShardGroup) refresh(ctx context.Context) {
	logger := klog.FromContext(ctx)
	if err := g.renew(ctx); err != nil {
		if ctx.Err() != nil {
			return
		}
		logger.Error(err, "Could not renew the member's Lease", "lease", g.leaseName)
	} else {
		g.lastRenew = g.clock.Now()
	}
	list, err := g.client.Leases(g.opts.Namespace).List(ctx, metav1.ListOptions{LabelSelector: ShardGroupLabel + "=" + g.opts.Name})
	if err != nil {
		if ctx.Err() == nil {
			logger.Error(err, "Could not read the group's Leases")
		}
		// Without a view of the others, keep the last one, unless this
		// member's own Lease has expired: then it must let go.
		if !g.lastRenew.IsZero() && g.clock.Since(g.lastRenew) < g.opts.LeaseDuration {
			return
		}
		list = &coordinationv1.LeaseList{}
	}
	now := g.clock.Now()
	members := liveMembers(list.Items, g.seen, now, g.opts.Identity, g.lastRenew, g.opts.LeaseDuration)
	g.publish(members)
	g.checkSkew(logger, list.Items, members)
	for _, l := range staleLeases(list.Items, g.seen, now, g.opts.Identity) {
		g.deleteStale(ctx, l)
	}
}

// checkSkew warns, once per episode and informer, when one live member
// caches far more objects than the members' mean (see skewFactor), as the
// members' Leases report.
func (g *ShardGroup) checkSkew(logger klog.Logger, leases []coordinationv1.Lease, members []string) {
	byInformer := map[string]map[string]int{} // informer -> member -> objects
	add := func(member string, counts map[string]int) {
		for name, n := range counts {
			if byInformer[name] == nil {
				byInformer[name] = map[string]int{}
			}
			byInformer[name][member] = n
		}
	}
	if slices.Contains(members, g.opts.Identity) {
		add(g.opts.Identity, g.objectCounts())
	}
	for i := range leases {
		l := &leases[i]
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == g.opts.Identity || !slices.Contains(members, *l.Spec.HolderIdentity) {
			continue
		}
		var counts map[string]int
		if raw, ok := l.Annotations[shardObjectsAnnotation]; ok && json.Unmarshal([]byte(raw), &counts) == nil {
			add(*l.Spec.HolderIdentity, counts)
		}
	}
	for name, counts := range byInformer {
		total, top, topMember := 0, -1, ""
		for member, n := range counts {
			total += n
			if n > top || n == top && member < topMember {
				top, topMember = n, member
			}
		}
		mean := float64(total) / float64(len(counts))
		skewed := len(counts) > 1 && top >= skewMinObjects && float64(top) > skewFactor*mean
		switch {
		case skewed && !g.skewed[name]:
			g.skewed[name] = true
			logger.Info("Warning: one member of the shard group holds far more objects than its share; sharding by namespace with names that differ only at their end does this (see docs/sharding.md)",
				"informer", name, "member", topMember, "objects", top, "mean", int(math.Round(mean)), "members", len(counts))
		case !skewed && g.skewed[name]:
			delete(g.skewed, name)
			logger.Info("The shard group's split is even again", "informer", name, "member", topMember, "objects", top, "mean", int(math.Round(mean)))
		}
	}
}

// staleLeases returns the Leases among leases, other than self's, whose
// renewal this member has seen unchanged for staleLeaseFactor times their
// duration; seen must be up to date (liveMembers).
func staleLeases(leases []coordinationv1.Lease, seen map[string]leaseSighting, now time.Time, self string) []*coordinationv1.Lease {
	var stale []*coordinationv1.Lease
	for i := range leases {
		l := &leases[i]
		s, ok := seen[l.Name]
		if !ok || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == self || l.Spec.LeaseDurationSeconds == nil {
			continue
		}
		if now.Sub(s.observed) >= staleLeaseFactor*time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second {
			stale = append(stale, l)
		}
	}
	return stale
}

// deleteStale deletes l, a Lease left by a member that is gone, provided
// it is still the version read: a holder that renewed it meanwhile keeps
// it, and of two members deleting it at once, one fails harmlessly.
func (g *ShardGroup) deleteStale(ctx context.Context, l *coordinationv1.Lease) {
	logger := klog.FromContext(ctx)
	var pre metav1.Preconditions
	if l.UID != "" {
		pre.UID = &l.UID
	}
	if l.ResourceVersion != "" {
		pre.ResourceVersion = &l.ResourceVersion
	}
	err := g.client.Leases(g.opts.Namespace).Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &pre})
	holder := *l.Spec.HolderIdentity
	switch {
	case err == nil:
		delete(g.seen, l.Name)
		logger.Info("Deleted the Lease of a member gone without deleting it", "lease", l.Name, "holder", holder,
			"unchangedFor", staleLeaseFactor*time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second)
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		logger.V(2).Info("A stale Lease was deleted or renewed meanwhile", "lease", l.Name, "holder", holder, "err", err)
	case ctx.Err() == nil:
		logger.Error(err, "Could not delete the Lease of a member gone without deleting it", "lease", l.Name, "holder", holder)
	}
}

// renew creates or renews the member's Lease.
func (g *ShardGroup) renew(ctx context.Context) error {
	leases := g.client.Leases(g.opts.Namespace)
	now := metav1.NewMicroTime(g.clock.Now())
	seconds := int32(math.Ceil(g.opts.LeaseDuration.Seconds()))
	var annotations map[string]string
	if counts := g.objectCounts(); counts != nil {
		raw, err := json.Marshal(counts)
		if err != nil {
			return fmt.Errorf("encoding the object counts: %w", err)
		}
		annotations = map[string]string{shardObjectsAnnotation: string(raw)}
	}
	lease, err := leases.Get(ctx, g.leaseName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: g.leaseName, Namespace: g.opts.Namespace, Labels: map[string]string{ShardGroupLabel: g.opts.Name}, Annotations: annotations},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       &g.opts.Identity,
				LeaseDurationSeconds: &seconds,
				AcquireTime:          &now,
				RenewTime:            &now,
			},
		}
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Labels = map[string]string{ShardGroupLabel: g.opts.Name}
	lease.Annotations = annotations
	lease.Spec.HolderIdentity = &g.opts.Identity
	lease.Spec.LeaseDurationSeconds = &seconds
	lease.Spec.RenewTime = &now
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}

// liveMembers returns the sorted identities of the live members among
// leases at now, updating seen. A Lease is live while less than its
// duration has passed since its renewal was seen to change, measured on
// this member's clock, so that the members' clocks need not agree; only
// at first sight is its renewal time trusted, if it is in the past. self is live while less than leaseDuration has passed since
// lastRenew (this member's own successful renewal), whatever its Lease
// says.
func liveMembers(leases []coordinationv1.Lease, seen map[string]leaseSighting, now time.Time, self string, lastRenew time.Time, leaseDuration time.Duration) []string {
	var members []string
	present := map[string]bool{}
	for i := range leases {
		l := &leases[i]
		present[l.Name] = true
		holder := ""
		if l.Spec.HolderIdentity != nil {
			holder = *l.Spec.HolderIdentity
		}
		if holder == "" || holder == self || l.Spec.LeaseDurationSeconds == nil {
			continue
		}
		renew := holder
		if l.Spec.RenewTime != nil {
			renew += "@" + l.Spec.RenewTime.UTC().Format(time.RFC3339Nano)
		}
		s, ok := seen[l.Name]
		switch {
		case !ok:
			// First sight: trust the renewal time if it is in the past, so
			// that a Lease left by a dead member does not count as live for
			// a whole duration; a member whose clock runs late then counts
			// as gone until its next renewal is seen.
			s = leaseSighting{renew: renew, at: now, observed: now}
			if l.Spec.RenewTime != nil && l.Spec.RenewTime.Time.Before(now) {
				s.at = l.Spec.RenewTime.Time
			}
			seen[l.Name] = s
		case s.renew != renew:
			s = leaseSighting{renew: renew, at: now, observed: now}
			seen[l.Name] = s
		}
		if now.Sub(s.at) < time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second {
			members = append(members, holder)
		}
	}
	for name := range seen {
		if !present[name] {
			delete(seen, name)
		}
	}
	if !lastRenew.IsZero() && now.Sub(lastRenew) < leaseDuration {
		members = append(members, self)
	}
	slices.Sort(members)
	return slices.Compact(members)
}
