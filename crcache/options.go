package crcache

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	informer "github.com/kubetyped/informer"
)

// Options are crcache's settings beyond controller-runtime's cache.Options:
// what the informers drop and share to hold less memory, in the style of
// cache.Options, cache-wide with per-kind overrides in ByObject. The zero
// value is crcache's default (what [New] uses): nothing dropped, and
// sharing on for every kind whose reads deep-copy.
type Options struct {
	// DropFields are fields dropped from every object of every kind on the
	// wire, before it is decoded: they are absent (zero) in cached objects,
	// in what reads return and in what handlers receive, and cost neither
	// memory nor decoding. informer.ManagedFields
	// ("metadata.managedFields") is the usual one. The paths are those of
	// the core's RESTOptions.DropFields; a path a kind does not have is an
	// error of the first read (or GetInformer) of that kind, so put paths
	// that only some kinds have in ByObject. Do not drop a field an
	// IndexField function, a label or field selector, a transform or a
	// reconciler reads.
	DropFields []string
	// Deduplicate, if set, turns sharing on (true) or off (false) for every
	// kind (see [ByObject].Deduplicate for what it does). Nil, the default,
	// means on for the kinds whose reads deep-copy (controller-runtime's
	// default) and off for those configured with UnsafeDisableDeepCopy.
	Deduplicate *bool
	// DetectMutations turns on the core's cache mutation detector in every
	// informer (the environment variable KUBE_CACHE_MUTATION_DETECTOR=true
	// does too): it keeps a deep copy of each cached object, compares them
	// every second, and logs each object modified in the cache with the
	// handlers and readers it was handed to. Meant for tests and CI: it
	// doubles the memory of the cache.
	DetectMutations bool
	// ByObject overrides DropFields and Deduplicate for the kind of each
	// key (a typed object, an *unstructured.Unstructured or a
	// *metav1.PartialObjectMetadata with its apiVersion and kind set), in
	// each of its forms. A kind need not be in cache.Options.ByObject.
	ByObject map[client.Object]ByObject
	// Snapshot makes every informer of the cache keep a snapshot of its
	// cache on disk and, when the process starts again, resume from it
	// instead of listing everything again: the core's
	// informer.SnapshotOptions (see its docs and the module's
	// docs/restart.md for what lands on disk). Each informer has a file of
	// its own in Snapshot.Dir; a snapshot is restored only by an informer
	// of the same kind, form, namespace, selectors and dropped fields.
	// Objects in the metadata form (*metav1.PartialObjectMetadata) keep no
	// snapshot: their kind is not in their encoding. An informer with a
	// transform (cache.Options.DefaultTransform or ByObject's) keeps one
	// only if Snapshot.TransformID names the transform. Example and
	// ScopeID are set by the cache.
	Snapshot informer.SnapshotOptions
}

// ByObject are the settings of one kind in [Options].ByObject.
type ByObject struct {
	// DropFields, if not nil, replace [Options].DropFields for this kind
	// (an empty, non-nil slice drops nothing).
	DropFields []string
	// Deduplicate, if set, turns sharing on or off for this kind,
	// replacing [Options].Deduplicate. With sharing, equal values of
	// different cached objects are one copy: strings, label and annotation
	// maps, managed fields' bytes and, in pods and the other built-in types
	// decoded from protobuf, every sub-object equal to one already cached
	// (resource lists, env and port lists, probes, volume sources…),
	// shared as they are decoded, which also halves their decoding CPU.
	// Values do not change, but CACHED OBJECTS THEN SHARE MAPS, SLICES AND
	// STRUCTS: a write into one, which the cache's rules forbid anyway,
	// changes many. Reads that deep-copy are unaffected. Objects handed to
	// event handlers, read with client.UnsafeDisableDeepCopy, or returned by
	// an informer's store are the cached objects and must not be modified.
	Deduplicate *bool
}

// NewWith returns a constructor like [New] (a cache.NewCacheFunc, for
// manager.Options.NewCache) whose caches also apply o. It fails, when
// called, on a ByObject key whose kind the scheme does not know, and on
// DropFields paths a typed ByObject kind does not have.
func NewWith(o Options) cache.NewCacheFunc {
	return func(config *rest.Config, opts cache.Options) (cache.Cache, error) {
		return newCache(config, opts, o, nil)
	}
}

// leanSettings are the Options of one kind: nil fields inherit.
type leanSettings struct {
	dropFields  []string
	deduplicate *bool
}

// leanOptions are Options resolved to kinds.
type leanOptions struct {
	defaults        leanSettings
	byGVK           map[schema.GroupVersionKind]leanSettings
	detectMutations bool
	snapshot        informer.SnapshotOptions
}

// resolvedLean is what one informer applies.
type resolvedLean struct {
	dropFields  []string
	deduplicate bool
}

// resolve returns the settings of gvk's informers, whose reads deep-copy
// unless disableDeepCopy. Sharing is on by default only where reads
// deep-copy: a reader without deep copies holds the cached objects
// themselves, and a mistaken write of such a reader would then change
// every object sharing the part written, not only the one read.
func (l leanOptions) resolve(gvk schema.GroupVersionKind, disableDeepCopy bool) resolvedLean {
	s := l.defaults
	if bo, ok := l.byGVK[gvk]; ok {
		if bo.dropFields != nil {
			s.dropFields = bo.dropFields
		}
		if bo.deduplicate != nil {
			s.deduplicate = bo.deduplicate
		}
	}
	return resolvedLean{dropFields: s.dropFields, deduplicate: ptr.Deref(s.deduplicate, !disableDeepCopy)}
}

// resolveLean resolves o's ByObject keys to kinds with opts' scheme and
// checks the DropFields of typed ones.
func resolveLean(config *rest.Config, opts cache.Options, o Options) (leanOptions, error) {
	l := leanOptions{
		defaults:        leanSettings{dropFields: o.DropFields, deduplicate: o.Deduplicate},
		byGVK:           make(map[schema.GroupVersionKind]leanSettings, len(o.ByObject)),
		detectMutations: o.DetectMutations,
		snapshot:        o.Snapshot,
	}
	for obj, bo := range o.ByObject {
		gvk, err := apiutil.GVKForObject(obj, opts.Scheme)
		if err != nil {
			return l, fmt.Errorf("Options.ByObject: failed to get GVK for type %T: %w", obj, err)
		}
		if bo.DropFields != nil && formOf(obj) == formTyped {
			if err := checkDropFields(config, opts.Scheme, opts.HTTPClient, obj, bo.DropFields); err != nil {
				return l, fmt.Errorf("Options.ByObject[%v].DropFields: %w", gvk, err)
			}
		}
		l.byGVK[gvk] = leanSettings{dropFields: bo.DropFields, deduplicate: bo.Deduplicate}
	}
	return l, nil
}
