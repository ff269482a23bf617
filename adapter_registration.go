package informer

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// registrationPollInterval is how often a registration's DoneChecker looks
// whether the handler has returned from its initial adds, once the informer
// has synced: the listener signals nothing when that happens.
const registrationPollInterval = 10 * time.Millisecond

// registrationAdapter is the cache.ResourceEventHandlerRegistration of a
// handler added through AsSharedIndexInformer.
type registrationAdapter[T Object] struct {
	inf *Informer[T]
	reg *Registration

	syncedOnce sync.Once
	synced     chan struct{}
}

var _ cache.ResourceEventHandlerRegistration = (*registrationAdapter[*metav1.PartialObjectMetadata])(nil)

// HasSynced reports whether the informer has synced and the handler has
// returned from every initial add (see Registration.HasSynced).
func (r *registrationAdapter[T]) HasSynced() bool { return r.reg.HasSynced() }

// HasSyncedChecker returns a checker whose channel is closed once HasSynced
// is true. The first call to its Done starts, unless the handler has synced
// already, a goroutine that waits for the informer to sync, then looks every
// 10 ms until the handler has returned from its initial adds. The goroutine
// also ends when the handler is removed or the informer stops, leaving the
// channel open, as client-go does; it waits forever for an informer that
// never runs.
func (r *registrationAdapter[T]) HasSyncedChecker() cache.DoneChecker {
	return registrationChecker[T]{r}
}

// ShutdownChan is closed once the handler will never be called again (after
// removal or once the informer stopped). client-go's
// cache.ShutDownEventHandler waits for it.
func (r *registrationAdapter[T]) ShutdownChan() <-chan struct{} { return r.reg.target.finishedChan() }

// syncedChan returns the channel of the registration's DoneChecker.
func (r *registrationAdapter[T]) syncedChan() <-chan struct{} {
	r.syncedOnce.Do(func() {
		r.synced = make(chan struct{})
		if r.reg.HasSynced() {
			close(r.synced)
			return
		}
		go r.waitSynced()
	})
	return r.synced
}

// waitSynced closes r.synced once the handler has synced, or returns when
// it will never be called again.
func (r *registrationAdapter[T]) waitSynced() {
	finished := r.reg.target.finishedChan()
	select {
	case <-r.inf.queue.syncedCh:
	case <-finished:
		return
	}
	// From here on the handler's pending initial adds only decrease.
	if !r.reg.HasSynced() {
		ticker := time.NewTicker(registrationPollInterval)
		defer ticker.Stop()
		for !r.reg.HasSynced() {
			select {
			case <-ticker.C:
			case <-finished:
				return
			}
		}
	}
	close(r.synced)
}

// registrationChecker is the DoneChecker of a registration.
type registrationChecker[T Object] struct{ r *registrationAdapter[T] }

// Name describes the informer and the handler, as client-go does.
func (c registrationChecker[T]) Name() string {
	return informerName(c.r.inf) + " + event handler " + c.r.reg.Name()
}

// Done is closed once the handler has synced.
func (c registrationChecker[T]) Done() <-chan struct{} { return c.r.syncedChan() }
