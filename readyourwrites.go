package informer

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// Reading your own writes: a writer knows the resource version the server
// gave its write; the informer publishes the resource version its cache has
// applied (a write, a relist or a bookmark); a reader waits until the
// second reaches the first: Informer.WaitForResourceVersion (informer.go),
// Lister.GetAtLeast and Lister.ListAtLeast.

// appliedVersion is the resource version an informer's cache has applied,
// with a way to wait for it to advance. The dispatcher sets it after each
// group of records it applies; waiters may be on any goroutine.
type appliedVersion struct {
	mu sync.Mutex
	rv string
	// advanced is closed and cleared when rv changes or the informer
	// stops; nil while nobody waits, so that an informer nobody waits on
	// pays one uncontended lock per group of records.
	advanced chan struct{}
	// started is set when the informer's Run starts, so that a wait can
	// say whether a cache that has applied nothing is still to run.
	started bool
	stopped bool
}

// start records that the informer's Run has started.
func (a *appliedVersion) start() {
	a.mu.Lock()
	a.started = true
	a.mu.Unlock()
}

// cacheState says where the cache is, for the error of a wait that ctx
// ended: at rv, or, when it has applied nothing, why.
func cacheState(rv string, started bool) string {
	switch {
	case rv != "":
		return fmt.Sprintf("the cache is at %q", rv)
	case !started:
		return "the informer has not started: its cache applies nothing until its Run (or its factory's Start) is called"
	default:
		return "the cache has applied no list yet"
	}
}

// stoppedWhere says where the cache was when the informer stopped, after
// errInformerStopped in a wait's error.
func stoppedWhere(rv string, started bool) string {
	switch {
	case rv != "":
		return fmt.Sprintf("at %q", rv)
	case !started:
		return "before it ever ran"
	default:
		return "before its cache applied a list"
	}
}

// set records that the cache has applied rv.
func (a *appliedVersion) set(rv string) {
	a.mu.Lock()
	if a.rv != rv {
		a.rv = rv
		a.wakeLocked()
	}
	a.mu.Unlock()
}

// stop records that the informer stopped: waits end with errInformerStopped
// unless the version they wait for was already applied.
func (a *appliedVersion) stop() {
	a.mu.Lock()
	a.stopped = true
	a.wakeLocked()
	a.mu.Unlock()
}

// wakeLocked wakes every waiter. a.mu must be held.
func (a *appliedVersion) wakeLocked() {
	if a.advanced != nil {
		close(a.advanced)
		a.advanced = nil
	}
}

// errInformerStopped ends a wait on an informer that stopped.
var errInformerStopped = errors.New("the informer has stopped")

// ErrResourceVersionNotComparable is wrapped by the errors of the waiting
// calls when a resource version is not an integer that Kubernetes 1.35+
// lets clients compare (see k8s.io/apimachinery/pkg/util/resourceversion):
// a server, an aggregated API or a proxy whose resource versions are
// opaque. Such a server's writes cannot be waited for; read from the server
// instead. errors.As also finds the resourceversion.InvalidResourceVersion
// that names the version.
var ErrResourceVersionNotComparable = errors.New("resource versions are not comparable")

// notComparable wraps err, from resourceversion.CompareResourceVersion.
func notComparable(err error) error {
	return fmt.Errorf("%w: %w", ErrResourceVersionNotComparable, err)
}

// wait blocks until the applied resource version is resourceVersion or
// later, ctx is done, or the informer stops. name describes the informer in
// errors.
func (a *appliedVersion) wait(ctx context.Context, name, resourceVersion string) error {
	if _, err := resourceversion.CompareResourceVersion(resourceVersion, resourceVersion); err != nil {
		return fmt.Errorf("%s: waiting for resource version %q: %w", name, resourceVersion, notComparable(err))
	}
	for {
		a.mu.Lock()
		rv, started, stopped := a.rv, a.started, a.stopped
		if rv != "" {
			cmp, err := resourceversion.CompareResourceVersion(rv, resourceVersion)
			if err != nil {
				a.mu.Unlock()
				return fmt.Errorf("%s: waiting for resource version %q: the cache is at %q: %w", name, resourceVersion, rv, notComparable(err))
			}
			if cmp >= 0 {
				a.mu.Unlock()
				return nil
			}
		}
		if stopped {
			a.mu.Unlock()
			return fmt.Errorf("%s: waiting for resource version %q: %w %s", name, resourceVersion, errInformerStopped, stoppedWhere(rv, started))
		}
		if a.advanced == nil {
			a.advanced = make(chan struct{})
		}
		advanced := a.advanced
		a.mu.Unlock()
		select {
		case <-advanced:
		case <-ctx.Done():
			a.mu.Lock() // the informer may have started or advanced since
			rv, started = a.rv, a.started
			a.mu.Unlock()
			return fmt.Errorf("%s: waiting for resource version %q: %s: %w", name, resourceVersion, cacheState(rv, started), context.Cause(ctx))
		}
	}
}

// errNoInformer is returned by the waiting calls of a Lister made by
// NewLister, which has no informer to wait for.
var errNoInformer = errors.New("the lister was made by NewLister, not by an informer: it has nothing to wait for")

// waitFor waits for the cache of the lister's informer to apply
// resourceVersion.
func (l *Lister[T]) waitFor(ctx context.Context, resourceVersion string) error {
	if l.applied == nil {
		return errNoInformer
	}
	return l.applied.wait(ctx, l.name, resourceVersion)
}

// GetAtLeast is [Lister.Get] once the cache has applied resourceVersion or
// a later one (see [Informer.WaitForResourceVersion]): after a write that
// returned resourceVersion, it returns the written object or a newer state,
// never an older one. A deleted object yields NotFound once the cache has
// applied the deletion. It fails as WaitForResourceVersion does, and on a
// Lister that is not an informer's.
func (l *Lister[T]) GetAtLeast(ctx context.Context, key, resourceVersion string) (T, error) {
	if err := l.waitFor(ctx, resourceVersion); err != nil {
		var zero T
		return zero, err
	}
	return l.Get(key)
}

// ListAtLeast is [Lister.List] once the cache has applied resourceVersion or
// a later one (see [Lister.GetAtLeast]): give it the highest resource
// version of the writes to see.
func (l *Lister[T]) ListAtLeast(ctx context.Context, selector labels.Selector, resourceVersion string) ([]T, error) {
	if err := l.waitFor(ctx, resourceVersion); err != nil {
		return nil, err
	}
	return l.List(selector)
}
