package informerprom

import (
	"errors"
	"slices"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubetyped/informer"
)

// Labels of the series.
var (
	informerLabels = []string{"informer", "resource"}
	handlerLabels  = []string{"informer", "handler"}
)

func informerDesc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(append([]string(nil), informerLabels...), extra...), nil)
}

func handlerDesc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, handlerLabels, nil)
}

// The series read from informers and handlers when the registry collects.
var (
	queueDepthDesc = informerDesc("informer_queue_depth",
		"Records (watch events, lists, resyncs, bookmarks) waiting to be applied to the informer's cache.")
	syncedDesc = informerDesc("informer_synced",
		"1 once the informer's first complete list has been applied to its cache, else 0.")
	storeResourceVersionDesc = informerDesc("informer_store_resource_version",
		"Resource version of the cache's last write or bookmark, as a number; absent while it is empty or not numeric.")
	transformErrorsDesc = informerDesc("informer_transform_errors_total",
		"Objects dropped because the informer's transform failed.")
	storeErrorsDesc = informerDesc("informer_store_errors_total",
		"Events dropped because the cache rejected them (an index function failed).")
	listsDesc = informerDesc("informer_lists_total",
		"Requests for the resource's full state: method is list or stream (streaming list); reason is initial, expired (410 Gone or too large resource version) or error.",
		"method", "reason")
	watchRestartsDesc = informerDesc("informer_watch_restarts_total",
		"Watches started again from the last resource version, without listing, after a watch ended or could not be started.")
	droppedEventsDesc = informerDesc("informer_watch_events_dropped_total",
		"Watch events the reflector dropped: reason is wrong_type, nil_object, nameless, unknown_type or store_error.",
		"reason")
	errorEventsDesc = informerDesc("informer_watch_error_events_total",
		"Watch Error events received; each ends its watch.")
	invalidListItemsDesc = informerDesc("informer_invalid_list_items_total",
		"Listed objects dropped because they were nil or had no name.")
	consistencyChecksDesc = informerDesc("informer_consistency_checks_total",
		"Consistency checks of the cache against the server: result is compared (the check listed and compared), failed (the list failed) or repaired (differences made the informer relist).",
		"result")
	consistencyDifferencesDesc = informerDesc("informer_consistency_differences_total",
		"Objects on which consistency checks found the cache and the server different: kind is missing (on the server only), extra (in the cache only) or stale (different resource versions).",
		"kind")
	dropFieldsFailuresDesc = informerDesc("informer_drop_fields_failures_total",
		"List responses and watch events from which the fields of DropFields could not be dropped (unparsable bytes, passed on whole).")
	shardWatchesDesc = informerDesc("informer_shard_watches",
		"List+watch streams of a dynamic shard, one per range gained since they were last merged; 0 for other informers.")

	pendingDesc = handlerDesc("informer_handler_pending",
		"Notifications queued for the handler and not yet delivered.")
	deliveredDesc = handlerDesc("informer_handler_delivered_total",
		"Handler calls that returned, including calls that panicked.")
	panicsDesc = handlerDesc("informer_handler_panics_total",
		"Handler calls that panicked (and were recovered).")
	coalescedDesc = handlerDesc("informer_handler_coalesced_total",
		"Notifications merged into a pending one because the handler's buffer was full (OverflowCoalesce).")
	handlerDroppedDesc = handlerDesc("informer_handler_dropped_total",
		"Notifications discarded because the handler was removed or the informer stopped before delivering them.")
)

// The series of fleets, labelled by fleet and resource.
var (
	fleetLabels       = []string{"fleet", "resource"}
	fleetClustersDesc = prometheus.NewDesc("informer_fleet_clusters",
		"Clusters of the fleet in each state: Synced, Syncing, Failed (not synced within the fleet's SyncTimeout; still trying) or Elsewhere (run by another replica of the fleet's group).",
		append(slices.Clone(fleetLabels), "state"), nil)
	fleetClusterFailedDesc = prometheus.NewDesc("informer_fleet_cluster_failed",
		"1 while the cluster is failed for the fleet's readiness (not synced within SyncTimeout), else 0.",
		append(slices.Clone(fleetLabels), "cluster"), nil)
	fleetClusterErrorDesc = prometheus.NewDesc("informer_fleet_cluster_error",
		"1 for each cluster whose last list or watch failed (until one succeeds); reason is the server's status reason (Forbidden, Unauthorized, NotFound, ...), Unknown for a server error without one, or Transport for a request the server did not answer.",
		append(slices.Clone(fleetLabels), "cluster", "reason"), nil)
)

var pulledDescs = []*prometheus.Desc{
	fleetClustersDesc, fleetClusterFailedDesc, fleetClusterErrorDesc,
	queueDepthDesc, syncedDesc, storeResourceVersionDesc, transformErrorsDesc, storeErrorsDesc,
	listsDesc, watchRestartsDesc, droppedEventsDesc, errorEventsDesc, invalidListItemsDesc,
	consistencyChecksDesc, consistencyDifferencesDesc, dropFieldsFailuresDesc, shardWatchesDesc, pendingDesc, deliveredDesc, panicsDesc, coalescedDesc, handlerDroppedDesc,
}

// collector is the Provider seen as a prometheus.Collector.
type collector Provider

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range pulledDescs {
		ch <- d
	}
	c.batchDurations.Describe(ch)
}

// Collect implements prometheus.Collector. It reads every registered
// informer and handler; the reads run outside the provider's lock, so an
// informer being added or removed meanwhile waits for nothing.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	type handlerRead struct {
		informer, name string
		read           func() informer.HandlerStats
	}
	c.mu.Lock()
	fleets := make([]*fleetEntry, 0, len(c.fleets))
	for _, e := range c.fleets {
		fleets = append(fleets, e)
	}
	informers := make([]*informerEntry, 0, len(c.informers))
	var handlers []handlerRead
	for _, e := range c.informers {
		informers = append(informers, e)
		for _, h := range e.handlers {
			handlers = append(handlers, handlerRead{e.name, h.name, h.read})
		}
	}
	c.mu.Unlock()

	for _, e := range fleets {
		collectFleet(ch, e.name, e.resource, e.read())
	}
	for _, e := range informers {
		collectInformer(ch, e.name, e.resource, e.read())
	}
	for _, h := range handlers {
		collectHandler(ch, h.informer, h.name, h.read())
	}
	c.batchDurations.Collect(ch)
}

// metricSink sends constant metrics to a collection.
type metricSink struct {
	ch     chan<- prometheus.Metric
	labels []string
}

func (s metricSink) send(desc *prometheus.Desc, kind prometheus.ValueType, value float64, extra ...string) {
	m, err := prometheus.NewConstMetric(desc, kind, value, append(append([]string(nil), s.labels...), extra...)...)
	if err != nil {
		m = prometheus.NewInvalidMetric(desc, err)
	}
	s.ch <- m
}

func collectFleet(ch chan<- prometheus.Metric, name, resource string, s informer.FleetStats) {
	out := metricSink{ch: ch, labels: []string{name, resource}}
	for state, n := range map[informer.ClusterState]int{
		informer.ClusterSynced: s.Synced, informer.ClusterSyncing: s.Syncing,
		informer.ClusterFailed: s.Failed, informer.ClusterElsewhere: s.Elsewhere,
	} {
		out.send(fleetClustersDesc, prometheus.GaugeValue, float64(n), string(state))
	}
	for _, c := range s.Clusters {
		failed := 0.0
		if c.State == informer.ClusterFailed {
			failed = 1
		}
		out.send(fleetClusterFailedDesc, prometheus.GaugeValue, failed, c.Name)
		if c.LastError != nil {
			out.send(fleetClusterErrorDesc, prometheus.GaugeValue, 1, c.Name, errorReason(c.LastError))
		}
	}
}

// errorReason is the reason label of a cluster's last error.
func errorReason(err error) string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return "Transport"
	}
	if reason := status.Status().Reason; reason != "" {
		return string(reason)
	}
	return "Unknown"
}

func collectInformer(ch chan<- prometheus.Metric, name, resource string, s informer.InformerSnapshot) {
	out := metricSink{ch: ch, labels: []string{name, resource}}
	out.send(queueDepthDesc, prometheus.GaugeValue, float64(s.Stats.Queued))
	synced := 0.0
	if s.Synced {
		synced = 1
	}
	out.send(syncedDesc, prometheus.GaugeValue, synced)
	if rv, err := strconv.ParseUint(s.StoreResourceVersion, 10, 64); err == nil {
		out.send(storeResourceVersionDesc, prometheus.GaugeValue, float64(rv))
	}
	out.send(transformErrorsDesc, prometheus.CounterValue, float64(s.Stats.TransformErrors))
	out.send(storeErrorsDesc, prometheus.CounterValue, float64(s.Stats.StoreErrors))
	for _, method := range []struct {
		name    string
		reasons informer.ListReasons
	}{{"list", s.Requests.Lists}, {"stream", s.Requests.StreamingLists}} {
		out.send(listsDesc, prometheus.CounterValue, float64(method.reasons.Initial), method.name, "initial")
		out.send(listsDesc, prometheus.CounterValue, float64(method.reasons.Expired), method.name, "expired")
		out.send(listsDesc, prometheus.CounterValue, float64(method.reasons.Error), method.name, "error")
	}
	out.send(watchRestartsDesc, prometheus.CounterValue, float64(s.Requests.WatchRestarts))
	r := s.Reflector
	out.send(droppedEventsDesc, prometheus.CounterValue, float64(r.WrongTypeEvents), "wrong_type")
	out.send(droppedEventsDesc, prometheus.CounterValue, float64(r.NilObjectEvents), "nil_object")
	out.send(droppedEventsDesc, prometheus.CounterValue, float64(r.NamelessEvents), "nameless")
	out.send(droppedEventsDesc, prometheus.CounterValue, float64(r.UnknownTypeEvents), "unknown_type")
	out.send(droppedEventsDesc, prometheus.CounterValue, float64(r.StoreErrors), "store_error")
	out.send(errorEventsDesc, prometheus.CounterValue, float64(r.ErrorEvents))
	out.send(invalidListItemsDesc, prometheus.CounterValue, float64(r.InvalidListItems))
	c := s.Stats.Consistency
	out.send(consistencyChecksDesc, prometheus.CounterValue, float64(c.Checks), "compared")
	out.send(consistencyChecksDesc, prometheus.CounterValue, float64(c.Failures), "failed")
	out.send(consistencyChecksDesc, prometheus.CounterValue, float64(c.Repairs), "repaired")
	out.send(consistencyDifferencesDesc, prometheus.CounterValue, float64(c.Missing), "missing")
	out.send(consistencyDifferencesDesc, prometheus.CounterValue, float64(c.Extra), "extra")
	out.send(consistencyDifferencesDesc, prometheus.CounterValue, float64(c.Stale), "stale")
	out.send(dropFieldsFailuresDesc, prometheus.CounterValue, float64(s.Stats.DropFieldsFailures))
	out.send(shardWatchesDesc, prometheus.GaugeValue, float64(s.Stats.ShardWatches))
}

func collectHandler(ch chan<- prometheus.Metric, informerName, name string, s informer.HandlerStats) {
	out := metricSink{ch: ch, labels: []string{informerName, name}}
	out.send(pendingDesc, prometheus.GaugeValue, float64(s.Pending))
	out.send(deliveredDesc, prometheus.CounterValue, float64(s.Delivered))
	out.send(panicsDesc, prometheus.CounterValue, float64(s.Panics))
	out.send(coalescedDesc, prometheus.CounterValue, float64(s.Coalesced))
	out.send(handlerDroppedDesc, prometheus.CounterValue, float64(s.Dropped))
}
