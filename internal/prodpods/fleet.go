package prodpods

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// This file builds the production-like pods of many clusters as protobuf
// bytes, for a server that replays them (internal/replayserver; E6 and E7
// in shared/benchmarks.md): the bytes of a Deployment's replicas are built
// once, as a template whose per-pod fields ("holes") are located, and a
// pod's encoding is a copy of its template with its own values written into
// the holes. Every per-pod value has a fixed width within its template (a
// 5-character name suffix, a 10-digit resource version, IPs of three-digit
// octets, timestamps whose seconds take a 5-byte varint), so that writing it
// changes no length in the encoding.
//
// Names may repeat between clusters (a Deployment every cluster runs has
// the same pod names in each), but UIDs, IPs and timestamps never do.

// FleetOptions says what each cluster of a Fleet holds.
type FleetOptions struct {
	// Pods is the number of pods of each cluster.
	Pods int
	// Common is the fraction (0 to 1) of each cluster's pods that belong to
	// the fleet's common Deployments, the ones every cluster runs with the
	// same template (same names, labels, specs); the rest belong to
	// Deployments of the cluster's own.
	Common float64
}

// Fleet is the pods of any number of clusters, each built on demand
// (Cluster). Its methods are safe for concurrent use.
type Fleet struct {
	opts       FleetOptions
	commonPods int
	// common are the common Deployments' templates, shared by every
	// cluster.
	common []*Template
	// ownStride is the span of Deployment indices each cluster's own
	// Deployments take (at most one per 10 pods, and one for a remainder).
	ownStride int
}

// NewFleet builds the common templates of a fleet.
func NewFleet(opts FleetOptions) (*Fleet, error) {
	if opts.Pods < 0 || opts.Common < 0 || opts.Common > 1 {
		return nil, fmt.Errorf("prodpods: a fleet needs Pods >= 0 and Common in [0, 1], got %d and %g", opts.Pods, opts.Common)
	}
	f := &Fleet{opts: opts, commonPods: int(float64(opts.Pods)*opts.Common + 0.5)}
	f.ownStride = (opts.Pods-f.commonPods)/10 + 1
	var err error
	if f.common, err = buildTemplates(layout(0, f.commonPods)); err != nil {
		return nil, err
	}
	return f, nil
}

// layout returns the Deployments holding n pods, indexed from first on:
// each has 10 to 50 replicas (the last one fewer, to make n), as
// prodDeployments.
func layout(first, n int) []prodDeployment {
	var out []prodDeployment
	for total, d := 0, first; total < n; d++ {
		replicas := min(10+(d*17)%41, n-total)
		out = append(out, newProdDeployment(d, replicas))
		total += replicas
	}
	return out
}

// buildTemplates returns the templates of deps, built on all cores.
func buildTemplates(deps []prodDeployment) ([]*Template, error) {
	out := make([]*Template, len(deps))
	errs := make([]error, len(deps))
	var wg sync.WaitGroup
	workers := 4
	for w := range workers {
		wg.Go(func() {
			for d := w; d < len(deps); d += workers {
				out[d], errs[d] = newTemplate(deps[d])
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Cluster builds cluster c of the fleet (c >= 0): its own Deployments'
// templates and the order of its pods, the common Deployments' first.
func (f *Fleet) Cluster(c int) (*Cluster, error) {
	if c < 0 || c >= 1<<20 {
		return nil, fmt.Errorf("prodpods: cluster index %d out of [0, 2^20)", c)
	}
	own, err := buildTemplates(layout(len(f.common)+c*f.ownStride, f.opts.Pods-f.commonPods))
	if err != nil {
		return nil, err
	}
	cl := &Cluster{index: c, pods: f.opts.Pods, templates: append(append([]*Template(nil), f.common...), own...)}
	cl.nodes = min(max(f.opts.Pods/30, 1), 5000)
	cl.refs = make([]podRef, 0, f.opts.Pods)
	for t, tmpl := range cl.templates {
		for r := range tmpl.dep.replicas {
			cl.refs = append(cl.refs, podRef{template: int32(t), replica: int32(r)})
		}
	}
	return cl, nil
}

// Cluster is one cluster's pods, served as protobuf bytes (AppendPod). Its
// methods are safe for concurrent use.
type Cluster struct {
	index     int
	pods      int // the fleet's pods per cluster
	nodes     int
	templates []*Template
	refs      []podRef
}

// podRef says which template and replica a pod is.
type podRef struct {
	template, replica int32
}

// Len returns the number of pods in the cluster.
func (c *Cluster) Len() int { return len(c.refs) }

// Namespace returns pod i's namespace.
func (c *Cluster) Namespace(i int) string {
	return c.templates[c.refs[i].template].dep.namespace
}

// Name returns pod i's name.
func (c *Cluster) Name(i int) string {
	return c.templates[c.refs[i].template].dep.generateName + podNameSuffix(i)
}

// MinResourceVersion and MaxResourceVersion bound the resource versions
// AppendPod writes: a resource version takes 10 digits.
const (
	MinResourceVersion = 1_000_000_000
	MaxResourceVersion = 9_999_999_999
)

// AppendPod appends to dst the protobuf encoding of pod i (the bytes of a
// corev1.Pod's Marshal, without the "k8s\x00" envelope) at the given
// resource version (in [MinResourceVersion, MaxResourceVersion]) and
// version: version 0 is the pod as created, and each later version is a
// status update that moved its readiness a minute on (its Ready and
// ContainersReady conditions and kubelet's managed-fields time).
func (c *Cluster) AppendPod(dst []byte, i int, version uint32, resourceVersion uint64) []byte {
	ref := c.refs[i]
	t := c.templates[ref.template]
	var scratch [valuesSize]byte
	v := c.values(scratch[:0], i, int(ref.replica), t.dep, version, resourceVersion)
	start := len(dst)
	dst = append(dst, t.pod...)
	out := dst[start:]
	for k := range holeCount {
		val := v[k]
		for _, off := range t.holes[k] {
			copy(out[off:], val)
		}
	}
	return dst
}

// PodSize returns the length of pod i's encoding (AppendPod).
func (c *Cluster) PodSize(i int) int { return len(c.templates[c.refs[i].template].pod) }

// Pod returns pod i at version and resourceVersion as a decoded value
// (AppendPod's bytes, decoded), for tests.
func (c *Cluster) Pod(i int, version uint32, resourceVersion uint64) (corev1.Pod, error) {
	var pod corev1.Pod
	err := pod.Unmarshal(c.AppendPod(nil, i, version, resourceVersion))
	return pod, err
}

// The holes of a template: the per-pod fields, each of a fixed width.
const (
	holeSuffix = iota
	holeUID
	holeResourceVersion
	holeNodeName
	holeHostIP
	holePodIP
	holeContainerID0
	holeContainerID1
	holeOwnerUID
	holeCreated // the timestamps: the seconds of a metav1.Time, a 5-byte varint each
	holeScheduled
	holeStarted
	holeReady
	holeCount
)

// holeWidths are the holes' widths in bytes.
var holeWidths = [holeCount]int{
	holeSuffix:          5,
	holeUID:             36,
	holeResourceVersion: 10,
	holeNodeName:        len("ip-10-200-100-100.ec2.internal"),
	holeHostIP:          len("10.200.100.100"),
	holePodIP:           len("10.100.100.100"),
	holeContainerID0:    len("containerd://") + 64,
	holeContainerID1:    len("containerd://") + 64,
	holeOwnerUID:        36,
	holeCreated:         5,
	holeScheduled:       5,
	holeStarted:         5,
	holeReady:           5,
}

// valuesSize is the total width of the holes.
const valuesSize = 5 + 36 + 10 + 30 + 14 + 14 + 2*77 + 36 + 4*5

// Template is the protobuf encoding of a Deployment's replicas with their
// per-pod fields located.
type Template struct {
	dep   deploymentKey
	pod   []byte
	holes [holeCount][]int32
}

// deploymentKey is what a template keeps of its Deployment: what the
// per-pod values derive from (not the decoded template, which would cost
// a fleet of a thousand clusters hundreds of megabytes).
type deploymentKey struct {
	index        int
	replicas     int
	namespace    string
	generateName string
	created      time.Time
}

// keyOf returns dep's deploymentKey.
func keyOf(dep prodDeployment) deploymentKey {
	return deploymentKey{index: dep.index, replicas: dep.replicas, namespace: dep.namespace,
		generateName: dep.template.GenerateName, created: dep.created}
}

// marker returns the placeholder of hole k: bytes no Pod's encoding holds
// otherwise (a string's "\x00\x01" never appears in a protobuf message's
// framing nor in the fixtures' text; a timestamp's 5-byte varint of
// 0xfb..0xff continuation bytes is a time the fixtures never use).
func marker(k int) []byte {
	if k >= holeCreated {
		return []byte{0xff - byte(k-holeCreated), 0xfe, 0xfd, 0xfc, 0x07}
	}
	m := bytes.Repeat([]byte{0x02}, holeWidths[k])
	m[0], m[1], m[2] = 0x00, 0x01, 'A'+byte(k)
	return m
}

// markerTime returns the time whose seconds encode as marker(k).
func markerTime(k int) metav1.Time {
	secs, _ := binary.Uvarint(marker(k))
	return metav1.NewTime(time.Unix(int64(secs), 0).UTC())
}

// newTemplate encodes dep's replica with every per-pod field a marker,
// locates the markers, and checks the result: the template filled with a
// replica's values must be that replica's own encoding.
func newTemplate(dep prodDeployment) (*Template, error) {
	str := func(k int) string { return string(marker(k)) }
	id := identity{
		suffix: str(holeSuffix), uid: types.UID(str(holeUID)), resourceVersion: str(holeResourceVersion),
		nodeName: str(holeNodeName), hostIP: str(holeHostIP), podIP: str(holePodIP),
		containerIDs: [2]string{str(holeContainerID0), str(holeContainerID1)}, ownerUID: types.UID(str(holeOwnerUID)),
		created: markerTime(holeCreated), scheduled: markerTime(holeScheduled), started: markerTime(holeStarted), ready: markerTime(holeReady),
	}
	pod := dep.build(id)
	raw, err := pod.Marshal()
	if err != nil {
		return nil, fmt.Errorf("prodpods: encoding Deployment %s's template: %w", dep.name, err)
	}
	t := &Template{dep: keyOf(dep), pod: raw}
	for k := range holeCount {
		m := marker(k)
		for off := 0; ; {
			at := bytes.Index(raw[off:], m)
			if at < 0 {
				break
			}
			t.holes[k] = append(t.holes[k], int32(off+at))
			off += at + len(m)
		}
		if len(t.holes[k]) == 0 {
			return nil, fmt.Errorf("prodpods: Deployment %s's template has no hole %d", dep.name, k)
		}
	}
	// Check against a replica encoded directly.
	probe := &Cluster{index: 0, pods: dep.replicas, nodes: 1, templates: []*Template{t}, refs: []podRef{{}}}
	want := dep.build(probe.identity(0, 0, t.dep, 1, MinResourceVersion))
	wantRaw, err := want.Marshal()
	if err != nil {
		return nil, err
	}
	if got := probe.AppendPod(nil, 0, 1, MinResourceVersion); !bytes.Equal(got, wantRaw) {
		return nil, fmt.Errorf("prodpods: Deployment %s's template filled with a replica's values (%d bytes) differs from the replica's encoding (%d bytes)", dep.name, len(got), len(wantRaw))
	}
	return t, nil
}

// clusterEpochStep is how far apart in time clusters' pods are: more than a
// cluster's own span, so that no timestamp repeats between clusters.
const clusterEpochStep = 7*24*time.Hour + time.Second

// ipCapacity is the number of distinct pod IPs (10.100-199.x.y with x, y in
// 100-255): pod IPs repeat only in fleets of more pods than that.
const ipCapacity = 100 * 156 * 156

// values returns the holes' values for pod i, replica r of dep in cluster
// c, at version and resourceVersion, appended to scratch (of capacity
// valuesSize, so that nothing is allocated).
func (c *Cluster) values(scratch []byte, i, r int, dep deploymentKey, version uint32, resourceVersion uint64) [holeCount][]byte {
	var v [holeCount][]byte
	put := func(k int, b []byte) {
		start := len(scratch)
		scratch = append(scratch, b...)
		v[k] = scratch[start:len(scratch):len(scratch)]
	}
	global := uint64(c.index)*uint64(c.pods) + uint64(i)
	var buf [80]byte
	put(holeSuffix, appendSuffix(buf[:0], i))
	put(holeUID, appendUID(buf[:0], "9d8e7f60-", uint16(global), "-4b1c-8d2e-", global))
	put(holeResourceVersion, strconv.AppendUint(buf[:0], resourceVersion, 10))
	host := uint64(c.index)*5000 + uint64(i*7919%c.nodes)
	hostIP := appendIP(buf[:0], '.', 200+host/(156*156)%56, 100+host/156%156, 100+host%156)
	put(holeHostIP, hostIP)
	node := append(buf[:0], "ip-"...)
	node = appendIP(node, '-', 200+host/(156*156)%56, 100+host/156%156, 100+host%156)
	put(holeNodeName, append(node, ".ec2.internal"...))
	g := global % ipCapacity
	put(holePodIP, appendIP(buf[:0], '.', 100+g/(156*156), 100+g/156%156, 100+g%156))
	for ctr, k := range []int{holeContainerID0, holeContainerID1} {
		id := append(buf[:0], "containerd://"...)
		id = appendHex(id, 0, 16)
		id = appendHex(id, global, 16)
		id = appendHex(id, 0, 16)
		id = appendHex(id, uint64(ctr+1), 16)
		put(k, id)
	}
	owner := uint64(c.index)<<24 | uint64(dep.index)
	put(holeOwnerUID, appendUID(buf[:0], "5e0c1d2b-", uint16(dep.index), "-4a6b-9c8d-", owner))
	created := dep.created.Add(time.Duration(c.index)*clusterEpochStep + time.Duration(r)*3*time.Second).Unix()
	put(holeCreated, binary.AppendUvarint(buf[:0], uint64(created)))
	put(holeScheduled, binary.AppendUvarint(buf[:0], uint64(created+1)))
	put(holeStarted, binary.AppendUvarint(buf[:0], uint64(created+4)))
	put(holeReady, binary.AppendUvarint(buf[:0], uint64(created+15+60*int64(version))))
	return v
}

// identity returns the identity whose fields hold values' values, for the
// direct encoding newTemplate checks its template against.
func (c *Cluster) identity(i, r int, dep deploymentKey, version uint32, resourceVersion uint64) identity {
	v := c.values(nil, i, r, dep, version, resourceVersion)
	at := func(k int) metav1.Time {
		secs, _ := binary.Uvarint(v[k])
		return metav1.NewTime(time.Unix(int64(secs), 0).UTC())
	}
	return identity{
		suffix: string(v[holeSuffix]), uid: types.UID(v[holeUID]), resourceVersion: string(v[holeResourceVersion]),
		nodeName: string(v[holeNodeName]), hostIP: string(v[holeHostIP]), podIP: string(v[holePodIP]),
		containerIDs: [2]string{string(v[holeContainerID0]), string(v[holeContainerID1])}, ownerUID: types.UID(v[holeOwnerUID]),
		created: at(holeCreated), scheduled: at(holeScheduled), started: at(holeStarted), ready: at(holeReady),
	}
}

// appendSuffix appends podNameSuffix(i) without allocating.
func appendSuffix(dst []byte, i int) []byte {
	const space = 27 * 27 * 27 * 27 * 27
	v := i * 2654435761 % space
	for range 5 {
		dst = append(dst, podNameSuffixLetters[v%27])
		v /= 27
	}
	return dst
}

// appendUID appends prefix, a as 4 hex digits, middle and b as 12.
func appendUID(dst []byte, prefix string, a uint16, middle string, b uint64) []byte {
	dst = append(dst, prefix...)
	dst = appendHex(dst, uint64(a), 4)
	dst = append(dst, middle...)
	return appendHex(dst, b, 12)
}

// appendHex appends the low digits*4 bits of v as lower-case hex.
func appendHex(dst []byte, v uint64, digits int) []byte {
	const hex = "0123456789abcdef"
	for d := digits - 1; d >= 0; d-- {
		shift := uint(d * 4)
		if shift >= 64 {
			dst = append(dst, '0')
			continue
		}
		dst = append(dst, hex[v>>shift&0xf])
	}
	return dst
}

// appendIP appends "10", sep, and a, b, c (each 100 to 255) separated by
// sep.
func appendIP(dst []byte, sep byte, a, b, c uint64) []byte {
	dst = append(dst, '1', '0')
	for _, o := range [3]uint64{a, b, c} {
		dst = append(dst, sep, '0'+byte(o/100), '0'+byte(o/10%10), '0'+byte(o%10))
	}
	return dst
}
