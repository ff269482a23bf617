package informer

import (
	"errors"
	"fmt"
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
	i.fan.handlerCount++
	name := opts.Name
	if name == "" {
		name = fmt.Sprintf("%T#%d", h, i.fan.handlerCount)
	}
	if i.life.stopped.Load() {
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
	requested, err := i.adjustResyncPeriod(logger, i.cfg.handlerResync(opts))
	if err != nil {
		i.mu.Unlock()
		return nil, fmt.Errorf("handler %s was not added: %w", name, err)
	}

	l := newListener(h, name, opts, i.fan.synced)
	l.attach(i.cfg.clock(), i.hooks.handlerHooks(name))
	i.fan.proc.initResync(l, requested, effectiveResyncPeriod(logger, requested, i.cfg.resyncCheckPeriod))
	reg := &Registration{owner: i, target: l, informerName: informerName(i)}
	if !i.life.started {
		i.fan.addListener(l)
		i.mu.Unlock()
		return reg, nil
	}
	l.start(&i.fan.listeners, i.life.runLogger, i.hooks.metrics)
	i.fan.join(l)
	i.mu.Unlock()
	i.fan.tryAdmitJoiners()
	return reg, nil
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
	if requested < i.cfg.resyncCheckPeriod || i.cfg.resyncCheckPeriod == 0 {
		if i.life.started {
			if i.cfg.resyncCheckPeriod == 0 {
				return 0, fmt.Errorf("resync period %v asked of %s, which runs without resync: give the informer a resync period (InformerOptions.ResyncPeriod, or FactoryOptions.ResyncPeriod in a factory), or add the handler before the informer starts", requested, informerName(i))
			}
			logger.Info("Warning: resync period is below the resync check period of the running informer, raising it", "resyncPeriod", requested, "resyncCheckPeriod", i.cfg.resyncCheckPeriod)
			return i.cfg.resyncCheckPeriod, nil
		}
		i.cfg.resyncCheckPeriod = requested
		i.fan.proc.setResyncCheckPeriod(logger, requested)
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
	i.fan.removeListener(l)
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
