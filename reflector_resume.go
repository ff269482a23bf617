package informer

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// catchUpWait bounds how long a restored reflector waits for its resumed
// watch to reach the current resource version. Events bring it there at
// once on a resource that changes; on a quiet one only a bookmark does,
// which kube-apiserver v1.37 sends about once a minute (docs/restart.md
// has the figures). Past the wait, the reflector lists instead, skipping
// the objects it holds at the listed version (see resumeOrList).
const catchUpWait = 10 * time.Second

// errCatchUpTimeout ends a resumed watch that did not reach the current
// resource version within catchUpWait.
var errCatchUpTimeout = errors.New("the resumed watch did not reach the current resource version in time")

// errSnapshotUnusable rejects a snapshot the reflector cannot resume from:
// its resource version cannot be compared with the server's. Like the
// reasons snapshot.go rejects a snapshot for, it lets tests tell the
// rejections apart.
var errSnapshotUnusable = errors.New("the snapshot cannot be resumed from")

// resumePoint is where a reflector restored from a snapshot starts: the
// snapshot's objects, consistent at resourceVersion (prepared: they are
// stored as they are, not transformed again).
type resumePoint[T Object] struct {
	objects         []T
	resourceVersion string
	// byName indexes objects for a list's cachedLookup, once the watch
	// could not be resumed; built when first needed.
	byName map[ObjectName]T
	// check, if set, tells whether the snapshot may be resumed from on
	// this server: nil if so; an error wrapping errSnapshotForeign if it
	// was written from another cluster; any other error if the check
	// could not be made, which the reflector retries as a failed list.
	check func(ctx context.Context) error
	// onRefused, if set, is told why the reflector did not resume from the
	// snapshot and started cold, reusing none of its objects: it was
	// written from another cluster, or is ahead of the server.
	onRefused func(err error)
	// onResumed and onRelisted, if set, are told how the reflector synced.
	onResumed, onRelisted func()
}

// errSnapshotForeign refuses a snapshot written by an informer of another
// configuration (its file's scope says so, readSnapshot) or from another
// cluster (resumePoint.check): neither may be resumed from nor reused.
var errSnapshotForeign = errors.New("the snapshot was written by an informer of another configuration or from another cluster")

// errSnapshotAhead refuses a snapshot whose resource version is ahead of
// the server's current one: the server's history is not the one the
// snapshot was taken from (another cluster, or etcd restored from a
// backup), so that none of its objects can be trusted.
var errSnapshotAhead = errors.New("the snapshot's resource version is ahead of the server's")

// refusesSnapshot reports whether err says that a snapshot must not be
// resumed from nor reused (see resumePoint.onRefused).
func refusesSnapshot(err error) bool {
	return errors.Is(err, errSnapshotForeign) || errors.Is(err, errSnapshotAhead)
}

// acceptResume makes p's check: true if the reflector may start from p;
// false, once p is told why, if it must start cold instead; an error if
// the check could not be made (the caller keeps p and retries).
func (r *Reflector[T]) acceptResume(ctx context.Context, p *resumePoint[T]) (bool, error) {
	if p.check == nil {
		return true, nil
	}
	err := p.check(ctx)
	switch {
	case err == nil:
		return true, nil
	case refusesSnapshot(err):
		if p.onRefused != nil {
			p.onRefused(err)
		}
		return false, nil
	}
	return false, fmt.Errorf("checking the restored snapshot's cluster: %w", err)
}

// lookup returns the restored object listed under name at resourceVersion,
// if any (see cachedLookup).
func (p *resumePoint[T]) lookup(name ObjectName, resourceVersion string) (T, bool) {
	if p.byName == nil {
		p.byName = make(map[ObjectName]T, len(p.objects))
		for _, obj := range p.objects {
			p.byName[NameOf(obj)] = obj
		}
	}
	obj, ok := p.byName[name]
	if !ok || resourceVersion == "" || obj.GetResourceVersion() != resourceVersion {
		var zero T
		return zero, false
	}
	return obj, true
}

// resumeFrom makes the reflector's first cycle start from objects,
// consistent at resourceVersion, instead of the server's full state (see
// resumeWatch). Call before Run.
func (r *Reflector[T]) resumeFrom(p *resumePoint[T]) {
	r.resume = p
}

// resumeWatch brings the restored objects of p up to date by watching from
// their resource version: it reads the current resource version (a
// consistent list of one item), watches from p's version, applies the
// events to the restored objects until the watch reaches the version read
// (an event or a bookmark at or past it), and then hands the result to the
// store as one complete list, as a list would be. So the store syncs with
// a state at least as new as a consistent read made after the reflector
// started, and its handlers see what a cold start shows them: one add per
// current object, then live events. It returns the still-open watch (nil
// if the cache was current already) and an error when the watch cannot be
// resumed ("410 Gone": the server's history no longer reaches back to the
// snapshot); the caller then lists.
func (r *Reflector[T]) resumeWatch(ctx context.Context, p *resumePoint[T]) (watch.Interface, error) {
	logger := klog.FromContext(ctx)
	page, err := r.lw.List(ctx, metav1.ListOptions{ResourceVersion: "", Limit: 1})
	if err == nil && page == nil {
		err = errNilListResult
	}
	if err != nil {
		return nil, fmt.Errorf("reading the current resource version: %w", err)
	}
	target := page.ResourceVersion
	behind, err := resourceversion.CompareResourceVersion(p.resourceVersion, target)
	if err != nil {
		return nil, fmt.Errorf("%w: comparing resource versions: %w", errSnapshotUnusable, err)
	}
	if behind > 0 {
		return nil, fmt.Errorf("%w: the snapshot is at %s, the server at %s", errSnapshotAhead, p.resourceVersion, target)
	}
	collected := newInitialObjects[T](nil)
	for _, obj := range p.objects {
		collected.index[NameOf(obj)] = len(collected.items)
		collected.items = append(collected.items, obj)
	}
	collected.preparer = r.preparer // later objects are new: prepared
	sink := &catchUpSink[T]{initialObjects: collected, target: target, reached: behind == 0}
	rv := p.resourceVersion
	var w watch.Interface
	// The watches are made with ctx, so that the one that catches up goes
	// on; only the wait for their events is bounded.
	waitCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timer := r.clock.NewTimer(catchUpWait)
	returned := make(chan struct{})
	defer func() {
		close(returned)
		timer.Stop()
	}()
	go func() {
		select {
		case <-timer.C():
			cancel(errCatchUpTimeout)
		case <-returned:
		}
	}()
	for !sink.reached {
		if err := context.Cause(waitCtx); err != nil {
			p.objects = collected.list()
			return nil, err
		}
		start := r.clock.Now()
		w, err = r.lw.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: watchTimeoutSeconds()})
		if err == nil && w == nil {
			err = errNilWatch
		}
		if err != nil {
			return nil, err
		}
		r.noteAnswered(ctx)
		reached, err := r.handleEvents(waitCtx, w, start, sink, func(v string, _ bool) { rv = v }, true, nil)
		if errors.Is(err, errStopRequested) {
			if cause := context.Cause(waitCtx); ctx.Err() == nil && errors.Is(cause, errCatchUpTimeout) {
				// What the watch brought is kept for the list to reuse.
				p.objects = collected.list()
				return nil, cause
			}
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		if !reached {
			w = nil // ended (and stopped) before catching up: watch again
			logger.V(4).Info("Watch ended before catching up with the restored snapshot; watching again", "resourceVersion", rv, "target", target)
		}
	}
	// Counted before the store hears of the list, so that whoever sees
	// the informer synced sees how.
	if p.onResumed != nil {
		p.onResumed()
	}
	if err := r.replace(collected.list(), rv); err != nil {
		if w != nil {
			w.Stop()
		}
		return nil, fmt.Errorf("unable to sync the restored objects: %w", err)
	}
	r.setLastSyncResourceVersion(rv)
	r.noteSynced()
	logger.V(2).Info("Resumed the watch of a restored snapshot", "snapshotResourceVersion", p.resourceVersion, "resourceVersion", rv, "target", target)
	return w, nil
}

// catchUpSink applies a resumed watch's events to the restored objects and
// notes when an event or bookmark has reached target.
type catchUpSink[T Object] struct {
	*initialObjects[T]
	target  string
	reached bool
}

// observe notes the resource version of an event.
func (s *catchUpSink[T]) observe(rv string) {
	if cmp, err := resourceversion.CompareResourceVersion(rv, s.target); err == nil && cmp >= 0 {
		s.reached = true
	}
}

func (s *catchUpSink[T]) Add(obj T) error {
	s.observe(obj.GetResourceVersion())
	return s.initialObjects.Add(obj)
}

func (s *catchUpSink[T]) Update(obj T) error {
	s.observe(obj.GetResourceVersion())
	return s.initialObjects.Update(obj)
}

func (s *catchUpSink[T]) Delete(obj T) error {
	s.observe(obj.GetResourceVersion())
	return s.initialObjects.Delete(obj)
}

func (s *catchUpSink[T]) Bookmark(rv string) error {
	s.observe(rv)
	return nil
}

// caughtUp ends handleEvents' wait for the initial events (see
// initialEventsEnder).
func (s *catchUpSink[T]) caughtUp() bool { return s.reached }

// initialEventsEnder is a sink that says itself when the events it waits
// for have all arrived, instead of the bookmark that ends a streaming
// list's initial events.
type initialEventsEnder interface {
	caughtUp() bool
}

// resumeOrList is the first cycle of a reflector restored from a snapshot
// (see resumeWatch): the watch to go on with, or, when the watch could not
// be resumed, nil after a list that reuses the restored objects still at
// the listed version (they are not decoded again). synced is false when
// the snapshot was refused (see resumePoint.onRefused): the reflector
// then starts cold.
func (r *Reflector[T]) resumeOrList(ctx context.Context, p *resumePoint[T]) (w watch.Interface, synced bool, err error) {
	w, err = r.resumeWatch(ctx, p)
	if ctx.Err() != nil {
		if w != nil {
			w.Stop()
		}
		return nil, true, nil
	}
	if err == nil {
		return w, true, nil
	}
	if refusesSnapshot(err) {
		if p.onRefused != nil {
			p.onRefused(err)
		}
		return nil, false, nil
	}
	klog.FromContext(ctx).V(2).Info("Could not resume watching at the restored snapshot's resource version; listing", "resourceVersion", p.resourceVersion, "err", err)
	r.relistAfter(err)
	// A consistent list ("" instead of the "0" of a reflector that never
	// synced): it is at least as new as a read made after the start, as
	// HasSynced promises, and it comes in pages (kube-apiserver's watch
	// cache answers a list at "0" in one piece whatever the limit), so that
	// only a page's body (about 4.7 MB of production-like pods), not the
	// whole list's, is alive beside the restored objects; each page's items
	// still current are the restored objects, not decoded again.
	r.setResourceVersionUnavailable(true)
	if p.onRelisted != nil {
		p.onRelisted() // before the store hears of the list, as onResumed
	}
	r.restored = p
	defer func() { r.restored = nil }()
	if err := r.list(ctx); err != nil {
		r.resume = p // the next cycle tries to resume again
		return nil, true, err
	}
	return nil, true, nil
}
