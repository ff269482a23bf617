package informer

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// resumeVersionsMax is the largest snapshot, in objects, whose restore
// lists the server's versions to compare with its objects (see
// resumeWatch). On a quiet resource the comparison is what shows first
// that the objects are caught up: the list of 5,000 production-like pods'
// metadata took 0.21 s, a resumed watch's bookmark about a second
// (docs/benchmarks.md, "E4 (q) on a quiet machine"). The list's time and
// CPU grow with the objects, the bookmark's do not: at 10,000 pods the
// list would take about 0.4 s and 0.15 s of CPU (twice the figures at
// 5,000, docs/benchmarks.md "E4 (q) caught up by a list of the server's
// versions"; not measured at 10,000), the restore about as long; past
// that the bookmark costs less.
const resumeVersionsMax = 10_000

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
	// versions, if set, lists the version of each object the server
	// holds, for a snapshot small enough (resumeVersionsMax) that
	// comparing them with its objects shows sooner than a bookmark that
	// they are caught up (see resumeWatch).
	versions func(ctx context.Context) (listedVersions, error)
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
	// synced sees how): by resuming its watch, reaching resourceVersion
	// (byVersions if the listed versions showed it caught up, see
	// resumeWatch); or by listing because of why, reusing as many restored
	// objects as reused counts once the list has been handed over.
	onResumed  func(resourceVersion string, byVersions bool)
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
// events to the restored objects until they are caught up, and then hands
// the result to the store as one complete list, as a list would be. So the
// store syncs with a state at least as new as a consistent read made after
// the reflector started, and its handlers see what a cold start shows
// them: one add per current object, then live events.
//
// The objects are caught up once the watch reaches the version read (an
// event or a bookmark at or past it), or, for a snapshot small enough that
// p lists versions, once they are the objects a consistent list of the
// server's metadata names, each at its listed version (see catchUpSink):
// on a quiet resource no event shows that the watch has caught up, and
// the list, made beside the watch and the decoding, shows it sooner than a
// bookmark. Each resumed watch lasts resumeWatchSeconds, so that the
// bookmark kube-apiserver sends before its deadline shows it otherwise;
// one that ends without any event or bookmark means a server that sends
// none. Once caught up, the resumed watch is stopped and the reflector
// watches on as after a list, from the version reached. The first watch
// is made before the restored objects are all decoded, so that the second
// its bookmark takes to come passes while they are (their events wait in
// the watch meanwhile).
//
// It returns an error when the objects cannot be caught up ("410 Gone":
// the server's history no longer reaches back to the snapshot, and the
// versions listed, if any, are not those held; no bookmark; catchUpWait
// passed; the objects could not be decoded); the caller then lists, or
// starts cold (see resumeOrList).
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
	var listing *versionsListing
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
		return listing.abandonedOnChange(w), start, nil
	}
	var w watch.Interface
	var start time.Time
	if behind < 0 {
		if w, start, err = watchFrom(); err != nil {
			return err
		}
		if p.versions != nil {
			// After the watch, which is then the first to answer: a
			// change it brings at once ends the list before it has cost
			// much.
			listing = listVersionsBeside(ctx, p.versions)
			defer listing.stop()
			w = listing.abandonedOnChange(w)
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
	// compareListed hands the sink the listed versions, once listed, and
	// reports whether that caught the objects up.
	compareListed := func() bool {
		if !listing.ended() {
			return false
		}
		listed, err := listing.result()
		listing = nil
		if err != nil {
			if !errors.Is(err, errVersionsAbandoned) {
				logger.V(2).Info("Could not list the server's versions to compare with the restored snapshot; waiting for the resumed watch", "err", err)
			}
			return false
		}
		sink.compare(listed)
		return sink.reached
	}
	for !sink.reached {
		if compareListed() {
			break
		}
		if err := context.Cause(waitCtx); err != nil {
			if w != nil {
				w.Stop()
				w = nil
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
		eventsCtx, release := listing.interrupting(waitCtx)
		reached, err := r.handleEvents(eventsCtx, w, start, sink, func(v string, _ bool) { rv = v }, true, nil)
		release()
		if reached {
			// Left open by handleEvents. It would end within
			// resumeWatchSeconds, too soon after the reflector took it
			// over for it to tell a normal end from a broken watch.
			w.Stop()
		}
		w = nil
		if errors.Is(err, errStopRequested) {
			cause := context.Cause(waitCtx)
			switch {
			case ctx.Err() != nil:
				return nil
			case errors.Is(cause, errCatchUpTimeout):
				// What the watch brought is kept for the list to reuse.
				p.objects = collected.list()
				return cause
			}
			continue // the versions are listed: compared above
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
	if w != nil {
		w.Stop() // caught up by the listed versions before it was read
	}
	if sink.matched {
		if cmp, err := resourceversion.CompareResourceVersion(sink.listedAt, rv); err == nil && cmp > 0 {
			rv = sink.listedAt
		}
	}
	if p.onResumed != nil {
		p.onResumed(rv, sink.matched)
	}
	if err := r.replace(collected.list(), rv); err != nil {
		return fmt.Errorf("unable to sync the restored objects: %w", err)
	}
	r.setLastSyncResourceVersion(rv)
	r.noteSynced()
	logger.V(2).Info("Resumed the watch of a restored snapshot", "snapshotResourceVersion", p.resourceVersion, "resourceVersion", rv, "target", target, "byListedVersions", sink.matched)
	return nil
}

// errVersionsListed ends handleEvents' wait for a resumed watch's events
// when the versions listed beside it are in (versionsListing.interrupting).
var errVersionsListed = errors.New("the server's versions are listed")

// errVersionsAbandoned ends a versions list once the resumed watch has
// brought a change (versionsListing.abandonedOnChange).
var errVersionsAbandoned = errors.New("the resumed watch brought a change: the versions list is not needed")

// versionsListing is a versions list made beside a resumed watch (see
// resumePoint.versions). It is for a quiet resource, where no event shows
// that the watch has caught up: the first change the watch brings ends it
// (abandonedOnChange), so that on a busy one (an event past the current
// version follows soon) or one whose watch cannot be resumed ("410 Gone")
// it costs next to nothing. A nil *versionsListing lists nothing.
type versionsListing struct {
	cancel  context.CancelCauseFunc
	done    chan struct{}
	listed  listedVersions
	listErr error
}

// listVersionsBeside starts list in a goroutine of its own; stop ends it.
func listVersionsBeside(ctx context.Context, list func(context.Context) (listedVersions, error)) *versionsListing {
	ctx, cancel := context.WithCancelCause(ctx)
	l := &versionsListing{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(l.done)
		l.listed, l.listErr = list(ctx)
		if cause := context.Cause(ctx); l.listErr != nil && errors.Is(cause, errVersionsAbandoned) {
			l.listErr = cause
		}
	}()
	return l
}

// ended reports whether the list has ended; false for a nil l.
func (l *versionsListing) ended() bool {
	if l == nil {
		return false
	}
	select {
	case <-l.done:
		return true
	default:
		return false
	}
}

// result returns what the list listed, once it has ended.
func (l *versionsListing) result() (listedVersions, error) {
	<-l.done
	return l.listed, l.listErr
}

// interrupting returns a context that is ctx until the list has listed
// the versions, and then done with errVersionsListed as its cause (ctx
// itself for a nil l), and the function that releases it. A list that
// fails or is abandoned does not interrupt: the watch goes on.
func (l *versionsListing) interrupting(ctx context.Context) (context.Context, func()) {
	if l == nil {
		return ctx, func() {}
	}
	ictx, cancel := context.WithCancelCause(ctx)
	released := make(chan struct{})
	go func() {
		select {
		case <-l.done:
			if l.listErr == nil {
				cancel(errVersionsListed)
				return
			}
			<-released
		case <-released:
		}
		cancel(nil)
	}()
	return ictx, func() { close(released) }
}

// abandonedOnChange returns w, passing its events on, which ends the list
// at its first event that is not a bookmark; w itself for a nil l.
func (l *versionsListing) abandonedOnChange(w watch.Interface) watch.Interface {
	if l == nil {
		return w
	}
	n := &changeNotingWatch{Interface: w, out: make(chan watch.Event), stopped: make(chan struct{})}
	go n.forward(func() { l.cancel(errVersionsAbandoned) })
	return n
}

// stop ends the list if it is still going and waits for its goroutine.
func (l *versionsListing) stop() {
	if l == nil {
		return
	}
	l.cancel(context.Canceled)
	<-l.done
}

// changeNotingWatch passes on the events of a watch, calling onChange for
// each that is not a bookmark as it arrives (versionsListing.abandonedOnChange).
type changeNotingWatch struct {
	watch.Interface
	out     chan watch.Event
	stopped chan struct{}
	once    sync.Once
}

func (w *changeNotingWatch) forward(onChange func()) {
	defer close(w.out)
	for {
		select {
		case ev, open := <-w.Interface.ResultChan():
			if !open {
				return
			}
			if ev.Type != watch.Bookmark {
				onChange()
			}
			select {
			case w.out <- ev:
			case <-w.stopped:
				return
			}
		case <-w.stopped:
			return
		}
	}
}

func (w *changeNotingWatch) ResultChan() <-chan watch.Event { return w.out }

// Stop stops the watch and the passing on of its events.
func (w *changeNotingWatch) Stop() {
	w.once.Do(func() { close(w.stopped) })
	w.Interface.Stop()
}

// catchUpSink applies a resumed watch's events to the restored objects and
// notes when they are caught up: an event or bookmark has reached target,
// or the objects are those a list of the server's versions names (compare),
// each at its listed version. Then they are the server's state at the
// listed version: every change since gives an object a version (or takes
// it away) that the list would show, except an object both created and
// deleted since, which neither holds.
type catchUpSink[T Object] struct {
	*initialObjects[T]
	target  string
	reached bool
	// seen counts the events and bookmarks received.
	seen int
	// listed, once compare has it, is the version of each object the
	// server held at listedAt; mismatched counts the names whose object
	// is held and not listed, listed and not held, or held at another
	// version. matched is set once none is.
	listed     map[ObjectName]string
	listedAt   string
	mismatched int
	matched    bool
}

// observe notes the resource version of an event.
func (s *catchUpSink[T]) observe(rv string) {
	s.seen++
	if cmp, err := resourceversion.CompareResourceVersion(rv, s.target); err == nil && cmp >= 0 {
		s.reached = true
	}
}

// compare notes the versions listed, as they are now and after each later
// event.
func (s *catchUpSink[T]) compare(listed listedVersions) {
	s.listed, s.listedAt, s.mismatched = listed.versions, listed.resourceVersion, 0
	for name := range listed.versions {
		if !s.current(name) {
			s.mismatched++
		}
	}
	for name := range s.index {
		if _, ok := listed.versions[name]; !ok {
			s.mismatched++
		}
	}
	s.settle()
}

// current reports whether what is held under name is what is listed.
func (s *catchUpSink[T]) current(name ObjectName) bool {
	rv, listed := s.listed[name]
	i, held := s.index[name]
	if !held || !listed {
		return held == listed
	}
	return s.items[i].GetResourceVersion() == rv
}

// settle notes that the objects are caught up if nothing mismatches.
func (s *catchUpSink[T]) settle() {
	if s.listed != nil && s.mismatched == 0 {
		s.matched, s.reached = true, true
	}
}

// apply passes obj's event on to change, and recounts obj's mismatch.
func (s *catchUpSink[T]) apply(obj T, change func(T) error) error {
	s.observe(obj.GetResourceVersion())
	if s.listed == nil {
		return change(obj)
	}
	name := NameOf(obj)
	was := s.current(name)
	err := change(obj)
	if is := s.current(name); is != was {
		if is {
			s.mismatched--
		} else {
			s.mismatched++
		}
	}
	s.settle()
	return err
}

func (s *catchUpSink[T]) Add(obj T) error    { return s.apply(obj, s.initialObjects.Add) }
func (s *catchUpSink[T]) Update(obj T) error { return s.apply(obj, s.initialObjects.Update) }
func (s *catchUpSink[T]) Delete(obj T) error { return s.apply(obj, s.initialObjects.Delete) }

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
