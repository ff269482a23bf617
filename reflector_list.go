package informer

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// defaultPageSize is the page size of paginated lists, client-go's
// pager.PageSize.
const defaultPageSize = 500

// list gets the full state with (paginated) list calls and replaces the
// store's content with it.
func (r *Reflector[T]) list(ctx context.Context) error {
	options := metav1.ListOptions{ResourceVersion: r.relistResourceVersion()}
	pageSize := r.listPageSize(options.ResourceVersion)
	r.countFullStateRequest(false)
	items, rv, paginated, err := r.listAll(ctx, options, pageSize)
	if isExpiredError(err) || isTooLargeResourceVersionError(err) {
		// The resource version is gone or not there yet: get the latest
		// state so that the reflector makes progress.
		r.setResourceVersionUnavailable(true)
		r.relistAfter(err)
		r.countFullStateRequest(false)
		items, rv, paginated, err = r.listAll(ctx, metav1.ListOptions{ResourceVersion: r.relistResourceVersion()}, pageSize)
	}
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		r.relistAfter(err)
		if isRetriableWatchError(err) {
			r.noteUnreachable(ctx, err)
		}
		return fmt.Errorf("failed to list %s: %w", r.typeDescription, err)
	}
	// Pages in answer to a list at "0" mean the server does not serve lists
	// from its watch cache; later lists then need not avoid pagination.
	if options.ResourceVersion == "0" && paginated {
		r.paginatedResult = true
	}
	r.noteAnswered(ctx)
	r.setResourceVersionUnavailable(false)
	if err := r.replace(items, rv); err != nil {
		return fmt.Errorf("unable to sync list result: %w", err)
	}
	r.setLastSyncResourceVersion(rv)
	r.noteSynced()
	return nil
}

// listPageSize chooses the page size of a list at resourceVersion.
func (r *Reflector[T]) listPageSize(resourceVersion string) int64 {
	switch {
	case r.pageSize != 0:
		return r.pageSize
	case r.paginatedResult:
		return defaultPageSize
	case resourceVersion != "" && resourceVersion != "0":
		// An unpaginated list at a known resource version can be served by
		// the watch cache instead of etcd.
		return 0
	default:
		return defaultPageSize
	}
}

// listAll collects every page of a list. Like client-go's pager, when a
// continue token has expired it lists everything at the requested resource
// version in one call. It reports whether the result came in pages.
func (r *Reflector[T]) listAll(ctx context.Context, options metav1.ListOptions, pageSize int64) ([]T, string, bool, error) {
	if options.Limit == 0 {
		options.Limit = pageSize
	}
	requestedRV, requestedMatch := options.ResourceVersion, options.ResourceVersionMatch
	// reused collects the cached objects the ListerWatcher returned for the
	// items of the page being listed, in order (see cachedLookup).
	var reused []T
	if r.preparer != nil {
		ctx = withCachedLookup(ctx, cachedLookup[T](func(name ObjectName, resourceVersion string) (T, bool) {
			obj, ok := r.preparer.cachedListed(name, resourceVersion)
			if !ok && r.restored != nil {
				// A snapshot's object still current (see resumeOrList).
				obj, ok = r.restored.lookup(name, resourceVersion)
			}
			if ok {
				reused = append(reused, obj)
			}
			return obj, ok
		}))
	}
	list := func(options metav1.ListOptions) (*ListResult[T], error) {
		clear(reused) // of a failed call
		reused = reused[:0]
		return r.lw.List(ctx, options)
	}
	var items []T
	var listRV string
	paginated := false
	for {
		if err := ctx.Err(); err != nil {
			return nil, "", paginated, err
		}
		page, err := list(options)
		if err != nil {
			if !isExpiredContinue(err, options) {
				return nil, "", paginated, err
			}
			options.Limit, options.Continue = 0, ""
			options.ResourceVersion, options.ResourceVersionMatch = requestedRV, requestedMatch
			page, err = list(options)
			if err != nil {
				return nil, "", paginated, err
			}
			if page == nil {
				return nil, "", paginated, errNilListResult
			}
			return r.prepared(r.validListItems(ctx, nil, page.Items), 0, reused), page.ResourceVersion, paginated, nil
		}
		if page == nil {
			return nil, "", paginated, errNilListResult
		}
		if !paginated {
			listRV = page.ResourceVersion
			items = make([]T, 0, len(page.Items))
		}
		items = r.prepared(r.validListItems(ctx, items, page.Items), len(items), reused)
		if page.Continue == "" {
			return items, listRV, paginated, nil
		}
		// A continued list must not repeat the resource version.
		options.Continue = page.Continue
		options.ResourceVersion, options.ResourceVersionMatch = "", ""
		paginated = true
	}
}

// validListItems appends to dst the items that can be stored, dropping
// (logging and counting) nil and nameless ones.
func (r *Reflector[T]) validListItems(ctx context.Context, dst, items []T) []T {
	var zero T
	if dst == nil {
		dst = make([]T, 0, len(items))
	}
	for i, item := range items {
		if item == zero || item.GetName() == "" {
			r.counters.invalidListItems.Add(1)
			klog.FromContext(ctx).Error(nil, "Dropping a listed object without a name", "index", i, "nil", item == zero)
			continue
		}
		dst = append(dst, item)
	}
	return dst
}

// prepared has the store prepare items[from:], the items of the page just
// received, if it prepares listed objects (see listedPreparer), so that
// what it does not keep is let go before the next page arrives. reused are
// the cached objects the ListerWatcher returned for the page.
func (r *Reflector[T]) prepared(items []T, from int, reused []T) []T {
	if r.preparer == nil {
		return items
	}
	return items[:from+len(r.preparer.prepareListed(items[from:], reused))]
}

// replace hands a complete list to the store.
func (r *Reflector[T]) replace(items []T, resourceVersion string) error {
	if r.preparer == nil {
		return r.store.Replace(items, resourceVersion)
	}
	return r.preparer.replacePrepared(items, resourceVersion)
}
