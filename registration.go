package informer

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
)

// Registration is the handle of a handler added to an [Informer]. It is
// safe for concurrent use.
type Registration struct {
	owner  any // the informer that issued it
	target registrationTarget
	// informerName describes the owner in the DoneChecker's name.
	informerName string
}

// registrationTarget is the untyped view of a listener a Registration needs.
type registrationTarget interface {
	hasSynced() bool
	stats() HandlerStats
	handlerName() string
	finishedChan() <-chan struct{}
	syncedChan() <-chan struct{}
}

// HasSynced reports whether the informer has synced and this handler has
// received, and returned from, every add of the initial list (or, for a
// handler added to a running informer, of the objects cached at that time).
// A panicking handler call counts as returned.
func (r *Registration) HasSynced() bool { return r.target.hasSynced() }

// HasSyncedChecker returns a checker whose Done channel is closed once
// HasSynced is true, for waiting without polling, as with client-go's
// registrations: cache.WaitFor(ctx, "pods", reg.HasSyncedChecker()). The
// channel stays open if the handler is removed, or the informer stops,
// before it synced. Its Name is "<informer> + event handler <handler name>".
func (r *Registration) HasSyncedChecker() cache.DoneChecker {
	return registrationChecker{r}
}

// registrationChecker is the DoneChecker of a Registration.
type registrationChecker struct{ r *Registration }

// Name describes the informer and the handler.
func (c registrationChecker) Name() string {
	return c.r.informerName + " + event handler " + c.r.Name()
}

// Done is closed once the handler has synced.
func (c registrationChecker) Done() <-chan struct{} { return c.r.target.syncedChan() }

// Stats returns the handler's counters.
func (r *Registration) Stats() HandlerStats { return r.target.stats() }

// Name returns the handler's name, as used in logs.
func (r *Registration) Name() string { return r.target.handlerName() }

// hasSynced reports whether the informer has synced and every initial-list
// add queued for this handler has been delivered and has returned.
func (l *listener[T]) hasSynced() bool {
	return l.informerSync() && l.pendingInitial.Load() == 0
}

// noteSynced closes l.synced if the listener has synced. It is called after
// each of the two conditions of hasSynced may have become true: by the
// listener after it delivered an initial add, and by the dispatcher once
// the informer has synced (and for a handler added to a synced informer).
// Both conditions are atomics that never go back once both hold, so
// whichever side completes the pair sees it.
func (l *listener[T]) noteSynced() {
	if l.hasSynced() {
		l.syncedOnce.Do(func() { close(l.synced) })
	}
}

// syncedChan returns the channel closed once the listener has synced.
func (l *listener[T]) syncedChan() <-chan struct{} { return l.synced }

// stats returns the listener's counters.
func (l *listener[T]) stats() HandlerStats {
	delivered, dropped := l.delivered.Load(), l.dropped.Load()
	l.mu.Lock()
	queued := l.queued
	l.mu.Unlock()
	return HandlerStats{
		Pending:   max(queued-delivered-dropped, 0),
		Delivered: delivered,
		Panics:    l.panics.Load(),
		Coalesced: l.coalesced.Load(),
		Dropped:   dropped,
	}
}

func (l *listener[T]) handlerName() string           { return l.name }
func (l *listener[T]) finishedChan() <-chan struct{} { return l.finished }

// AddEventHandler adds h with default options: see
// [Informer.AddEventHandlerWithOptions].
func (i *Informer[T]) AddEventHandler(h ResourceEventHandler[T]) (*Registration, error) {
	return i.AddEventHandlerWithOptions(h, HandlerOptions{})
}

// AddEventHandlerWithOptions adds h, which receives every later change of
// the cache. Added before Run, it receives the initial list as adds with
// isInInitialList true. Added to a running informer, it first receives
// OnAdd(obj, true) for every cached object, taken between two batches of
// events so that no change is missed or seen twice, then the live
// notifications. A handler may be added several times; each registration is
// independent. It fails once the informer has stopped.
//
// It never waits for the informer's event processing, so handlers may call
// it: when events are being processed, the new handler is admitted by the
// event processing at its next pause, and its registration reports synced
// only once it has received its initial adds.
func (i *Informer[T]) AddEventHandlerWithOptions(h ResourceEventHandler[T], opts HandlerOptions) (*Registration, error) {
	if h == nil {
		return nil, errors.New("cannot add a nil event handler")
	}
	i.mu.Lock()
	i.handlerCount++
	name := opts.Name
	if name == "" {
		name = fmt.Sprintf("%T#%d", h, i.handlerCount)
	}
	if i.stopped.Load() {
		i.mu.Unlock()
		// Ends as client-go's does ("... was not added to shared informer
		// because it has stopped already"): callers match on it.
		return nil, fmt.Errorf("handler %s was not added to shared informer because it has stopped already", name)
	}
	if err := validateHandlerOptions(h, opts); err != nil {
		i.mu.Unlock()
		return nil, fmt.Errorf("handler %s was not added: %w", name, err)
	}
	logger := klog.Background()
	if opts.Logger != nil {
		logger = *opts.Logger
	}
	requested := i.defaultResync
	if opts.ResyncPeriod != nil {
		requested = *opts.ResyncPeriod
	}
	requested, err := i.adjustResyncPeriod(logger, requested)
	if err != nil {
		i.mu.Unlock()
		return nil, fmt.Errorf("handler %s was not added: %w", name, err)
	}

	l := newListener(h, name, opts, i.queue.hasSynced)
	l.clock = i.clock
	if i.detector != nil {
		l.detector, l.handOuts = i.detector, handlerHandOuts(name)
	}
	i.proc.initResync(l, requested, effectiveResyncPeriod(logger, requested, i.resyncCheckPeriod))
	reg := &Registration{owner: i, target: l, informerName: informerName(i)}
	if !i.started {
		i.proc.add(l)
		i.mu.Unlock()
		return reg, nil
	}
	l.start(&i.listenersWG, i.runLogger, i.metrics)
	// The listener is not synced before it holds its initial adds: this
	// count stands for them until admitJoiners has queued them.
	l.pendingInitial.Add(1)
	i.joining = append(i.joining, l)
	i.joinPending.Store(true)
	i.mu.Unlock()
	i.tryAdmitJoiners()
	return reg, nil
}

// tryAdmitJoiners admits the handlers waiting to join unless the event
// processing is busy, in which case it admits them itself at its next
// pause. It never waits: that is what lets a handler add handlers while the
// event processing waits for room in that handler's buffer.
func (i *Informer[T]) tryAdmitJoiners() {
	// Publishing the joiner before TryLock, and the dispatcher checking
	// joinPending after Unlock, leaves no window in which neither admits.
	for i.joinPending.Load() && i.dispatchMu.TryLock() {
		i.admitJoiners()
		i.dispatchMu.Unlock()
	}
}

// admitJoiners registers the handlers waiting to join and queues their
// initial adds: the objects cached now, all of whose notifications have
// been handed to the listeners already. i.dispatchMu must be held.
func (i *Informer[T]) admitJoiners() {
	if !i.joinPending.Load() {
		return
	}
	i.mu.Lock()
	joiners := i.joining
	i.joining = nil
	i.joinPending.Store(false)
	for _, l := range joiners {
		i.proc.add(l)
	}
	i.mu.Unlock()
	if len(joiners) == 0 {
		return
	}
	cached := i.indexer.List()
	notes := make([]notification[T], 0, min(len(cached), dispatchChunk))
	for _, l := range joiners {
		for start := 0; start < len(cached); start += dispatchChunk {
			notes = notes[:0]
			for _, obj := range cached[start:min(start+dispatchChunk, len(cached))] {
				notes = append(notes, notification[T]{kind: notifyAdd, obj: obj, initial: true})
			}
			l.enqueueInitial(notes)
		}
		if l.pendingInitial.Add(-1) == 0 {
			l.noteSynced()
		}
	}
}

// validateHandlerOptions rejects a handler or options that could only fail.
func validateHandlerOptions[T Object](h ResourceEventHandler[T], opts HandlerOptions) error {
	if err := validateHandler(h); err != nil {
		return err
	}
	if opts.ResyncPeriod != nil {
		if err := validateResync("HandlerOptions.ResyncPeriod", *opts.ResyncPeriod); err != nil {
			return err
		}
	}
	if opts.MaxPending < 0 {
		return fmt.Errorf("HandlerOptions.MaxPending is negative (%d): use 0 for no bound", opts.MaxPending)
	}
	if opts.Overflow != OverflowBlock && opts.Overflow != OverflowCoalesce {
		return fmt.Errorf("HandlerOptions.Overflow is %d, neither OverflowBlock nor OverflowCoalesce", opts.Overflow)
	}
	return nil
}

// adjustResyncPeriod applies client-go's rules to a handler's requested
// resync period: at least one second; below the informer's check period it
// lowers the check period before Run and is raised to it after. Unlike
// client-go, which then ignores the handler's period, an informer without
// resync gets the handler's period as its check period before Run, and
// rejects it after. i.mu must be held.
func (i *Informer[T]) adjustResyncPeriod(logger klog.Logger, requested time.Duration) (time.Duration, error) {
	if requested <= 0 {
		return 0, nil
	}
	if requested < minimumResyncPeriod {
		logger.Info("Warning: resync period is too small, raising it to the minimum", "resyncPeriod", requested, "minimumResyncPeriod", minimumResyncPeriod)
		requested = minimumResyncPeriod
	}
	if requested < i.resyncCheckPeriod || i.resyncCheckPeriod == 0 {
		if i.started {
			if i.resyncCheckPeriod == 0 {
				return 0, fmt.Errorf("resync period %v asked of %s, which runs without resync: give the informer a resync period (InformerOptions.ResyncPeriod, or FactoryOptions.ResyncPeriod in a factory), or add the handler before the informer starts", requested, informerName(i))
			}
			logger.Info("Warning: resync period is below the resync check period of the running informer, raising it", "resyncPeriod", requested, "resyncCheckPeriod", i.resyncCheckPeriod)
			return i.resyncCheckPeriod, nil
		}
		i.resyncCheckPeriod = requested
		i.proc.setResyncCheckPeriod(logger, requested)
	}
	return requested, nil
}

// RemoveEventHandler stops the deliveries of a handler: notifications not yet
// delivered are dropped. It does not wait for a handler call in progress
// (see [Informer.ShutDownEventHandler]). Removing a handler twice, or
// removing a registration issued by another informer, does nothing.
func (i *Informer[T]) RemoveEventHandler(r *Registration) error {
	if r == nil {
		return errors.New("cannot remove a nil registration")
	}
	if r.owner != any(i) {
		return nil
	}
	l, ok := r.target.(*listener[T])
	if !ok {
		return nil
	}
	// Stop deliveries first: this releases the event processing if it
	// waits for room in this handler's buffer (OverflowBlock).
	l.shutdown()
	i.mu.Lock()
	defer i.mu.Unlock()
	if !i.proc.remove(l) {
		i.joining = slices.DeleteFunc(i.joining, func(j *listener[T]) bool { return j == l })
	}
	if !l.started {
		l.finish()
	}
	return nil
}

// ShutDownEventHandler removes a handler like RemoveEventHandler, then waits
// until its goroutine has exited, so that the handler is never called again.
// It must not be called from the handler's own methods, which would wait
// for themselves; from another handler it waits for this handler's current
// call, so two handlers must not shut each other down. Handlers can always
// use RemoveEventHandler.
func (i *Informer[T]) ShutDownEventHandler(r *Registration) error {
	if err := i.RemoveEventHandler(r); err != nil {
		return err
	}
	if r.owner == any(i) {
		<-r.target.finishedChan()
	}
	return nil
}
