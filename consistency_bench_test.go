package informer

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// BenchmarkCheckConsistency measures a consistency check of 100,000 cached
// pods against a list that matches them, and the part of it that holds the
// cache's read lock (snapshot). The list is served from memory (listedLW),
// so what is measured is the check's own work, not the API server's or
// the decoding of its answer.
func BenchmarkCheckConsistency(b *testing.B) {
	const pods = 100_000
	lw := &listedLW{pods: benchPods(pods)}
	inf, err := NewInformer[*corev1.Pod](lw, InformerOptions[*corev1.Pod]{
		Indexers: map[string]IndexFunc[*corev1.Pod]{NamespaceIndex: MetaNamespaceIndexFunc[*corev1.Pod]},
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), klog.Background().V(10)))
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	if err := inf.WaitForResourceVersion(ctx, "1"); err != nil {
		b.Fatal(err)
	}
	b.Run("check", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			report, err := inf.CheckConsistency(ctx)
			if err != nil || !report.Consistent() || report.Checked != pods {
				b.Fatalf("report %+v, error %v", report, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/pods, "ns/object")
	})
	b.Run("snapshot", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if objs, _ := inf.indexer.listAtVersion(); len(objs) != pods {
				b.Fatal(len(objs))
			}
		}
	})
}
