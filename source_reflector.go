package informer

import (
	"context"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// reflectorSource is the source of an informer with one reflector.
type reflectorSource[T Object] struct {
	lw ListerWatcher[T]
	r  atomic.Pointer[Reflector[T]]
	// beforeRun, if set, prepares the reflector before it runs: a snapshot
	// restore gives it the objects and resource version to resume from.
	beforeRun func(klog.Logger, *Reflector[T])
}

var _ source[*metav1.PartialObjectMetadata] = (*reflectorSource[*metav1.PartialObjectMetadata])(nil)

func (s *reflectorSource[T]) run(ctx context.Context, logger klog.Logger, feed queueFeed[T], opts ReflectorOptions) {
	r := NewReflector(s.lw, feed, opts)
	s.r.Store(r)
	if s.beforeRun != nil {
		s.beforeRun(logger, r)
	}
	r.Run(ctx)
}

func (s *reflectorSource[T]) synced() bool                    { return true }
func (s *reflectorSource[T]) syncBlocked() <-chan struct{}    { return nil }
func (s *reflectorSource[T]) watches() int                    { return 0 }
func (s *reflectorSource[T]) listerWatcher() ListerWatcher[T] { return s.lw }

func (s *reflectorSource[T]) lastError() error {
	if r := s.r.Load(); r != nil {
		return r.lastError()
	}
	return nil
}

func (s *reflectorSource[T]) lastSyncResourceVersion() string {
	if r := s.r.Load(); r != nil {
		return r.LastSyncResourceVersion()
	}
	return ""
}

func (s *reflectorSource[T]) stats() ReflectorStats {
	if r := s.r.Load(); r != nil {
		return r.Stats()
	}
	return ReflectorStats{}
}

func (s *reflectorSource[T]) requestStats() ReflectorRequestStats {
	if r := s.r.Load(); r != nil {
		return r.RequestStats()
	}
	return ReflectorRequestStats{}
}

func (s *reflectorSource[T]) relister() (func(), error) {
	if r := s.r.Load(); r != nil {
		return r.requestRelist, nil
	}
	return nil, nil
}
