package main

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/kubetyped/informer/internal/benchkit"
	"github.com/kubetyped/informer/internal/crdtypes"
	"github.com/kubetyped/informer/internal/wire"
)

// W8 (shared/benchmarks.md): custom resources decoded from their real JSON
// bytes. cfg.w8Objects workloads of internal/crdtypes (a Kueue-like
// Workload, about 11 KB of JSON, replicas of 8 templates) are decoded as a
// REST client decodes them, once as list pages of 500 (a list, the
// reflector's default page size) and once one by one (the objects of watch
// events), keeping every decoded object as a cache would: CPU and bytes
// allocated per decoded object, and the heap the kept objects retain per
// object. client-go's side is apimachinery's JSON serializer, as client-go's
// typed REST client and informer decode; ours is the REST ListerWatcher's
// codec (internal/wire/json_typed_codec.go) with its default table
// (strings interned) and with sub-objects shared too (what an informer
// deduplicating without a transform, and crcache's default, use). Only
// decoding is measured: the bytes are encoded page by page outside the
// measured time and dropped before the retained heap is read.
//
// The unstructured rows (client-go's dynamic decoding against ours) are
// W8u's (w8_unstructured.go).

// crdPageSize is the number of objects of a list page.
const crdPageSize = 500

// w8Decoder is one side's decoder of W8.
type w8Decoder struct {
	name string
	// newDecoder returns a fresh decoder (and table) for one run.
	newDecoder func() k8sruntime.Decoder
}

// w8Scheme returns a scheme of the workloads' group version.
func w8Scheme() (*k8sruntime.Scheme, error) {
	scheme := k8sruntime.NewScheme()
	return scheme, crdtypes.AddToScheme(scheme)
}

// jsonDecoderOf returns the JSON decoder codecs gives a REST client of the
// workloads' group version.
func jsonDecoderOf(codecs k8sruntime.NegotiatedSerializer) k8sruntime.Decoder {
	d, err := k8sruntime.NewClientNegotiator(codecs, crdtypes.GroupVersion).Decoder(k8sruntime.ContentTypeJSON, nil)
	if err != nil {
		panic(fmt.Sprintf("W8: no JSON decoder: %v", err))
	}
	return d
}

// w8Decoders returns client-go's decoder and ours with each table.
func w8Decoders(scheme *k8sruntime.Scheme) (clientGo w8Decoder, ours []w8Decoder, err error) {
	typed := wire.NewTypedJSONTypes(scheme, reflect.TypeFor[*crdtypes.Workload](), reflect.TypeFor[*crdtypes.WorkloadList]())
	if typed == nil {
		return w8Decoder{}, nil, fmt.Errorf("W8: the typed JSON decoder cannot decode %v", reflect.TypeFor[crdtypes.Workload]())
	}
	clientGo = w8Decoder{name: "client-go typed", newDecoder: func() k8sruntime.Decoder {
		return jsonDecoderOf(serializer.NewCodecFactory(scheme).WithoutConversion())
	}}
	ours = []w8Decoder{
		{name: "ours default (typed JSON decoder, strings interned)", newDecoder: func() k8sruntime.Decoder {
			return jsonDecoderOf(wire.NewRESTCodecs(scheme, wire.NewInternTable(), typed))
		}},
		{name: "ours crcache defaults (sub-objects shared too)", newDecoder: func() k8sruntime.Decoder {
			return jsonDecoderOf(wire.NewRESTCodecs(scheme, wire.NewSubObjectSharingTable(), typed))
		}},
	}
	return clientGo, ours, nil
}

// w8Result is one measured run.
type w8Result struct {
	cpuPerObject, bytesPerObject, retainedPerObject float64
}

// runCustomResources measures W8.
func runCustomResources(cfg config) ([]benchkit.Row, error) {
	scheme, err := w8Scheme()
	if err != nil {
		return nil, err
	}
	clientGo, ours, err := w8Decoders(scheme)
	if err != nil {
		return nil, err
	}
	workloads := crdtypes.New(cfg.w8Objects)
	n := groupThousands(int64(len(workloads)))
	var rows []benchkit.Row
	for _, how := range []struct {
		name string
		list bool
	}{{"list pages of 500", true}, {"watch event objects one by one", false}} {
		runs := make([][]w8Result, 1+len(ours))
		for range cfg.count {
			for i, d := range append([]w8Decoder{clientGo}, ours...) {
				r, err := measureCRDDecoding(d.newDecoder(), workloads, how.list)
				if err != nil {
					return nil, fmt.Errorf("W8 %s, %s: %w", d.name, how.name, err)
				}
				runs[i] = append(runs[i], r)
			}
		}
		for i, d := range ours {
			kase := n + " workloads (~11 KB JSON), " + how.name + "; " + d.name
			for _, m := range []struct {
				metric string
				f      func(w8Result) float64
			}{
				{"CPU/object (ns)", func(r w8Result) float64 { return r.cpuPerObject }},
				{"B allocated/object", func(r w8Result) float64 { return r.bytesPerObject }},
				{"retained heap/object (B)", func(r w8Result) float64 { return r.retainedPerObject }},
			} {
				rows = append(rows, newRow("W8", kase, m.metric, benchkit.MedianOf(runs[0], m.f), benchkit.MedianOf(runs[1+i], m.f)))
			}
		}
	}
	return rows, nil
}

// measureCRDDecoding decodes workloads with d, as list pages or one by
// one, keeping what it decodes, and returns the process CPU time and bytes
// allocated per object while decoding, and the heap the decoded objects
// retain per object.
func measureCRDDecoding(d k8sruntime.Decoder, workloads []crdtypes.Workload, list bool) (w8Result, error) {
	before := liveHeap()
	kept := make([]*crdtypes.Workload, 0, len(workloads))
	var cpu time.Duration
	var allocated uint64
	var ms runtime.MemStats
	for start := 0; start < len(workloads); start += crdPageSize {
		page := workloads[start:min(len(workloads), start+crdPageSize)]
		bodies, err := encodeCRDPage(page, list)
		if err != nil {
			return w8Result{}, err
		}
		runtime.ReadMemStats(&ms)
		allocBefore := ms.TotalAlloc
		cpuBefore, err := benchkit.CPUTime()
		if err != nil {
			return w8Result{}, err
		}
		for _, body := range bodies {
			var into k8sruntime.Object
			if list {
				into = &crdtypes.WorkloadList{}
			}
			obj, _, err := d.Decode(body, nil, into)
			if err != nil {
				return w8Result{}, err
			}
			switch obj := obj.(type) {
			case *crdtypes.WorkloadList:
				for i := range obj.Items {
					kept = append(kept, &obj.Items[i])
				}
			case *crdtypes.Workload:
				kept = append(kept, obj)
			default:
				return w8Result{}, fmt.Errorf("decoded a %T", obj)
			}
		}
		cpuAfter, err := benchkit.CPUTime()
		if err != nil {
			return w8Result{}, err
		}
		runtime.ReadMemStats(&ms)
		cpu += cpuAfter - cpuBefore
		allocated += ms.TotalAlloc - allocBefore
	}
	if len(kept) != len(workloads) {
		return w8Result{}, fmt.Errorf("decoded %d workloads, want %d", len(kept), len(workloads))
	}
	retained := float64(liveHeap()) - float64(before)
	runtime.KeepAlive(kept)
	objects := float64(len(workloads))
	return w8Result{
		cpuPerObject:      float64(cpu.Nanoseconds()) / objects,
		bytesPerObject:    float64(allocated) / objects,
		retainedPerObject: retained / objects,
	}, nil
}

// encodeCRDPage returns the JSON of page as the server sends it: one list
// body, or each object (with its kind) as a watch event carries it.
func encodeCRDPage(page []crdtypes.Workload, list bool) ([][]byte, error) {
	typeMeta := metav1.TypeMeta{APIVersion: crdtypes.GroupVersion.String(), Kind: "Workload"}
	if list {
		l := crdtypes.WorkloadList{TypeMeta: metav1.TypeMeta{APIVersion: typeMeta.APIVersion, Kind: "WorkloadList"}, Items: make([]crdtypes.Workload, len(page))}
		l.ResourceVersion = "30000000"
		for i := range page {
			l.Items[i] = page[i]
			l.Items[i].TypeMeta = typeMeta
		}
		body, err := json.Marshal(&l)
		return [][]byte{body}, err
	}
	bodies := make([][]byte, len(page))
	for i := range page {
		w := page[i]
		w.TypeMeta = typeMeta
		body, err := json.Marshal(&w)
		if err != nil {
			return nil, err
		}
		bodies[i] = body
	}
	return bodies, nil
}
