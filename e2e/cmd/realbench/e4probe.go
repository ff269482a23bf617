package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"runtime"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/kubetyped/informer/e2e/internal/cluster"
	"github.com/kubetyped/informer/internal/benchkit"
)

// runE4Probe measures, on the cluster's pods, what each way of telling a
// restored informer that its resumed watch has caught up with the
// server's current resource version costs (docs/restart.md, "How a
// resumed watch learns it has caught up"):
//
//   - a watch resumed with a short timeout (3 s), which kube-apiserver's
//     watch cache sends a bookmark 2 s before its deadline: the time from
//     the watch's start to that bookmark, and whether it carries a
//     version at or past the one a consistent list read just before;
//   - a consistent list of the pods' metadata only (PartialObjectMetadata,
//     protobuf), in one piece and in pages of 500 asking for gzip, and in
//     pages of 500 uncompressed: wall time, bytes on the wire and
//     decompressed, the share of managed fields, the client's CPU to
//     receive it, to read each item's name and resource version in the
//     bytes and to decode it whole, and kube-apiserver's CPU;
//   - a streaming list (a watch with sendInitialEvents=true) and a paged
//     consistent list of the pods themselves, for reference: what a
//     resumed informer that lists pays.
//
// Each is measured reps times (interleaved), and the notes give medians
// and ranges.
func runE4Probe(ctx context.Context, c *cluster.Cluster, reps int) ([]string, error) {
	config := rest.CopyConfig(c.Config())
	config.QPS, config.Burst = -1, 0
	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		return nil, err
	}
	client, err := clientset(config)
	if err != nil {
		return nil, err
	}
	p := &probe{ctx: ctx, host: strings.TrimSuffix(config.Host, "/"), http: httpClient, apiserver: c.APIServerPID()}
	var bookmarks, bookmarksBehind []float64
	var meta, metaPaged, metaPlain, typedPaged, watchList []probeList
	for rep := range reps {
		// The bookmark of a short resumed watch.
		first, err := client.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			return nil, err
		}
		// As a restored informer: the snapshot's version is older than the
		// current one, read after it, which kube-apiserver's own Lease
		// renewals move (a watch from the current version itself gets no
		// bookmark: nothing is newer than where it starts).
		var current *corev1.PodList
		for {
			time.Sleep(time.Second)
			if current, err = client.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
				return nil, err
			}
			if current.ResourceVersion != first.ResourceVersion {
				break
			}
		}
		wait, behind, err := p.bookmarkWait(client.CoreV1().RESTClient(), first.ResourceVersion, current.ResourceVersion)
		if err != nil {
			return nil, err
		}
		bookmarks = append(bookmarks, wait.Seconds())
		bookmarksBehind = append(bookmarksBehind, float64(behind))
		logf("E4 probe %d: bookmark after %v (%d before it behind the current version)", rep+1, wait.Round(time.Millisecond), behind)

		for _, l := range []struct {
			into          *[]probeList
			accept, query string
			compress      bool
		}{
			{&meta, metadataAccept, "", true},
			{&metaPaged, metadataAccept, "limit=500", true},
			{&metaPlain, metadataAccept, "limit=500", false},
			{&typedPaged, podAccept, "limit=500", true},
		} {
			m, err := p.list(l.accept, l.query, l.compress)
			if err != nil {
				return nil, err
			}
			*l.into = append(*l.into, m)
		}
		w, err := p.watchList()
		if err != nil {
			return nil, err
		}
		watchList = append(watchList, w)
		logf("E4 probe %d: metadata list %.3f s, %.1f MB; pods paged %.3f s; watch-list %.3f s", rep+1,
			meta[rep].wall, meta[rep].plain/1e6, typedPaged[rep].wall, w.wall)
	}
	med := benchkit.Median
	rng := func(vs []float64) string {
		return fmt.Sprintf("%.3g (%.3g–%.3g)", med(vs), slices.Min(vs), slices.Max(vs))
	}
	notes := []string{fmt.Sprintf("E4 probe: %d repetitions, medians (min–max); load average %s.", reps, benchkit.LoadAverage()),
		fmt.Sprintf("E4 probe, a watch resumed with timeoutSeconds=3: its bookmark came %s s after the watch started; bookmarks behind the current version before it: %s.",
			rng(bookmarks), rng(bookmarksBehind))}
	for _, l := range []struct {
		name string
		runs []probeList
	}{
		{"metadata-only consistent list, one piece", meta},
		{"metadata-only consistent list, pages of 500", metaPaged},
		{"metadata-only consistent list, pages of 500, not compressed", metaPlain},
		{"pods, consistent list, pages of 500", typedPaged},
		{"pods, streaming list (sendInitialEvents=true), no decoding", watchList},
	} {
		pick := func(f func(probeList) float64) []float64 {
			var vs []float64
			for _, r := range l.runs {
				vs = append(vs, f(r))
			}
			return vs
		}
		notes = append(notes, fmt.Sprintf("E4 probe, %s: %d items, wall %s s; %s MB on the wire, %s MB decompressed (managed fields %s MB); "+
			"client CPU receiving %s s, reading names and versions %s s, decoding %s s; kube-apiserver CPU %s s.",
			l.name, l.runs[0].items, rng(pick(func(r probeList) float64 { return r.wall })),
			rng(pick(func(r probeList) float64 { return r.wire / 1e6 })), rng(pick(func(r probeList) float64 { return r.plain / 1e6 })),
			rng(pick(func(r probeList) float64 { return r.managedFields / 1e6 })),
			rng(pick(func(r probeList) float64 { return r.receiveCPU })), rng(pick(func(r probeList) float64 { return r.scanCPU })),
			rng(pick(func(r probeList) float64 { return r.decodeCPU })), rng(pick(func(r probeList) float64 { return r.serverCPU }))))
	}
	return notes, nil
}

// The Accept headers of the probe's lists: the pods' metadata only, and
// the pods.
const (
	metadataAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
	podAccept      = "application/vnd.kubernetes.protobuf"
)

// probe is the state of runE4Probe.
type probe struct {
	ctx       context.Context
	host      string
	http      *http.Client
	apiserver int
}

// probeList is one list's figures.
type probeList struct {
	items                          int
	wall                           float64 // from the request until the last byte
	wire, plain, managedFields     float64 // bytes
	receiveCPU, scanCPU, decodeCPU float64 // client CPU seconds
	serverCPU                      float64 // kube-apiserver CPU seconds
}

// bookmarkWait watches the pods from from with timeoutSeconds=3 and
// bookmarks, and returns the time until the first bookmark at or past
// target and how many bookmarks before it were behind target.
func (p *probe) bookmarkWait(client rest.Interface, from, target string) (time.Duration, int, error) {
	timeout := int64(3)
	start := time.Now()
	w, err := client.Get().Resource("pods").VersionedParams(&metav1.ListOptions{
		Watch: true, ResourceVersion: from, AllowWatchBookmarks: true, TimeoutSeconds: &timeout,
	}, metav1.ParameterCodec).Watch(p.ctx)
	if err != nil {
		return 0, 0, err
	}
	defer w.Stop()
	behind := 0
	for ev := range w.ResultChan() {
		if ev.Type == watch.Error {
			return 0, 0, fmt.Errorf("watch error: %v", ev.Object)
		}
		if ev.Type != watch.Bookmark {
			continue
		}
		obj, ok := ev.Object.(interface{ GetResourceVersion() string })
		if !ok {
			return 0, 0, fmt.Errorf("bookmark of a %T", ev.Object)
		}
		if rvAtLeast(obj.GetResourceVersion(), target) {
			return time.Since(start), behind, nil
		}
		behind++
	}
	return 0, 0, fmt.Errorf("the watch from %s ended after %v without a bookmark at or past %s", from, time.Since(start), target)
}

// rvAtLeast compares two etcd resource versions (decimal numbers).
func rvAtLeast(rv, target string) bool {
	if len(rv) != len(target) {
		return len(rv) > len(target)
	}
	return rv >= target
}

// list makes a consistent list of all pods (following continue tokens),
// asking for gzip if compress is set, and measures it.
func (p *probe) list(accept, query string, compress bool) (probeList, error) {
	var m probeList
	runtime.GC()
	serverBefore, err := processCPU(p.apiserver)
	if err != nil {
		return m, err
	}
	var bodies [][]byte
	cpu0, _ := benchkit.CPUTime()
	start := time.Now()
	next := ""
	for {
		q := query
		if next != "" {
			q += "&continue=" + url.QueryEscape(next)
		}
		raw, wire, err := p.get("/api/v1/pods?"+q, accept, compress)
		if err != nil {
			return m, err
		}
		m.wire += float64(wire)
		m.plain += float64(len(raw))
		bodies = append(bodies, raw)
		if next = listContinue(raw); next == "" {
			break
		}
	}
	m.wall = time.Since(start).Seconds()
	cpu1, _ := benchkit.CPUTime()
	serverAfter, err := processCPU(p.apiserver)
	if err != nil {
		return m, err
	}
	m.receiveCPU, m.serverCPU = (cpu1 - cpu0).Seconds(), serverAfter-serverBefore
	for _, b := range bodies {
		n, managed := scanItems(b)
		m.items += n
		m.managedFields += float64(managed)
	}
	cpu2, _ := benchkit.CPUTime()
	m.scanCPU = (cpu2 - cpu1).Seconds()
	for _, b := range bodies {
		if accept == metadataAccept {
			var l metav1.PartialObjectMetadataList
			if err := l.Unmarshal(listMessage(b)); err != nil {
				return m, err
			}
		} else {
			var l corev1.PodList
			if err := l.Unmarshal(listMessage(b)); err != nil {
				return m, err
			}
		}
	}
	cpu3, _ := benchkit.CPUTime()
	m.decodeCPU = (cpu3 - cpu2).Seconds()
	return m, nil
}

// get sends a GET, asking for gzip if compress is set (identity
// otherwise), and returns the decompressed body and the bytes received.
func (p *probe) get(path, accept string, compress bool) ([]byte, int, error) {
	req, err := http.NewRequestWithContext(p.ctx, http.MethodGet, p.host+path, nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", accept)
	encoding := "identity"
	if compress {
		encoding = "gzip"
	}
	req.Header.Set("Accept-Encoding", encoding)
	resp, err := p.http.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	counted := &countingReader{r: resp.Body}
	var body io.Reader = counted
	if resp.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(counted)
		if err != nil {
			return nil, 0, err
		}
		body = gz
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		return nil, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("GET %s: %s: %q", path, resp.Status, raw[:min(len(raw), 200)])
	}
	return raw, counted.n, nil
}

// countingReader counts what is read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += n
	return n, err
}

// watchList makes a streaming list of the pods (a watch from "" with
// sendInitialEvents=true) and reads its frames, undecoded, until the
// bookmark that ends the initial events.
func (p *probe) watchList() (probeList, error) {
	var m probeList
	serverBefore, err := processCPU(p.apiserver)
	if err != nil {
		return m, err
	}
	cpu0, _ := benchkit.CPUTime()
	start := time.Now()
	timeout := "60"
	req, err := http.NewRequestWithContext(p.ctx, http.MethodGet, p.host+"/api/v1/pods?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds="+timeout, nil)
	if err != nil {
		return m, err
	}
	req.Header.Set("Accept", "application/vnd.kubernetes.protobuf;stream=watch")
	resp, err := p.http.Do(req)
	if err != nil {
		return m, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return m, fmt.Errorf("watch-list: %s", resp.Status)
	}
	counted := &countingReader{r: resp.Body}
	var size [4]byte
	frame := []byte{}
	for {
		if _, err := io.ReadFull(counted, size[:]); err != nil {
			return m, fmt.Errorf("watch-list after %d events: %w", m.items, err)
		}
		n := int(size[0])<<24 | int(size[1])<<16 | int(size[2])<<8 | int(size[3])
		frame = slices.Grow(frame[:0], n)[:n]
		if _, err := io.ReadFull(counted, frame); err != nil {
			return m, err
		}
		if bytes.Contains(frame, []byte("BOOKMARK")) && bytes.Contains(frame, []byte(metav1.InitialEventsAnnotationKey)) {
			break
		}
		m.items++
	}
	m.wall = time.Since(start).Seconds()
	cpu1, _ := benchkit.CPUTime()
	serverAfter, err := processCPU(p.apiserver)
	if err != nil {
		return m, err
	}
	m.wire, m.plain = float64(counted.n), float64(counted.n)
	m.receiveCPU, m.serverCPU = (cpu1 - cpu0).Seconds(), serverAfter-serverBefore
	return m, nil
}

// listMessage returns the list message of a protobuf response body (after
// the "k8s\x00" magic, the Unknown envelope's raw field).
func listMessage(body []byte) []byte {
	body = bytes.TrimPrefix(body, []byte("k8s\x00"))
	for len(body) > 0 {
		num, typ, n := protowire.ConsumeTag(body)
		if n < 0 {
			return nil
		}
		body = body[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, body)
			body = body[n:]
			continue
		}
		content, n := protowire.ConsumeBytes(body)
		body = body[n:]
		if num == 2 { // runtime.Unknown.Raw
			return content
		}
	}
	return nil
}

// listContinue returns the continue token of a protobuf list response.
func listContinue(body []byte) string {
	msg := listMessage(body)
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return ""
		}
		msg = msg[n:]
		if typ != protowire.BytesType {
			msg = msg[protowire.ConsumeFieldValue(num, typ, msg):]
			continue
		}
		content, n := protowire.ConsumeBytes(msg)
		msg = msg[n:]
		if num != 1 { // ListMeta
			continue
		}
		for len(content) > 0 {
			num, typ, n := protowire.ConsumeTag(content)
			if n < 0 {
				return ""
			}
			content = content[n:]
			if typ != protowire.BytesType {
				content = content[protowire.ConsumeFieldValue(num, typ, content):]
				continue
			}
			v, n := protowire.ConsumeBytes(content)
			content = content[n:]
			if num == 3 { // continue
				return string(v)
			}
		}
	}
	return ""
}

// scanItems reads each item's namespace, name and resource version in a
// protobuf list response (items are field 2, their metadata field 1, as in
// PodList and PartialObjectMetadataList), as a resumed informer would to
// compare them with its objects, and returns the items and the bytes of
// their managed fields (ObjectMeta field 17).
func scanItems(body []byte) (items, managedFields int) {
	msg := listMessage(body)
	seen := map[string]string{}
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return
		}
		msg = msg[n:]
		if typ != protowire.BytesType {
			msg = msg[protowire.ConsumeFieldValue(num, typ, msg):]
			continue
		}
		item, n := protowire.ConsumeBytes(msg)
		msg = msg[n:]
		if num != 2 {
			continue
		}
		items++
		var name, namespace, rv []byte
		for len(item) > 0 {
			num, typ, n := protowire.ConsumeTag(item)
			item = item[n:]
			if typ != protowire.BytesType {
				item = item[protowire.ConsumeFieldValue(num, typ, item):]
				continue
			}
			content, n := protowire.ConsumeBytes(item)
			item = item[n:]
			if num != 1 {
				continue
			}
			for len(content) > 0 {
				num, typ, n := protowire.ConsumeTag(content)
				content = content[n:]
				if typ != protowire.BytesType {
					content = content[protowire.ConsumeFieldValue(num, typ, content):]
					continue
				}
				v, n := protowire.ConsumeBytes(content)
				content = content[n:]
				switch num {
				case 1:
					name = v
				case 3:
					namespace = v
				case 6:
					rv = v
				case 17:
					managedFields += n
				}
			}
		}
		seen[string(namespace)+"/"+string(name)] = string(rv)
	}
	return items, managedFields
}
