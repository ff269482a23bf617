package replayserver

import (
	"errors"
	"sync"
	"time"

	"github.com/kubetyped/informer/internal/prodpods"
)

// history is one cluster's pods through time: each pod's current version
// and the events that led there, so that a list or a watch can be served
// at any resource version the history still holds, as etcd and the watch
// cache serve one. Resource versions are dense: event k of the log has
// resource version base+1+k. A pod is created by an ADDED event and changed
// by MODIFIED ones (the writer's status updates); pods are never deleted.
type history struct {
	pods *prodpods.Cluster

	mu sync.RWMutex
	// state is each pod's current version.
	state []podState
	// log holds the events with resource versions in (base, rv].
	log  []event
	base uint64
	rv   uint64
	// maxLog bounds log: past it, the older half is compacted.
	maxLog int
	// changed is closed (and replaced) when events are appended or watches
	// must end (ended set).
	changed chan struct{}
	// generation counts expiries: a watch started in an earlier one ends.
	generation uint64
	// cursor and stride choose the pods the writer changes.
	cursor int
}

// podState is a pod's version as of resource version rv.
type podState struct {
	rv      uint64
	version uint32
	exists  bool
}

// event is one entry of the log: pod changed (or, when prev is not
// exists, created) to version.
type event struct {
	pod     int32
	version uint32
	prev    podState
}

// errExpired says that a resource version is older than the history
// holds.
var errExpired = errors.New("resource version compacted")

// newHistory returns the history of pods, each created in order, the
// first at resource version firstRV.
func newHistory(pods *prodpods.Cluster, firstRV uint64, maxLog int) *history {
	n := pods.Len()
	h := &history{
		pods:    pods,
		state:   make([]podState, n),
		log:     make([]event, n, max(n, 1024)),
		base:    firstRV - 1,
		rv:      firstRV - 1 + uint64(n),
		maxLog:  max(maxLog, n),
		changed: make(chan struct{}),
	}
	for i := range n {
		h.state[i] = podState{rv: firstRV + uint64(i), exists: true}
		h.log[i] = event{pod: int32(i)}
	}
	return h
}

// current returns the latest resource version.
func (h *history) current() uint64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.rv
}

// stateAt returns pod i's version as of resource version at (at least the
// history's base) under h.mu's read lock: its current state, walked back
// through the log past the events after at.
func (h *history) stateAt(i int, at uint64) (podState, error) {
	s := h.state[i]
	for s.rv > at {
		if s.rv <= h.base {
			return podState{}, errExpired
		}
		s = h.log[s.rv-h.base-1].prev
	}
	return s, nil
}

// snapshot fills out with the versions of pods from, from+1, … as of at,
// skipping pods that did not exist then, under one read lock; it returns
// the indexes (appended to idx) and states, and where it stopped (the next
// pod to look at). It takes at most len(out) pods, and only pods of
// namespace ns if ns is not empty.
func (h *history) snapshot(at uint64, from int, ns string, idx []int, out []podState) ([]int, []podState, int, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if at < h.base {
		return idx, out, from, errExpired
	}
	want := cap(out) - len(out)
	i := from
	for ; i < len(h.state) && want > 0; i++ {
		if ns != "" && h.pods.Namespace(i) != ns {
			continue
		}
		s, err := h.stateAt(i, at)
		if err != nil {
			return idx, out, i, err
		}
		if !s.exists {
			continue
		}
		idx = append(idx, i)
		out = append(out, s)
		want--
	}
	return idx, out, i, nil
}

// eventsAfter appends to out the events after resource version from (at
// most cap(out)-len(out) of them) and returns them with the channel that
// closes when more arrive; it fails with errExpired once the history no
// longer holds what follows from, or when generation is over.
func (h *history) eventsAfter(from, generation uint64, out []event) ([]event, <-chan struct{}, error) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if generation != h.generation {
		return out, nil, errWatchEnded
	}
	if from < h.base {
		return out, nil, errExpired
	}
	if from < h.rv {
		n := min(int(h.rv-from), cap(out)-len(out))
		start := int(from - h.base)
		out = append(out, h.log[start:start+n]...)
	}
	return out, h.changed, nil
}

// errWatchEnded says that the watch was ended by an expiry.
var errWatchEnded = errors.New("watch ended by the replay server")

// watchGeneration returns the current generation and resource version.
func (h *history) watchGeneration() (generation, rv uint64) {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.generation, h.rv
}

// Write is one change the writer made.
type Write struct {
	// ResourceVersion is the change's resource version.
	ResourceVersion uint64 `json:"resourceVersion"`
	// Namespace and Name name the pod.
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// UnixNano is when it was made, as the server's clock says.
	UnixNano int64 `json:"unixNano"`
}

// write changes count pods (a status update each: a new version), spread
// over the cluster by a stride prime to its size, and returns the changes.
func (h *history) write(count int) []Write {
	n := len(h.state)
	if n == 0 || count <= 0 {
		return nil
	}
	stride := writeStride(n)
	out := make([]Write, 0, count)
	h.mu.Lock()
	for range count {
		i := h.cursor
		h.cursor = (h.cursor + stride) % n
		prev := h.state[i]
		h.rv++
		h.log = append(h.log, event{pod: int32(i), version: prev.version + 1, prev: prev})
		h.state[i] = podState{rv: h.rv, version: prev.version + 1, exists: true}
		out = append(out, Write{ResourceVersion: h.rv, UnixNano: time.Now().UnixNano()})
		out[len(out)-1].Namespace, out[len(out)-1].Name = h.pods.Namespace(i), h.pods.Name(i)
	}
	if len(h.log) > h.maxLog {
		h.compactLocked(h.base + uint64(len(h.log)/2))
	}
	h.notifyLocked()
	h.mu.Unlock()
	return out
}

// writeStride returns a stride prime to n near n·0.618, so that successive
// writes land far apart.
func writeStride(n int) int {
	s := max(n*618/1000, 1)
	for gcd(s, n) != 1 {
		s++
	}
	return s
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// expire ends every open watch and compacts the whole history after moving
// the resource version on by one (as a write to another resource would),
// so that a client resuming from what it has seen gets "410 Gone" and must
// list again. It returns the new resource version.
func (h *history) expire() uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.generation++
	h.rv++
	h.log = append(h.log, event{pod: -1})
	h.compactLocked(h.rv)
	h.notifyLocked()
	return h.rv
}

// compactLocked drops the events up to resource version upTo.
func (h *history) compactLocked(upTo uint64) {
	drop := int(upTo - h.base)
	h.log = append(h.log[:0:0], h.log[drop:]...)
	h.base = upTo
}

// notifyLocked wakes the watches.
func (h *history) notifyLocked() {
	close(h.changed)
	h.changed = make(chan struct{})
}
