package informer

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubetyped/informer/internal/listwatch"
	"github.com/kubetyped/informer/internal/wire"
)

// ListResult is one page of a typed list call: Items, the listed objects
// in the order the server returned them; ResourceVersion, the list's
// resource version; Continue, the token for the next page (empty on the
// last page). It is defined in an internal package so that the fake
// ListerWatcher of package informertest can return it without importing
// this package.
type ListResult[T Object] = listwatch.ListResult[T]

// appliedShardSelector returns the shard selector a typed list says the
// server applied, or "": what a ListerWatcher puts in the ShardSelector of
// its ListResult.
func appliedShardSelector(list any) string {
	if sharded, ok := list.(metav1.ShardedListInterface); ok {
		if info := sharded.GetShardInfo(); info != nil {
			return info.Selector
		}
	}
	return ""
}

// ListerWatcher lists and watches one resource type. Implementations must be
// safe for concurrent use.
type ListerWatcher[T Object] interface {
	// List returns one page of objects.
	List(ctx context.Context, options metav1.ListOptions) (*ListResult[T], error)
	// Watch starts a watch. The events carry objects of type T, except for
	// Error events (a *metav1.Status) and Bookmark events; a Reflector drops
	// and reports anything else.
	Watch(ctx context.Context, options metav1.ListOptions) (watch.Interface, error)
}

// watchListSemanticsDeclarer is implemented by lister-watchers that can say
// they do not support streaming lists (client-go's convention).
type watchListSemanticsDeclarer interface {
	IsWatchListSemanticsUnSupported() bool
}

// ReflectorStore is what a [Reflector] writes to: the informer's queue or a
// [DeltaFIFO]. Calls come from the reflector's goroutine, one at a time.
type ReflectorStore[T Object] interface {
	// Add records that obj was added.
	Add(obj T) error
	// Update records that obj was modified.
	Update(obj T) error
	// Delete records that obj was deleted.
	Delete(obj T) error
	// Replace records a complete list of the resource at resourceVersion.
	// The store takes ownership of list.
	Replace(list []T, resourceVersion string) error
	// Resync asks the store to re-deliver what it knows (periodic resync).
	Resync() error
	// Bookmark records that the watch has progressed to resourceVersion.
	Bookmark(resourceVersion string) error
}

// listedPreparer is implemented by a ReflectorStore that prepares listed
// objects as they arrive (the informer's queue): the reflector passes it
// each page of a list and each object of a streaming list at once, so that
// it holds only what the store keeps, and hands the prepared list over with
// replacePrepared instead of Replace.
type listedPreparer[T Object] interface {
	// prepareListed prepares items in place and returns those kept, a
	// prefix of items. reused are objects of items that cachedListed
	// returned, in the order of items: they are kept as they are.
	prepareListed(items, reused []T) []T
	// replacePrepared records a complete list of prepared items.
	replacePrepared(list []T, resourceVersion string) error
	// cachedListed returns the object the store would keep for an item
	// listed under name at resourceVersion, if it holds one.
	cachedListed(name ObjectName, resourceVersion string) (T, bool)
}

// cachedLookup returns the object an informer's cache holds under name at
// resourceVersion (a non-empty one), if any. A list's item that the cache
// holds at the listed resource version need not be decoded: the cache
// keeps its own object and would let the decoded one go at once (see
// eventQueue.prepareListed), so a relist of an unchanged cache decodes
// almost nothing. The reflector puts the lookup in the context of its List
// calls; a ListerWatcher that can read an item's name and resource version
// without decoding it (the REST, dynamic and metadata ListerWatchers)
// returns the cached object in the item's place. Any other ignores it.
type cachedLookup[T Object] func(name ObjectName, resourceVersion string) (T, bool)

// cachedLookupKey is the context key of a List call's cachedLookup.
type cachedLookupKey struct{}

// withCachedLookup returns ctx carrying lookup for the List calls made
// with it.
func withCachedLookup[T Object](ctx context.Context, lookup cachedLookup[T]) context.Context {
	return context.WithValue(ctx, cachedLookupKey{}, lookup)
}

// cachedLookupFrom returns the cachedLookup of ctx, or nil.
func cachedLookupFrom[T Object](ctx context.Context) cachedLookup[T] {
	lookup, _ := ctx.Value(cachedLookupKey{}).(cachedLookup[T])
	return lookup
}

// describedListerWatcher is implemented by the ListerWatchers this package
// builds from a *rest.Config (REST, dynamic, metadata) and by those
// wrapping one (a shard's): what they tell the informer beyond listing and
// watching. It is the one place the informer learns it; nothing else
// looks at a ListerWatcher's concrete type. A ListerWatcher without it (a
// user's, informertest's fake, an adapter of a client-go ListerWatcher)
// interns nothing, drops no fields and names no server: an informer over
// it describes its snapshot scope by its own options (Resource,
// Snapshot.ScopeID).
type describedListerWatcher[T Object] interface {
	ListerWatcher[T]
	// description returns what the ListerWatcher is; the same value on
	// every call.
	description() lwDescription
	// decodingWith returns a copy of the ListerWatcher whose decoder
	// interns strings in table, and shares sub-objects too if table does
	// (wire.NewSubObjectSharingTable): several ListerWatchers given one
	// table hold each string (and shared sub-object) they decode once.
	// The receiver is unchanged. It fails for a ListerWatcher whose
	// decoder interns nothing (description().interns nil), or that cannot
	// share sub-objects when table does (sharesOnDecode false).
	decodingWith(table *wire.InternTable) (ListerWatcher[T], error)
}

// lwDescription is what a describedListerWatcher tells the informer.
type lwDescription struct {
	// interns is the table its decoder interns strings in; nil if it does
	// not intern.
	interns *wire.InternTable
	// sharesOnDecode tells whether its decoder can also share sub-objects
	// as it decodes, given a table that shares them (decodingWith).
	sharesOnDecode bool
	// drop is its DropFields transport, which counts what it could not
	// parse (InformerStats.DropFieldsFailures); nil without DropFields.
	drop *wire.DropFieldsTransport
	// listed is what it lists and from where: the ListerWatcher's part of
	// a snapshot's scope.
	listed listedScope
}

// checkDecodingWith returns why a ListerWatcher described by d cannot
// decode through table (see describedListerWatcher.decodingWith), or nil.
func checkDecodingWith(d lwDescription, table *wire.InternTable) error {
	switch {
	case table == nil:
		return errors.New("no intern table to decode with")
	case d.interns == nil:
		return errors.New("its decoder does not intern strings")
	case table.SharesSubObjects() && !d.sharesOnDecode:
		return errors.New("its decoder cannot share sub-objects")
	}
	return nil
}

// describe returns lw's description, and whether it has one.
func describe[T Object](lw ListerWatcher[T]) (lwDescription, bool) {
	if d, ok := lw.(describedListerWatcher[T]); ok {
		return d.description(), true
	}
	return lwDescription{}, false
}

// listedScope is what a ListerWatcher lists and from where: its part of
// a snapshot's scope, and how to read the cluster's UID.
type listedScope struct {
	resource                     schema.GroupVersionResource
	namespace                    string
	labelSelector, fieldSelector string
	// dropFields are its DropFields, sorted.
	dropFields []string
	server     serverIdentity
	// clusterUID, if set, reads the UID of the server's kube-system
	// namespace (see readClusterUID).
	clusterUID func(ctx context.Context) (string, error)
	// versions, if set, lists the resource version of every object the
	// ListerWatcher lists, without the objects (see readListedVersions);
	// nil for one that lists only part of what these requests would (a
	// shard's).
	versions func(ctx context.Context) (listedVersions, error)
}

// listedVersions is what a consistent list of the metadata of a
// ListerWatcher's objects says: the resource version of each object it
// lists, all at resourceVersion. A restored reflector compares it with the
// objects it holds: equal, they are the state at resourceVersion (see
// catchUpSink); listedScope.versions lists it.
type listedVersions struct {
	resourceVersion string
	versions        map[ObjectName]string
}

// serverIdentity names the API server a ListerWatcher lists from: a
// snapshot written from one server is never restored from another. The
// cluster behind a server can change while its address and CA stay (a
// cluster re-created, etcd restored from a backup): the UID of its
// kube-system namespace, read at start (snapshotHeader.ClusterUID), and
// the snapshot's resource version, which must not be ahead of the
// server's, tell those apart.
type serverIdentity struct {
	// Host is the server's URL as the client reaches it: the config's
	// Host and APIPath.
	Host string `json:"host,omitempty"`
	// CA is a digest of the certificate authorities the client trusts
	// (the config's CAData or CAFile); empty when it uses the system's.
	CA string `json:"ca,omitempty"`
	// Cluster is the name a fleet gives the cluster; empty outside one.
	Cluster string `json:"cluster,omitempty"`
}
