package replayserver

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// watchBatch is how many events a watch takes from the history at a time.
const watchBatch = 512

// serveWatch answers a watch, as kube-apiserver's watch cache does:
//   - sendInitialEvents=true (a streaming list; resourceVersionMatch
//     NotOlderThan): every pod as of the latest resource version as an
//     ADDED event, then a bookmark at that version annotated
//     "k8s.io/initial-events-end", then the changes since;
//   - resource version "" or "0" without sendInitialEvents: the same
//     without the bookmark (the legacy initial state);
//   - sendInitialEvents=false, or a resource version: the changes after
//     it ("" or "0": after the latest), or, if the history no longer holds
//     them, an ERROR event "410 Gone".
//
// With allowWatchBookmarks, an idle watch gets a bookmark every
// BookmarkInterval. The watch ends at timeoutSeconds, when the client goes,
// or when the cluster is expired (Cluster.Expire).
func (cs *clusterServer) serveWatch(w http.ResponseWriter, r *http.Request, ns string, o requestOptions) {
	h := cs.history
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeStatus(w, &apierrors.NewInternalError(errors.New("response cannot stream")).ErrStatus)
		return
	}
	generation, current := h.watchGeneration()
	streaming := o.sendInitialEvents != nil && *o.sendInitialEvents
	latest := o.resourceVersion == "" || o.resourceVersion == "0"
	initial := streaming || (o.sendInitialEvents == nil && latest)
	from := o.rv
	switch {
	case o.rv > current && (streaming || o.match != ""):
		writeStatus(w, tooLarge(o.rv, current))
		return
	case initial || latest:
		from = current
	}
	cs.stats.watches.Add(1)
	if streaming {
		cs.stats.watchLists.Add(1)
	}
	cs.stats.openWatches.Add(1)
	defer cs.stats.openWatches.Add(-1)

	w.Header().Set("Content-Type", contentTypeWatch)
	w.Header().Set("Transfer-Encoding", "chunked")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	ctx := r.Context()
	out := &watchWriter{w: w, flusher: flusher, cs: cs, buf: make([]byte, 0, writeChunk+64<<10)}
	var timeout <-chan time.Time
	if o.timeout > 0 {
		t := time.NewTimer(o.timeout)
		defer t.Stop()
		timeout = t.C
	}

	if initial {
		idx := make([]int, 0, snapshotChunk)
		states := make([]podState, 0, snapshotChunk)
		for next := 0; next < h.pods.Len(); {
			var err error
			if idx, states, next, err = h.snapshot(from, next, ns, idx[:0], states[:0]); err != nil {
				out.error(tooOld(from))
				return
			}
			for k, i := range idx {
				out.pod(eventAdded, i, states[k])
			}
			if out.err != nil || ctx.Err() != nil {
				return
			}
		}
		if streaming {
			out.bookmark(from, true)
		}
		if !out.flush() {
			return
		}
	}

	var bookmarks <-chan time.Time
	if o.bookmarks {
		t := time.NewTicker(cs.opts.BookmarkInterval)
		defer t.Stop()
		bookmarks = t.C
	}
	pos := from
	events := make([]event, 0, watchBatch)
	for {
		var changed <-chan struct{}
		var err error
		events, changed, err = h.eventsAfter(pos, generation, events[:0])
		switch {
		case errors.Is(err, errWatchEnded):
			return
		case err != nil:
			out.error(tooOld(pos))
			return
		}
		for _, e := range events {
			pos++
			if e.pod < 0 || (ns != "" && h.pods.Namespace(int(e.pod)) != ns) {
				continue
			}
			eventType := eventModified
			if !e.prev.exists {
				eventType = eventAdded
			}
			out.pod(eventType, int(e.pod), podState{rv: pos, version: e.version, exists: true})
		}
		if len(events) > 0 {
			if !out.flush() {
				return
			}
			continue
		}
		select {
		case <-changed:
		case <-bookmarks:
			out.bookmark(pos, false)
			if !out.flush() {
				return
			}
		case <-timeout:
			return
		case <-ctx.Done():
			return
		}
	}
}

// watchWriter accumulates a watch's events and writes them in chunks; the
// first write error ends it.
type watchWriter struct {
	w       http.ResponseWriter
	flusher http.Flusher
	cs      *clusterServer
	buf     []byte
	err     error
}

// pod appends an event of eventType carrying pod i in state s.
func (ww *watchWriter) pod(eventType string, i int, s podState) {
	pods := ww.cs.history.pods
	ww.buf = appendEventHead(ww.buf, eventType, "Pod", pods.PodSize(i))
	ww.buf = appendUnknownTail(pods.AppendPod(ww.buf, i, s.version, s.rv))
	if len(ww.buf) >= writeChunk {
		ww.write()
	}
}

// bookmark appends a BOOKMARK event at resource version rv.
func (ww *watchWriter) bookmark(rv uint64, initialEnd bool) {
	ev, err := bookmarkEvent(strconv.FormatUint(rv, 10), initialEnd)
	if err != nil {
		ww.err = err
		return
	}
	ww.buf = append(ww.buf, ev...)
}

// error writes an ERROR event carrying st and flushes.
func (ww *watchWriter) error(st *metav1.Status) {
	ev, err := errorEvent(st)
	if err != nil {
		ww.err = err
		return
	}
	ww.buf = append(ww.buf, ev...)
	ww.flush()
}

// write writes what has accumulated.
func (ww *watchWriter) write() {
	if ww.err != nil || len(ww.buf) == 0 {
		ww.buf = ww.buf[:0]
		return
	}
	_, ww.err = ww.w.Write(ww.buf)
	ww.cs.stats.bytes.Add(int64(len(ww.buf)))
	ww.buf = ww.buf[:0]
}

// flush writes and flushes what has accumulated, reporting success.
func (ww *watchWriter) flush() bool {
	ww.write()
	if ww.err == nil {
		ww.flusher.Flush()
	}
	return ww.err == nil
}
