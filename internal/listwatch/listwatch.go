// Package listwatch holds the page type of a typed list call, shared by the
// informer package and its test support (informertest) so that the fake
// ListerWatcher of informertest satisfies informer.ListerWatcher without
// importing the informer package, whose own tests use it.
package listwatch

// ListResult is one page of a typed list call.
type ListResult[T any] struct {
	// Items are the listed objects, in the order the server returned them.
	Items []T
	// ResourceVersion is the list's resource version.
	ResourceVersion string
	// Continue is the token for the next page; empty on the last page.
	Continue string
	// ShardSelector is the shard selector the server says it applied (the
	// list's metadata.shardInfo.selector); empty when it applied none.
	ShardSelector string
}
