package informer

// ManagedFields is the path of an object's managed fields, the usual entry
// of DropFields ([RESTOptions], [InformerOptions], [FactoryOptions]):
// managed fields are often more than half of an object's bytes, and few
// controllers read them.
const ManagedFields = "metadata.managedFields"

// The paths of DropFields are compiled and applied by internal/wire
// (dropfields.go, drop.go, droptransport.go): an http.RoundTripper in
// front of the REST client that rewrites list bodies and watch events
// before they are decoded.

// dropFieldsFailures returns what lw's DropFields transport counted, or 0
// for a ListerWatcher without one.
func dropFieldsFailures[T Object](lw ListerWatcher[T]) int64 {
	d, _ := describe(lw)
	return d.drop.Failures()
}
