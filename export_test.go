package informer

import (
	"io"
	"reflect"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubetyped/informer/internal/wire"
)

// ResourceOf returns the resource a ListerWatcher made by NewRESTListerWatcher,
// NewMetadataListerWatcher or NewDynamicListerWatcher lists and watches.
func ResourceOf[T Object](lw ListerWatcher[T]) schema.GroupVersionResource {
	return lw.(interface {
		Resource() schema.GroupVersionResource
	}).Resource()
}

// Cache returns the informer's cache, for tests that inspect it whole.
func (i *Informer[T]) Cache() *Indexer[T] { return i.indexer }

// MustNewInformer is NewInformer for options a test means to be valid: it
// fails tb otherwise. Internal and external tests share it.
func MustNewInformer[T Object](tb testing.TB, lw ListerWatcher[T], opts InformerOptions[T]) *Informer[T] {
	tb.Helper()
	inf, err := NewInformer(lw, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return inf
}

// DiffLarge is diffLarge, for external tests.
var DiffLarge = diffLarge

// ErrText is errText, for the tests of package informer_test.
var ErrText = errText

// capacity returns the number of elements the ring holds without growing.
func (r *ring[E]) capacity() int { return len(r.buf) }

// contains reports whether l is registered.
func (p *processor[T]) contains(l *listener[T]) bool {
	return slices.Contains(p.snapshot(), l)
}

// writeSnapshot is writeSnapshotPaced unpaced, for tests (Run's final
// save calls writeSnapshotPaced with no pacer).
func writeSnapshot[T Object](path string, header snapshotHeader, codec snapshotCodec[T], objects []T) (int64, error) {
	return writeSnapshotPaced(path, header, codec, objects, nil)
}

// encodeSnapshot is encodeSnapshotPaced unpaced.
func encodeSnapshot[T Object](w io.Writer, header snapshotHeader, codec snapshotCodec[T], objects []T) (int64, error) {
	return encodeSnapshotPaced(w, header, codec, objects, nil)
}

// snapshotScopeFor is the scope of an informer of T named name over a
// ListerWatcher that does not describe itself, listing resource.
func snapshotScopeFor[T Object](name string, resource schema.GroupVersionResource, transformID string) snapshotScope {
	cfg := resolveConfig(FactoryOptions{}, InformerOptions[T]{Name: name, Resource: resource, Snapshot: SnapshotOptions{TransformID: transformID}})
	scope, _ := newSnapshotScope(cfg, reflect.TypeFor[T](), nil)
	return scope
}

// DecodingWith returns a copy of lw decoding through table (see
// describedListerWatcher.decodingWith), or an error if lw cannot.
func DecodingWith[T Object](lw ListerWatcher[T], table *wire.InternTable) (ListerWatcher[T], error) {
	d, ok := lw.(describedListerWatcher[T])
	if !ok {
		return nil, checkDecodingWith(lwDescription{}, table)
	}
	return d.decodingWith(table)
}

// remove deletes the object stored under name and returns it (zero T and
// false if nothing was stored). Unlike Delete it has no object to take a
// resource version from, so the store's resource version is unchanged.
func (s *Indexer[T]) remove(name ObjectName) (old T, existed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.c.get(name)
	if id < 0 {
		return old, false, nil
	}
	return s.c.removeEntry(id), true, nil
}
