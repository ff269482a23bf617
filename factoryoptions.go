package informer

import "time"

// InformerOption configures the informer that [For] or [ForResource]
// creates. Options other than [WithIndexers] only apply on the call that
// creates the informer.
type InformerOption[T Object] func(*informerSettings[T])

// informerSettings collects the options of one For or ForResource call.
type informerSettings[T Object] struct {
	resync        *time.Duration
	transform     TransformFunc[T]
	indexers      Indexers[T]
	name          string
	resource      string
	clusterScoped bool
	// creationOnly names the options given that only apply when the
	// informer is created.
	creationOnly []string
}

func collectInformerOptions[T Object](opts []InformerOption[T]) informerSettings[T] {
	var s informerSettings[T]
	for _, opt := range opts {
		if opt != nil {
			opt(&s)
		}
	}
	return s
}

// WithResync sets the informer's default handler resync period, instead of
// FactoryOptions.DefaultResync; 0 means no resync.
func WithResync[T Object](period time.Duration) InformerOption[T] {
	return func(s *informerSettings[T]) {
		s.resync = &period
		s.creationOnly = append(s.creationOnly, "WithResync")
	}
}

// WithTransform sets the informer's transform; it runs after
// FactoryOptions.Transform.
func WithTransform[T Object](transform TransformFunc[T]) InformerOption[T] {
	return func(s *informerSettings[T]) {
		s.transform = transform
		s.creationOnly = append(s.creationOnly, "WithTransform")
	}
}

// WithIndexers adds indexes to the informer's cache. Unlike the other
// options it also applies to an informer that already exists, started or
// not; adding an index name that exists is an error.
func WithIndexers[T Object](indexers Indexers[T]) InformerOption[T] {
	return func(s *informerSettings[T]) {
		if s.indexers == nil {
			s.indexers = Indexers[T]{}
		}
		for name, index := range indexers {
			s.indexers[name] = index
		}
	}
}

// WithInformerName sets the informer's name in logs, instead of the
// factory's name followed by the resource.
func WithInformerName[T Object](name string) InformerOption[T] {
	return func(s *informerSettings[T]) {
		s.name = name
		s.creationOnly = append(s.creationOnly, "WithInformerName")
	}
}

// WithResourceName sets the plural resource name a typed informer ([For])
// lists and watches, instead of the guess from its kind (see
// [RESTOptions].Resource). Use it for a CRD whose plural is irregular.
func WithResourceName[T Object](resource string) InformerOption[T] {
	return func(s *informerSettings[T]) {
		s.resource = resource
		s.creationOnly = append(s.creationOnly, "WithResourceName")
	}
}

// WithClusterScope makes the informer list and watch across all namespaces
// whatever FactoryOptions.Namespace says, as a cluster-scoped resource
// (nodes, namespaces, a cluster-scoped CRD) needs in a namespaced factory.
func WithClusterScope[T Object]() InformerOption[T] {
	return func(s *informerSettings[T]) {
		s.clusterScoped = true
		s.creationOnly = append(s.creationOnly, "WithClusterScope")
	}
}
