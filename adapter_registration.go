package informer

import "k8s.io/client-go/tools/cache"

// registrationAdapter is the cache.ResourceEventHandlerRegistration of a
// handler added through AsSharedIndexInformer.
type registrationAdapter struct {
	reg *Registration
}

var _ cache.ResourceEventHandlerRegistration = (*registrationAdapter)(nil)

// HasSynced reports whether the informer has synced and the handler has
// returned from every initial add (see Registration.HasSynced).
func (r *registrationAdapter) HasSynced() bool { return r.reg.HasSynced() }

// HasSyncedChecker returns a checker whose channel is closed once HasSynced
// is true (see Registration.HasSyncedChecker).
func (r *registrationAdapter) HasSyncedChecker() cache.DoneChecker {
	return r.reg.HasSyncedChecker()
}

// ShutdownChan is closed once the handler will never be called again (after
// removal or once the informer stopped). client-go's
// cache.ShutDownEventHandler waits for it.
func (r *registrationAdapter) ShutdownChan() <-chan struct{} { return r.reg.target.finishedChan() }
