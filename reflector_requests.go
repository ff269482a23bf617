package informer

import "sync/atomic"

// ReflectorRequestStats counts the requests a Reflector made to get the
// resource's full state and to resume watching, from
// [Reflector.RequestStats]. They are counted per request, never per event.
type ReflectorRequestStats struct {
	// Lists counts list requests (all pages of a paginated list count as
	// one), by reason.
	Lists ListReasons
	// StreamingLists counts streaming lists (watches asking for the initial
	// state as events), by reason. A streaming list the server cannot serve
	// is counted here, and the list the reflector makes instead is counted
	// in Lists with the reason Error.
	StreamingLists ListReasons
	// WatchRestarts counts watch requests made to resume watching from the
	// last resource version without getting the full state again: after a
	// watch ended normally (the server's timeout) or with "429 Too Many
	// Requests", or could not be started for a reason that is retried in
	// place (connection refused, 429). The first watch after a list is not
	// a restart.
	WatchRestarts uint64
}

// ListReasons counts requests for the resource's full state by the reason
// they were made.
type ListReasons struct {
	// Initial counts the reflector's first request.
	Initial uint64
	// Expired counts requests made because the resource version the
	// reflector held was no longer available ("410 Gone", Expired) or not
	// yet available (too large), reported by a watch, a list or a streaming
	// list.
	Expired uint64
	// Error counts requests made after any other failure: of a list, of a
	// streaming list (including one the server cannot serve), of a watch
	// that ended with an error or could not be started, or of a resync.
	Error uint64
}

// listReason is why the reflector is about to request the full state.
type listReason uint8

const (
	// reasonInitial, the zero value, is the reason of the first request.
	reasonInitial listReason = iota
	reasonExpired
	reasonError
	numListReasons
)

// requestCounters holds ReflectorRequestStats as atomics, so RequestStats
// can be read while Run writes.
type requestCounters struct {
	lists, streamingLists [numListReasons]atomic.Uint64
	watchRestarts         atomic.Uint64
}

// RequestStats returns the counts of list and watch requests made so far.
// Safe for concurrent use.
func (r *Reflector[T]) RequestStats() ReflectorRequestStats {
	c := &r.requests
	return ReflectorRequestStats{
		Lists:          loadListReasons(&c.lists),
		StreamingLists: loadListReasons(&c.streamingLists),
		WatchRestarts:  c.watchRestarts.Load(),
	}
}

func loadListReasons(c *[numListReasons]atomic.Uint64) ListReasons {
	return ListReasons{
		Initial: c[reasonInitial].Load(),
		Expired: c[reasonExpired].Load(),
		Error:   c[reasonError].Load(),
	}
}

// countFullStateRequest counts a list (or, if streaming, a streaming list)
// about to be requested, with the reason recorded by relistAfter. Once a
// request has been made, the next one can only be caused by a failure:
// the reason becomes Error unless relistAfter says otherwise. Run's
// goroutine only.
func (r *Reflector[T]) countFullStateRequest(streaming bool) {
	c := &r.requests.lists
	if streaming {
		c = &r.requests.streamingLists
	}
	c[r.nextListReason].Add(1)
	r.nextListReason = reasonError
}

// relistAfter records that err makes the reflector request the full state
// again: the next request counts as Expired if err says the resource
// version is unavailable. Run's goroutine only.
func (r *Reflector[T]) relistAfter(err error) {
	if isExpiredError(err) || isTooLargeResourceVersionError(err) {
		r.nextListReason = reasonExpired
	}
}
