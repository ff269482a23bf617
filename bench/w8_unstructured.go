package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer/internal/benchkit"
	"github.com/kubetyped/informer/internal/crdtypes"
	"github.com/kubetyped/informer/internal/wire"
)

// W8's unstructured rows (shared/benchmarks.md): the W8 custom resources
// (internal/crdtypes' Workloads, about 11 KB each as JSON) decoded from
// their JSON, in list pages of w8UnstructuredPage as a server sends them, as
// *unstructured.Unstructured: by client-go's dynamic client's serializer,
// which its dynamic informer decodes with, and by ours, the serializer the
// dynamic ListerWatcher decodes with (wire.UnstructuredSerializer), by
// default (strings interned) and with sub-trees shared too (Deduplicate
// without a transform; crcache's default). Each side decodes every object
// into a fresh table, as a new informer does, and keeps what it decoded, as
// a cache does: the retained heap per object counts the table.

// w8UnstructuredPage is the number of objects in one list page.
const w8UnstructuredPage = 500

// w8UnstructuredSide is one decoder under test.
type w8UnstructuredSide struct {
	name string
	// newDecoder returns a decoder with nothing decoded yet.
	newDecoder func() k8sruntime.Decoder
}

// w8UnstructuredCost is what decoding every page cost one side once.
type w8UnstructuredCost struct {
	cpuPerObject, bytesPerObject, retainedPerObject float64
}

// runW8Unstructured measures W8's unstructured rows.
func runW8Unstructured(cfg config) ([]benchkit.Row, error) {
	pages, err := w8UnstructuredPages(cfg.w8Objects)
	if err != nil {
		return nil, err
	}
	clientGo, err := dynamicJSONSerializer()
	if err != nil {
		return nil, err
	}
	sides := []w8UnstructuredSide{
		{"client-go", func() k8sruntime.Decoder { return clientGo }},
		{"ours", func() k8sruntime.Decoder {
			return wire.NewUnstructuredSerializer(wire.NewUnstructuredDecoder(wire.NewInternTable()), clientGo)
		}},
		{"ours sharing", func() k8sruntime.Decoder {
			return wire.NewUnstructuredSerializer(wire.NewUnstructuredDecoder(wire.NewSubObjectSharingTable()), clientGo)
		}},
	}
	runs := make([][]w8UnstructuredCost, len(sides))
	for range cfg.count { // interleaved, so that load drifts hit every side
		for i, side := range sides {
			c, err := w8DecodeUnstructured(side.newDecoder(), pages, cfg.w8Objects)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", side.name, err)
			}
			runs[i] = append(runs[i], c)
		}
	}
	var rows []benchkit.Row
	for i, kase := range []string{"", "unstructured, ours by default (strings interned)", "unstructured, ours sharing sub-trees (Deduplicate; crcache's default)"} {
		if i == 0 {
			continue
		}
		for _, m := range []struct {
			metric string
			f      func(w8UnstructuredCost) float64
		}{
			{"CPU µs per decoded object (process, GC included)", func(c w8UnstructuredCost) float64 { return c.cpuPerObject }},
			{"bytes allocated per decoded object", func(c w8UnstructuredCost) float64 { return c.bytesPerObject }},
			{"retained heap B per cached object", func(c w8UnstructuredCost) float64 { return c.retainedPerObject }},
		} {
			rows = append(rows, newRow("W8", kase, m.metric, benchkit.MedianOf(runs[0], m.f), benchkit.MedianOf(runs[i], m.f)))
		}
	}
	return rows, nil
}

// w8DecodeUnstructured decodes every page with dec, keeping what it
// decoded until it has read the live heap, and returns the cost per object.
func w8DecodeUnstructured(dec k8sruntime.Decoder, pages [][]byte, objects int) (w8UnstructuredCost, error) {
	before := liveHeap()
	mem := readMemCounters()
	cpu, err := benchkit.CPUTime()
	if err != nil {
		return w8UnstructuredCost{}, err
	}
	lists := make([]*unstructured.UnstructuredList, len(pages))
	for i, page := range pages {
		lists[i] = &unstructured.UnstructuredList{}
		if _, _, err := dec.Decode(page, nil, lists[i]); err != nil {
			return w8UnstructuredCost{}, fmt.Errorf("page %d: %w", i, err)
		}
	}
	cpuAfter, err := benchkit.CPUTime()
	if err != nil {
		return w8UnstructuredCost{}, err
	}
	allocated := mem.since()
	after := liveHeap()
	n := float64(objects)
	decoded := 0
	for _, l := range lists {
		decoded += len(l.Items)
	}
	runtime.KeepAlive(lists)
	runtime.KeepAlive(dec)
	if decoded != objects {
		return w8UnstructuredCost{}, fmt.Errorf("decoded %d objects, want %d", decoded, objects)
	}
	return w8UnstructuredCost{
		cpuPerObject:      float64((cpuAfter-cpu)/time.Nanosecond) / 1e3 / n,
		bytesPerObject:    float64(allocated.bytes) / n,
		retainedPerObject: (float64(after) - float64(before)) / n,
	}, nil
}

// w8UnstructuredPages returns the JSON list bodies of n W8 workloads, in
// pages, with each item's kind and apiVersion as the server sends a custom
// resource's.
func w8UnstructuredPages(n int) ([][]byte, error) {
	items := crdtypes.New(n)
	var pages [][]byte
	for start := 0; start < n; start += w8UnstructuredPage {
		list := crdtypes.WorkloadList{Items: items[start:min(start+w8UnstructuredPage, n)]}
		list.APIVersion, list.Kind, list.ResourceVersion = crdtypes.GroupVersion.String(), "WorkloadList", "1"
		for i := range list.Items {
			list.Items[i].APIVersion, list.Items[i].Kind = list.APIVersion, "Workload"
		}
		b, err := json.Marshal(&list)
		if err != nil {
			return nil, fmt.Errorf("encoding W8 workloads: %w", err)
		}
		pages = append(pages, b)
	}
	return pages, nil
}

// dynamicJSONSerializer returns the JSON serializer of client-go's dynamic
// client: what its dynamic informer decodes lists and watch events with.
func dynamicJSONSerializer() (k8sruntime.Serializer, error) {
	cfg := dynamic.ConfigFor(&rest.Config{})
	info, ok := k8sruntime.SerializerInfoForMediaType(cfg.NegotiatedSerializer.SupportedMediaTypes(), k8sruntime.ContentTypeJSON)
	if !ok {
		return nil, fmt.Errorf("the dynamic client has no JSON serializer")
	}
	return info.Serializer, nil
}
