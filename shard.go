package informer

import (
	"errors"
	"fmt"
	"math/bits"
	"strings"
)

// ShardKey is the object field whose hash places an object in a shard: the
// field paths the API server's shardRange() accepts.
type ShardKey string

const (
	// ShardByUID spreads objects by the hash of metadata.uid: the even
	// split, for controllers that handle each object on its own. It is the
	// default.
	ShardByUID ShardKey = "object.metadata.uid"
	// ShardByNamespace keeps every object of a namespace in one shard, for
	// controllers that read several objects of a namespace together. The
	// split is only as even as the namespaces' sizes and names: names that
	// differ only at their end (ns-0, ns-1, …) hash into one shard, and
	// every object of a cluster-scoped resource (namespace "") falls in one
	// shard. See docs/sharding.md for measured splits.
	ShardByNamespace ShardKey = "object.metadata.namespace"
)

// Shard restricts an informer to a part of the 64-bit FNV-1a hash space of
// one field of its objects (see [ShardKey]), through the API server's
// sharded list and watch (KEP-5866, alpha in Kubernetes 1.37 behind the
// ShardedListAndWatch feature gate): every list and watch carries a shard
// selector, so the server sends only the shard's objects, and the cache,
// listers and handlers see only them. A shard is either static (Index of
// Count equal ranges) or dynamic (Group: the ranges of this member of a
// [ShardGroup], which change as members come and go). See docs/sharding.md.
//
// When the server ignores the selector (the gate is off), the informer does
// not sync: its list fails with an error naming the feature gate, which
// [Factory.WaitForCacheSync] reports, unless FilterOnClient is set.
type Shard struct {
	// By is the hashed field; empty means ShardByUID.
	By ShardKey
	// Index and Count make a static shard: the hash space is cut into Count
	// equal ranges and the informer holds range Index (0 ≤ Index < Count).
	// Both must be zero when Group is set.
	Index, Count int
	// Group makes the shard dynamic: the informer holds the ranges the
	// group assigns to this member, widening and narrowing them as members
	// join and leave. The group must be running ([ShardGroup.Run]): an
	// informer whose group has not started 5 seconds after the informer
	// logs a warning, and [Factory.WaitForCacheSync] then fails, saying
	// that the group is not running (a group started later still lets the
	// informer sync).
	Group *ShardGroup
	// FilterOnClient makes the informer work with a server that ignores
	// shard selectors: it then receives every object and keeps only those of
	// its shard, by the same hash as the server. That costs the whole
	// resource's traffic and decoding in every member; only the cache is
	// smaller.
	FilterOnClient bool

	// whole marks NoShard.
	whole bool
}

// NoShard, as [InformerOptions].Shard, makes an informer of a sharded
// factory ([FactoryOptions].Shard) hold the whole resource, as an informer
// of an unsharded factory does. It must not be modified.
var NoShard = &Shard{whole: true}

// validate checks the shard's settings.
func (s *Shard) validate() error {
	if s.whole {
		return nil
	}
	switch s.By {
	case "", ShardByUID, ShardByNamespace:
	default:
		return fmt.Errorf("Shard.By: unsupported key %q (use ShardByUID or ShardByNamespace)", s.By)
	}
	if s.Group != nil {
		if s.Index != 0 || s.Count != 0 {
			return errors.New("Shard: set either Group or Index and Count, not both")
		}
		return nil
	}
	if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		return fmt.Errorf("Shard: Index %d of Count %d: need Count ≥ 1 and 0 ≤ Index < Count (or a Group)", s.Index, s.Count)
	}
	return nil
}

// key returns the hashed field, ShardByUID by default.
func (s *Shard) key() ShardKey {
	if s.By == "" {
		return ShardByUID
	}
	return s.By
}

// staticRange is the hash range of a static shard.
func (s *Shard) staticRange() hashRange {
	return hashRange{start: rangeBound(s.Index, s.Count), end: rangeBound(s.Index+1, s.Count)}
}

// rangeBound is the i-th of count equal cuts of the hash space,
// floor(i·2⁶⁴/count), with 2⁶⁴ written as 0 (see hashRange).
func rangeBound(i, count int) uint64 {
	if i >= count {
		return 0
	}
	q, _ := bits.Div64(uint64(i), 0, uint64(count))
	return q
}

// FNV-1a, 64 bits: the hash the API server applies to the shard key.
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

// shardHash is the 64-bit FNV-1a hash of s, as the API server computes it
// (k8s.io/apimachinery/pkg/sharding.HashField). Written out because
// hash/fnv allocates its state and copies the string.
func shardHash(s string) uint64 {
	h := uint64(fnvOffset64)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= fnvPrime64
	}
	return h
}

// shardValue is the value of key in obj.
func shardValue[T Object](key ShardKey, obj T) string {
	if key == ShardByNamespace {
		return obj.GetNamespace()
	}
	return string(obj.GetUID())
}

// hashRange is the half-open range [start, end) of the hash space; end 0
// stands for 2⁶⁴, the end of the space.
type hashRange struct{ start, end uint64 }

// contains reports whether h is in the range.
func (r hashRange) contains(h uint64) bool {
	return h >= r.start && (r.end == 0 || h < r.end)
}

// hexBound writes a bound as the server wants it: 0x and 16 lower-case hex
// digits, or 0x10000000000000000 for 2⁶⁴.
func hexBound(b uint64, isEnd bool) string {
	if isEnd && b == 0 {
		return "0x10000000000000000"
	}
	return fmt.Sprintf("0x%016x", b)
}

// shardSelector is the ListOptions.ShardSelector for ranges of key, in the
// form the server echoes back in the list's shardInfo.
func shardSelector(key ShardKey, ranges []hashRange) string {
	var b strings.Builder
	for i, r := range ranges {
		if i > 0 {
			b.WriteString(" || ")
		}
		fmt.Fprintf(&b, "shardRange(%s, '%s', '%s')", key, hexBound(r.start, false), hexBound(r.end, true))
	}
	return b.String()
}

// errShardingNotEnabled reports a server that ignored a shard selector.
var errShardingNotEnabled = errors.New("the API server ignores shard selectors: enable its ShardedListAndWatch feature gate (kube-apiserver --feature-gates=ShardedListAndWatch=true, alpha in Kubernetes 1.37), or set Shard.FilterOnClient to filter on the client")
