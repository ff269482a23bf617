package informer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubetyped/informer/internal/wire"
)

// shardMode is what a shardListerWatcher learned of the server.
type shardMode int32

const (
	shardModeUnknown shardMode = iota
	// shardModeServer: the server filters by the selector.
	shardModeServer
	// shardModeClient: the server ignores it; the lister-watcher filters.
	shardModeClient
)

// shardListerWatcher restricts every list and watch of inner to hash ranges
// of a shard key: it sets ListOptions.ShardSelector, checks once that the
// server applies it, and, if it does not, fails with errShardingNotEnabled
// or, with filterOnClient, filters the objects itself.
type shardListerWatcher[T Object] struct {
	inner          ListerWatcher[T]
	key            ShardKey
	filterOnClient bool
	// ranges are the current ranges; a dynamic shard changes them, and the
	// next list or watch asks for the new ones.
	ranges atomic.Pointer[[]hashRange]
	mode   atomic.Int32
}

func newShardListerWatcher[T Object](inner ListerWatcher[T], key ShardKey, filterOnClient bool, ranges []hashRange) *shardListerWatcher[T] {
	lw := &shardListerWatcher[T]{inner: inner, key: key, filterOnClient: filterOnClient}
	lw.ranges.Store(&ranges)
	return lw
}

// setRanges changes the ranges of the next lists and watches. A running
// watch keeps its selector until it ends.
func (lw *shardListerWatcher[T]) setRanges(ranges []hashRange) { lw.ranges.Store(&ranges) }

// errNoRanges stops a list or watch of a shard that holds nothing (which
// the server would read as "everything").
var errNoRanges = errors.New("the shard holds no hash range")

// selector returns the current shard selector.
func (lw *shardListerWatcher[T]) selector() (string, error) {
	ranges := *lw.ranges.Load()
	if len(ranges) == 0 {
		return "", errNoRanges
	}
	return shardSelector(lw.key, ranges), nil
}

// inShard reports whether obj belongs to the current ranges.
func (lw *shardListerWatcher[T]) inShard(obj T) bool {
	h := shardHash(shardValue(lw.key, obj))
	for _, r := range *lw.ranges.Load() {
		if r.contains(h) {
			return true
		}
	}
	return false
}

// List lists the shard's objects.
func (lw *shardListerWatcher[T]) List(ctx context.Context, options metav1.ListOptions) (*ListResult[T], error) {
	mode, err := lw.serverMode(ctx)
	if err != nil {
		return nil, err
	}
	if options.ShardSelector, err = lw.selector(); err != nil {
		return nil, err
	}
	res, err := lw.inner.List(ctx, options)
	if err != nil || res == nil || mode == shardModeServer {
		return res, err
	}
	kept := res.Items[:0]
	for _, obj := range res.Items {
		if lw.inShard(obj) {
			kept = append(kept, obj)
		}
	}
	clear(res.Items[len(kept):])
	res.Items = kept
	return res, nil
}

// Watch watches the shard's objects.
func (lw *shardListerWatcher[T]) Watch(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
	mode, err := lw.serverMode(ctx)
	if err != nil {
		return nil, err
	}
	if options.ShardSelector, err = lw.selector(); err != nil {
		return nil, err
	}
	w, err := lw.inner.Watch(ctx, options)
	if err != nil {
		return nil, err
	}
	if mode == shardModeClient {
		w = watch.Filter(w, func(ev watch.Event) (watch.Event, bool) {
			switch ev.Type {
			case watch.Added, watch.Modified, watch.Deleted:
				obj, ok := ev.Object.(T)
				return ev, !ok || lw.inShard(obj)
			default: // bookmarks and errors
				return ev, true
			}
		})
	}
	return w, nil
}

// IsWatchListSemanticsUnSupported passes on inner's answer.
func (lw *shardListerWatcher[T]) IsWatchListSemanticsUnSupported() bool {
	d, ok := lw.inner.(watchListSemanticsDeclarer)
	return ok && d.IsWatchListSemanticsUnSupported()
}

// invalidShardSelector is rejected by a server that reads shard selectors
// (start not below end) and ignored by one that does not.
const invalidShardSelector = "shardRange(object.metadata.uid, '0x0000000000000001', '0x0000000000000000')"

// serverMode finds out, on the first call that gets an answer, whether the
// server applies shard selectors: a list of one object echoes the selector
// in its shardInfo if it does. Lists of metadata lose the shardInfo on the
// way, so without it the server is asked to parse an invalid selector, which
// only a server that reads them rejects.
func (lw *shardListerWatcher[T]) serverMode(ctx context.Context) (shardMode, error) {
	if mode := shardMode(lw.mode.Load()); mode != shardModeUnknown {
		return mode, nil
	}
	sel, err := lw.selector()
	if err != nil {
		return shardModeUnknown, err
	}
	res, err := lw.inner.List(ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 1, ShardSelector: sel})
	if err != nil {
		return shardModeUnknown, fmt.Errorf("checking that the server supports shard selectors: %w", err)
	}
	supported := res != nil && res.ShardSelector != ""
	if !supported {
		_, err := lw.inner.List(ctx, metav1.ListOptions{ResourceVersion: "0", Limit: 1, ShardSelector: invalidShardSelector})
		supported = err != nil && strings.Contains(err.Error(), "invalid shard selector")
		if err != nil && !supported {
			return shardModeUnknown, fmt.Errorf("checking that the server supports shard selectors: %w", err)
		}
	}
	mode := shardModeServer
	if !supported {
		if !lw.filterOnClient {
			return shardModeUnknown, errShardingNotEnabled
		}
		mode = shardModeClient
	}
	lw.mode.Store(int32(mode))
	return mode, nil
}

// description is inner's: a shard lists from the same server through the
// same decoder (the shard itself is in the informer's configuration); but
// it lists no versions, which would be those of every shard's objects.
func (lw *shardListerWatcher[T]) description() lwDescription {
	d, _ := describe(lw.inner)
	d.listed.versions = nil
	return d
}

// decodingWith returns a shard of the same key and current ranges over a
// copy of inner decoding with table.
func (lw *shardListerWatcher[T]) decodingWith(table *wire.InternTable) (ListerWatcher[T], error) {
	inner, ok := lw.inner.(describedListerWatcher[T])
	if !ok {
		return nil, fmt.Errorf("sharded list/watch: %w", checkDecodingWith(lwDescription{}, table))
	}
	decoding, err := inner.decodingWith(table)
	if err != nil {
		return nil, err
	}
	return newShardListerWatcher(decoding, lw.key, lw.filterOnClient, *lw.ranges.Load()), nil
}
