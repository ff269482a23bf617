package informer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Consistency checks: a resync only replays the cache, so it cannot find
// an event the informer never received. A check lists the resource from the
// server at exactly the resource version the cache has reached, and compares
// the keys and resource versions of both.

// ConsistencyCheckOptions configures an informer's consistency checks (see
// [Informer.CheckConsistency]). The zero value checks on demand only and
// repairs nothing.
type ConsistencyCheckOptions struct {
	// Period, if positive, runs a check every Period while the informer
	// runs and has synced. Each check lists the whole resource from the API
	// server: a period of minutes suits most resources.
	Period time.Duration
	// Repair makes a check that finds differences relist the resource, so
	// that the cache is replaced with the server's state and the handlers
	// are told of the differences (as after any relist: missing objects
	// are added, extra ones deleted with FinalStateUnknown, stale ones
	// updated).
	Repair bool
	// Timeout bounds each periodic check, its list included: a check still
	// running then fails (and counts in Failures), and the next one runs at
	// its time. Zero (or negative) means Period, at most defaultConsistencyTimeout (5
	// minutes); it does not apply to CheckConsistency, which is bounded by
	// its context.
	Timeout time.Duration
}

// defaultConsistencyTimeout is the longest default Timeout of a periodic
// check: listing 100,000 objects in pages of 500 from etcd takes well under
// a minute, so a check still listing after 5 minutes is stuck.
const defaultConsistencyTimeout = 5 * time.Minute

// timeout returns the bound of each periodic check.
func (o ConsistencyCheckOptions) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return min(o.Period, defaultConsistencyTimeout)
}

// ConsistencyReport is the result of a consistency check: the keys
// ("namespace/name", sorted) on which the cache and the server differed.
type ConsistencyReport struct {
	// ResourceVersion is the resource version the cache had reached and at
	// which the server was listed.
	ResourceVersion string
	// Checked is the number of cached objects compared.
	Checked int
	// Missing are on the server but not in the cache (a missed add).
	Missing []string
	// Extra are in the cache but not on the server (a missed delete).
	Extra []string
	// Stale are in both with different resource versions (a missed
	// update).
	Stale []string
	// Repaired says that a relist was requested to repair the differences
	// ([ConsistencyCheckOptions].Repair); it runs in the background.
	Repaired bool
}

// Consistent reports whether the check found no difference.
func (r ConsistencyReport) Consistent() bool {
	return len(r.Missing) == 0 && len(r.Extra) == 0 && len(r.Stale) == 0
}

// ConsistencyStats count an informer's consistency checks, in
// [InformerStats].
type ConsistencyStats struct {
	// Checks counts the checks that compared the cache with the server.
	Checks int64
	// Failures counts the checks that could not compare (the list failed).
	Failures int64
	// Missing, Extra and Stale add up the differences the checks found (see
	// [ConsistencyReport]); an object missed for several checks counts in
	// each.
	Missing, Extra, Stale int64
	// Repairs counts the relists requested to repair differences.
	Repairs int64
}

// consistencyCounters holds ConsistencyStats as atomics.
type consistencyCounters struct {
	checks, failures, missing, extra, stale, repairs atomic.Int64
}

func (c *consistencyCounters) load() ConsistencyStats {
	return ConsistencyStats{
		Checks: c.checks.Load(), Failures: c.failures.Load(),
		Missing: c.missing.Load(), Extra: c.extra.Load(), Stale: c.stale.Load(),
		Repairs: c.repairs.Load(),
	}
}

// errDynamicShard is returned by a check of an informer with a dynamic
// shard: each of its reflectors has reached its own resource version, so no
// single list can be compared with its cache.
var errDynamicShard = errors.New("consistency checks are not supported with a dynamic shard (Shard.Group): its cache has no single resource version to list at")

// errNotSynced is returned by a check of an informer that is not running
// or has not synced: its cache has no state to compare.
var errNotSynced = errors.New("the informer is not running or has not synced")

// errEndlessList is returned by a check whose list does not end: the
// server keeps returning continue tokens.
var errEndlessList = errors.New("the server's pagination does not end")

// consistencyPageSize is the page size of a check's list.
const consistencyPageSize = 500

// maxConsistencyPages returns the most pages a check lists for a cache of
// cached objects before it gives up: four times the pages the cache would
// fill, plus 100, generous for a server that returns short pages or holds
// objects the cache lacks, but a bound for one whose pagination never ends.
func maxConsistencyPages(cached int) int {
	return 100 + 4*(cached/consistencyPageSize+1)
}

// maxLoggedKeys bounds the keys of each kind a check logs.
const maxLoggedKeys = 10

// consistencyCheck is what a check needs of its informer, which makes it
// (Informer.consistencyCheck): the cache, the source that lists and
// relists, and where to count.
type consistencyCheck[T Object] struct {
	// name describes the informer in errors.
	name     string
	informer interface {
		HasSynced() bool
		IsStopped() bool
	}
	source source[T]
	cache  *Indexer[T]
	// repair is ConsistencyCheckOptions.Repair.
	repair   bool
	counters *consistencyCounters
}

// run is the informer's CheckConsistency, logging to logger.
func (c consistencyCheck[T]) run(ctx context.Context, logger klog.Logger) (ConsistencyReport, error) {
	relist, err := c.source.relister()
	if err != nil {
		return ConsistencyReport{}, fmt.Errorf("%s: consistency check: %w", c.name, err)
	}
	if relist == nil || c.informer.IsStopped() || !c.informer.HasSynced() {
		return ConsistencyReport{}, fmt.Errorf("%s: consistency check: %w", c.name, errNotSynced)
	}
	cached, rv := c.cache.listAtVersion()
	if rv == "" {
		return ConsistencyReport{}, fmt.Errorf("%s: consistency check: %w", c.name, errNotSynced)
	}
	report := ConsistencyReport{ResourceVersion: rv, Checked: len(cached)}
	// Cached objects are never modified, so reading them without the lock
	// is safe.
	cachedRV := make(map[ObjectName]string, len(cached))
	for _, obj := range cached {
		cachedRV[NameOf(obj)] = obj.GetResourceVersion()
	}
	options := metav1.ListOptions{
		ResourceVersion:      rv,
		ResourceVersionMatch: metav1.ResourceVersionMatchExact,
		Limit:                consistencyPageSize,
	}
	// A server whose pagination never ends (a continue token seen before,
	// or more pages than the bound) fails the check instead of holding it
	// until ctx ends, which for CheckConsistency may be never.
	seenContinue := map[string]bool{}
	maxPages := maxConsistencyPages(len(cached))
	for pages := 1; ; pages++ {
		page, err := c.source.listerWatcher().List(ctx, options)
		switch {
		case err != nil:
		case page == nil:
			err = errNilListResult
		case page.Continue != "" && seenContinue[page.Continue]:
			err = fmt.Errorf("%w: page %d repeats the continue token %q", errEndlessList, pages, page.Continue)
		case page.Continue != "" && pages >= maxPages:
			err = fmt.Errorf("%w: still not done after %d pages, for a cache of %d objects", errEndlessList, pages, len(cached))
		}
		if err != nil {
			c.counters.failures.Add(1)
			return ConsistencyReport{}, fmt.Errorf("%s: consistency check: listing at resource version %s: %w", c.name, rv, err)
		}
		seenContinue[page.Continue] = true
		var zero T
		for _, obj := range page.Items {
			if obj == zero {
				continue
			}
			name := NameOf(obj)
			crv, ok := cachedRV[name]
			switch {
			case !ok:
				report.Missing = append(report.Missing, name.String())
			case crv != obj.GetResourceVersion():
				report.Stale = append(report.Stale, name.String())
			}
			delete(cachedRV, name)
		}
		if page.Continue == "" {
			break
		}
		options.Continue = page.Continue
		options.ResourceVersion, options.ResourceVersionMatch = "", ""
	}
	for name := range cachedRV {
		report.Extra = append(report.Extra, name.String())
	}
	slices.Sort(report.Missing)
	slices.Sort(report.Extra)
	slices.Sort(report.Stale)

	counters := c.counters
	counters.checks.Add(1)
	counters.missing.Add(int64(len(report.Missing)))
	counters.extra.Add(int64(len(report.Extra)))
	counters.stale.Add(int64(len(report.Stale)))
	if report.Consistent() {
		logger.V(2).Info("The cache matches the server", "resourceVersion", rv, "objects", report.Checked)
		return report, nil
	}
	if c.repair {
		counters.repairs.Add(1)
		relist()
		report.Repaired = true
	}
	logger.Info("Warning: the cache differs from the server", "resourceVersion", rv, "objects", report.Checked,
		"missing", len(report.Missing), "extra", len(report.Extra), "stale", len(report.Stale),
		"missingKeys", firstKeys(report.Missing), "extraKeys", firstKeys(report.Extra), "staleKeys", firstKeys(report.Stale),
		"repair", report.Repaired)
	return report, nil
}

// firstKeys joins the first maxLoggedKeys keys, for a log line.
func firstKeys(keys []string) string {
	if len(keys) <= maxLoggedKeys {
		return strings.Join(keys, ",")
	}
	return strings.Join(keys[:maxLoggedKeys], ",") + fmt.Sprintf(",... (%d more)", len(keys)-maxLoggedKeys)
}

// runPeriodic checks the cache every period of clk until ctx is done,
// each check bounded by timeout. Errors are logged; a check before the
// informer synced is skipped.
func (c consistencyCheck[T]) runPeriodic(ctx context.Context, logger klog.Logger, clk clock.WithTicker, period, timeout time.Duration) {
	ticker := clk.NewTicker(period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
		if !c.informer.HasSynced() {
			continue
		}
		checkCtx, cancel := context.WithTimeoutCause(ctx, timeout,
			fmt.Errorf("the consistency check took longer than its timeout, %v (ConsistencyCheckOptions.Timeout)", timeout))
		_, err := c.run(checkCtx, logger)
		if err != nil && checkCtx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("%w: %w", err, context.Cause(checkCtx))
		}
		cancel()
		if err != nil && ctx.Err() == nil {
			logger.Info("Warning: consistency check failed", "err", err)
		}
	}
}
