package informertest

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/watch"
)

// fakeWatch is the watch.Interface of FakeListerWatcher. Senders never hold
// a lock while blocked on the result channel, so Stop cannot deadlock with a
// pending send; the result channel is closed only after every in-flight send
// has given up, so a send never hits a closed channel.
type fakeWatch struct {
	result  chan watch.Event
	done    chan struct{} // closed when the watch ends
	onEnd   func()
	mu      sync.Mutex
	ended   bool
	senders sync.WaitGroup
}

var _ watch.Interface = (*fakeWatch)(nil)

// ResultChan implements watch.Interface.
func (w *fakeWatch) ResultChan() <-chan watch.Event { return w.result }

// Stop implements watch.Interface: it ends the watch and closes the result
// channel. Safe to call more than once.
func (w *fakeWatch) Stop() { w.end() }

// end ends the watch once: pending sends give up, then the result channel
// is closed.
func (w *fakeWatch) end() {
	w.mu.Lock()
	if w.ended {
		w.mu.Unlock()
		return
	}
	w.ended = true
	close(w.done)
	w.mu.Unlock()
	w.senders.Wait()
	close(w.result)
	w.onEnd()
}

// send offers ev to the consumer. It reports false if the watch ended
// before accepting ev.
func (w *fakeWatch) send(ctx context.Context, ev watch.Event) (bool, error) {
	w.mu.Lock()
	if w.ended {
		w.mu.Unlock()
		return false, nil
	}
	w.senders.Add(1)
	w.mu.Unlock()
	defer w.senders.Done()
	select {
	case <-w.done:
		return false, nil
	default:
	}
	select {
	case w.result <- ev:
		return true, nil
	case <-w.done:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}
