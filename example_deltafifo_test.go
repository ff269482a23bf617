package informer_test

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubetyped/informer"
	"github.com/kubetyped/informer/informertest"
)

// A DeltaFIFO between a producer (here the calls a Reflector would make)
// and a consumer that keeps an Indexer up to date. The Indexer is also the
// queue's known objects, so a relist can tell which objects went missing.
func ExampleDeltaFIFO() {
	pod := func(name, resourceVersion string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: resourceVersion}}
	}
	store := informer.NewIndexer[*corev1.Pod](nil)
	queue := informer.NewDeltaFIFO(informer.DeltaFIFOOptions[*corev1.Pod]{
		KnownObjects:          store,
		EmitDeltaTypeReplaced: true,
	})

	// Pop calls apply with the queue locked, so the store and the queue
	// never disagree about which objects are known.
	apply := func(deltas []informer.Delta[*corev1.Pod], isInInitialList bool) error {
		for _, d := range deltas {
			fmt.Printf("%-8s %s rv=%s finalStateUnknown=%v initial=%v\n",
				d.Type, informer.KeyOf(d.Object), d.Object.ResourceVersion, d.FinalStateUnknown, isInInitialList)
			var err error
			if d.Type == informer.DeltaDeleted {
				err = store.Delete(d.Object)
			} else {
				err = store.Update(d.Object)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	consume := func() {
		for {
			_, err := queue.Pop(context.Background(), apply)
			if errors.Is(err, informer.ErrFIFOClosed) {
				return
			}
			if err != nil {
				fmt.Println("error:", err)
			}
		}
	}
	produce := func(err error) {
		if err != nil {
			fmt.Println("error:", err)
		}
	}

	// The initial list, then watch events: b's two changes are popped
	// together, in b's place in line.
	produce(queue.Replace([]*corev1.Pod{pod("a", "1"), pod("b", "1")}, "1"))
	produce(queue.Update(pod("b", "2")))
	produce(queue.Add(pod("c", "3")))
	produce(queue.Delete(pod("b", "4")))
	// A relist that misses c: its deletion was not watched.
	produce(queue.Replace([]*corev1.Pod{pod("a", "1")}, "5"))
	queue.Close() // Pop returns ErrFIFOClosed once the queue is empty
	consume()
	fmt.Println("synced:", queue.HasSynced(), "stored:", store.ListKeys())

	// Output:
	// Replaced default/a rv=1 finalStateUnknown=false initial=true
	// Replaced default/a rv=1 finalStateUnknown=false initial=true
	// Replaced default/b rv=1 finalStateUnknown=false initial=true
	// Updated  default/b rv=2 finalStateUnknown=false initial=true
	// Deleted  default/b rv=4 finalStateUnknown=false initial=true
	// Added    default/c rv=3 finalStateUnknown=false initial=false
	// Deleted  default/c rv=3 finalStateUnknown=true initial=false
	// synced: true stored: [default/a]
}

// A Reflector fills a DeltaFIFO from a ListerWatcher (here the scripted fake
// of package informertest) and a consumer pops the deltas into an Indexer:
// client-go's classic informer loop, typed.
func ExampleReflector() {
	pod := func(name, resourceVersion string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: resourceVersion}}
	}
	lw := informertest.NewFakeListerWatcher[*corev1.Pod]()
	lw.SetList("5", pod("a", "5"))
	store := informer.NewIndexer[*corev1.Pod](nil)
	queue := informer.NewDeltaFIFO(informer.DeltaFIFOOptions[*corev1.Pod]{KnownObjects: store})
	reflector := informer.NewReflector[*corev1.Pod](lw, queue, informer.ReflectorOptions{})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		reflector.Run(ctx)
	}()
	pop := func() {
		_, err := queue.Pop(ctx, func(deltas []informer.Delta[*corev1.Pod], isInInitialList bool) error {
			for _, d := range deltas {
				fmt.Printf("%s %s rv=%s initial=%v\n", d.Type, informer.KeyOf(d.Object), d.Object.ResourceVersion, isInInitialList)
				if err := store.Update(d.Object); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			fmt.Println(err)
		}
	}
	pop() // the list
	if err := lw.Modify(ctx, pod("a", "6")); err != nil {
		fmt.Println(err)
	}
	pop() // the watch event
	cancel()
	<-done
	queue.Close()
	fmt.Println(store.ListKeys(), reflector.LastSyncResourceVersion())
	// Output:
	// Sync default/a rv=5 initial=true
	// Updated default/a rv=6 initial=false
	// [default/a] 6
}
