package informer

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// resumeWatchSeconds is the timeout (TimeoutSeconds) of a watch resumed
// from a snapshot: the shortest for which kube-apiserver's watch cache
// sends the watch a bookmark before it ends. The watch cache sends each
// watch a bookmark 2 s before its deadline (and otherwise about once a
// minute), from a timer of about a second, to watches gathered by the
// whole second their bookmark is due: a watch of 3 s gets its bookmark
// about a second after it starts (docs/restart.md has the measured
// figures), carrying the version the cache has reached, at or past the
// one the consistent read before the watch returned; a watch of 2 s gets
// none. So on a quiet resource, where no event shows that the watch has
// caught up, the bookmark shows it within about a second instead of a
// minute.
const resumeWatchSeconds = 3

// catchUpWait bounds, on the reflector's clock, how long a restored
// reflector waits for its resumed watches to reach the current resource
// version: past it, the reflector lists instead, skipping the objects it
// holds at the listed version (see resumeOrList). A server that honours
// resumeWatchSeconds ends each resumed watch before; the bound is for one
// that does not, and sends no bookmark.
const catchUpWait = resumeWatchSeconds*time.Second + 2*time.Second

// errCatchUpTimeout ends a resumed watch that did not reach the current
// resource version within catchUpWait.
var errCatchUpTimeout = errors.New("the resumed watch did not reach the current resource version in time")

// errNoCatchUpBookmark reports a resumed watch that ended at its timeout
// without an event or a bookmark: the server sends no bookmark before a
// watch's deadline (an API server without its watch cache), so only a
// list can show the current state.
var errNoCatchUpBookmark = errors.New("the resumed watch ended without an event or a bookmark")

// errSnapshotUnusable rejects a snapshot the reflector cannot resume from:
// its resource version cannot be compared with the server's. Like the
// reasons snapshot.go rejects a snapshot for, it lets tests tell the
// rejections apart.
var errSnapshotUnusable = errors.New("the snapshot cannot be resumed from")

// resumePoint is where a reflector restored from a snapshot starts: the
// snapshot's objects, consistent at resourceVersion (prepared: they are
// stored as they are, not transformed again).
//
// The objects may still be decoding when the reflector starts (see
// snapshotter.start): until loaded is closed, only resourceVersion may be
// read; then objects, or loadErr if they could not be read. A nil loaded
// means the objects are there.
type resumePoint[T Object] struct {
	objects         []T
	resourceVersion string
	loaded          chan struct{}
	loadErr         error
	// abandon, once set, makes the decoding stop early (discard).
	abandon atomic.Bool
	// byName indexes objects for a list's cachedLookup, once the watch
	// could not be resumed; built when first needed. reused counts the
	// objects lookup found.
	byName map[ObjectName]T
	reused atomic.Int64
	// check, if set, tells whether the snapshot may be resumed from on
	// this server: nil if so; an error wrapping errSnapshotForeign if it
	// was written from another cluster; any other error if the check
	// could not be made, which the reflector retries as a failed list.
	check func(ctx context.Context) error
	// onRefused, if set, is told why the reflector did not resume from the
	// snapshot and started cold, reusing none of its objects: it was
	// written from another cluster, is ahead of the server, or its objects
	// could not be decoded.
	onRefused func(err error)
	// onResumed and onRelisted, if set, are told how the reflector synced,
	// before the store hears of it (so that whoever sees the informer
	// synced sees how): by resuming its watch, reaching resourceVersion;
	// or by listing because of why, reusing as many restored objects as
	// reused counts once the list has been handed over.
	onResumed  func(resourceVersion string)
	onRelisted func(why error, reused *atomic.Int64)
}

// errSnapshotForeign refuses a snapshot written by an informer of another
// configuration (its file's scope says so, openSnapshot) or from another
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
		p.refuse(err)
		return false, nil
	}
	return false, fmt.Errorf("checking the restored snapshot's cluster: %w", err)
}

// refuse drops p's objects (stopping their decoding if it is under way)
// and tells p why the reflector starts cold instead.
func (p *resumePoint[T]) refuse(err error) {
	p.discard()
	if p.onRefused != nil {
		p.onRefused(err)
	}
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
	p.reused.Add(1)
	return obj, true
}

// wait waits until the objects are decoded and returns why they could not
// be, if so.
func (p *resumePoint[T]) wait() error {
	if p.loaded == nil {
		return nil
	}
	<-p.loaded
	return p.loadErr
}

// discard makes the decoding of the objects stop early, if it is still
// under way, and waits for it: the objects will not be used.
func (p *resumePoint[T]) discard() {
	p.abandon.Store(true)
	_ = p.wait()
	p.objects, p.byName = nil, nil
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
// current object, then live events.
//
// Each resumed watch lasts resumeWatchSeconds, so that on a quiet resource
// the bookmark kube-apiserver sends before its deadline shows that it has
// caught up; one that ends without any event or bookmark means a server
// that sends none, and resumeWatch gives up at once. Once caught up, the
// resumed watch is stopped and the reflector watches on as after a list,
// from the version reached. The first watch is made before the restored
// objects are all decoded, so that the second its bookmark takes to come
// passes while they are (their events wait in the watch meanwhile).
//
// It returns an error when the watch cannot be resumed ("410 Gone": the
// server's history no longer reaches back to the snapshot; no bookmark;
// catchUpWait passed; the objects could not be decoded); the caller
// then lists, or starts cold (see resumeOrList).
func (r *Reflector[T]) resumeWatch(ctx context.Context, p *resumePoint[T]) error {
	logger := klog.FromContext(ctx)
	page, err := r.lw.List(ctx, metav1.ListOptions{ResourceVersion: "", Limit: 1})
	if err == nil && page == nil {
		err = errNilListResult
	}
	if err != nil {
		return fmt.Errorf("reading the current resource version: %w", err)
	}
	target := page.ResourceVersion
	behind, err := resourceversion.CompareResourceVersion(p.resourceVersion, target)
	if err != nil {
		return fmt.Errorf("%w: comparing resource versions: %w", errSnapshotUnusable, err)
	}
	if behind > 0 {
		return fmt.Errorf("%w: the snapshot is at %s, the server at %s", errSnapshotAhead, p.resourceVersion, target)
	}
	rv := p.resourceVersion
	timeout := int64(resumeWatchSeconds)
	watchFrom := func() (watch.Interface, time.Time, error) {
		start := r.clock.Now()
		w, err := r.lw.Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
		if err == nil && w == nil {
			err = errNilWatch
		}
		if err != nil {
			return nil, start, err
		}
		r.noteAnswered(ctx)
		return w, start, nil
	}
	var w watch.Interface
	var start time.Time
	if behind < 0 {
		if w, start, err = watchFrom(); err != nil {
			return err
		}
	}
	if err := p.wait(); err != nil {
		if w != nil {
			w.Stop()
		}
		return err
	}
	collected := newInitialObjects[T](nil)
	for _, obj := range p.objects {
		collected.index[NameOf(obj)] = len(collected.items)
		collected.items = append(collected.items, obj)
	}
	collected.preparer = r.preparer // later objects are new: prepared
	sink := &catchUpSink[T]{initialObjects: collected, target: target, reached: behind == 0}
	// The watches are made with ctx and only handleEvents waits with
	// waitCtx, so that catchUpWait ends the wait, not the watch:
	// handleEvents then returns errStopRequested with errCatchUpTimeout as
	// the cause, which keeps what the watch brought for the list, rather
	// than a watch that seems to have ended by itself.
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
			if w != nil {
				w.Stop()
			}
			p.objects = collected.list()
			return err
		}
		if w == nil {
			if w, start, err = watchFrom(); err != nil {
				return err
			}
		}
		seen := sink.seen
		reached, err := r.handleEvents(waitCtx, w, start, sink, func(v string, _ bool) { rv = v }, true, nil)
		if reached {
			// Left open by handleEvents. It would end within
			// resumeWatchSeconds, too soon after the reflector took it
			// over for it to tell a normal end from a broken watch.
			w.Stop()
		}
		w = nil
		if errors.Is(err, errStopRequested) {
			if cause := context.Cause(waitCtx); ctx.Err() == nil && errors.Is(cause, errCatchUpTimeout) {
				// What the watch brought is kept for the list to reuse.
				p.objects = collected.list()
				return cause
			}
			return nil
		}
		if err != nil {
			return err
		}
		if !reached && sink.seen == seen {
			p.objects = collected.list()
			return errNoCatchUpBookmark
		}
		if !reached {
			logger.V(4).Info("Watch ended before catching up with the restored snapshot; watching again", "resourceVersion", rv, "target", target)
		}
	}
	if p.onResumed != nil {
		p.onResumed(rv)
	}
	if err := r.replace(collected.list(), rv); err != nil {
		return fmt.Errorf("unable to sync the restored objects: %w", err)
	}
	r.setLastSyncResourceVersion(rv)
	r.noteSynced()
	logger.V(2).Info("Resumed the watch of a restored snapshot", "snapshotResourceVersion", p.resourceVersion, "resourceVersion", rv, "target", target)
	return nil
}

// catchUpSink applies a resumed watch's events to the restored objects and
// notes when an event or bookmark has reached target.
type catchUpSink[T Object] struct {
	*initialObjects[T]
	target  string
	reached bool
	// seen counts the events and bookmarks received.
	seen int
}

// observe notes the resource version of an event.
func (s *catchUpSink[T]) observe(rv string) {
	s.seen++
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
// (see resumeWatch). It reports whether the store has synced: by the
// resumed watch, or, when the watch could not be resumed, by a list that
// reuses the restored objects still at the listed version (they are not
// decoded again). It reports false, with no error, when the snapshot was
// refused (see resumePoint.onRefused): the caller then starts cold, and
// none of the snapshot's objects is used.
func (r *Reflector[T]) resumeOrList(ctx context.Context, p *resumePoint[T]) (synced bool, err error) {
	err = r.resumeWatch(ctx, p)
	if ctx.Err() != nil {
		p.discard()
		return false, nil
	}
	if err == nil {
		return true, nil
	}
	if refusesSnapshot(err) {
		p.refuse(err)
		return false, nil
	}
	if loadErr := p.wait(); loadErr != nil {
		p.refuse(loadErr)
		return false, nil
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
		p.onRelisted(err, &p.reused) // before the store hears of the list, as onResumed
	}
	r.restored = p
	defer func() { r.restored = nil }()
	if err := r.list(ctx); err != nil {
		r.resume = p // the next cycle tries to resume again
		return false, err
	}
	return ctx.Err() == nil, nil
}
