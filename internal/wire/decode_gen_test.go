package wire

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"testing"
	"time"
	"unsafe"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/randfill"

	"github.com/kubetyped/informer/internal/benchkit"
	"github.com/kubetyped/informer/internal/pbdecode"
	"github.com/kubetyped/informer/internal/testkit"
)

// TestUnmarshalGeneratedIsCurrent regenerates decode_gen.go in memory
// and fails if the checked-in file differs: run go generate.
func TestUnmarshalGeneratedIsCurrent(t *testing.T) {
	want, err := pbdecode.Generate()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("decode_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("decode_gen.go is stale: run go generate")
	}
}

// pbMessage is a pointer to a protobuf message of k8s.io/api, such as
// *corev1.Pod: what the generated decoder's roots are.
type pbMessage[T any] interface {
	*T
	ProtobufMessage
	Marshal() ([]byte, error)
}

// decodeBoth decodes data with k8s.io/api's Unmarshal (from a copy) and
// with the generated decoder (unmarshalInterned) through table, and fails
// unless both fail or both succeed with equal objects. It returns the
// generated decoder's object.
func decodeBoth[T any, P pbMessage[T]](t testing.TB, table *InternTable, data []byte) P {
	t.Helper()
	want := P(new(T))
	wantErr := want.Unmarshal(bytes.Clone(data))
	got := P(new(T))
	handled, gotErr := unmarshalInterned(table, nil, data, got)
	if !handled {
		t.Fatalf("no interning decoder for %T", got)
	}
	if (wantErr == nil) != (gotErr == nil) {
		t.Fatalf("%T.Unmarshal's error: %v; the generated decoder's: %v (%d bytes: %x…)", got, wantErr, gotErr, len(data), data[:min(len(data), 64)])
	}
	// reflect.DeepEqual, not cmp alone: cmp calls FieldsV1's Equal
	// method, which does not tell nil from empty bytes.
	if wantErr == nil && !reflect.DeepEqual(want, got) {
		t.Fatalf("the generated decoder differs from %T.Unmarshal (-Unmarshal +generated; none shown: nil against empty bytes):\n%s", got, testkit.DiffLarge(want, got))
	}
	return got
}

// newSharingTable returns an empty table whose decoder shares sub-objects.
func newSharingTable() *InternTable {
	t := newBareInternTable()
	t.shareSubObjects = true
	return t
}

// decoderTables returns an empty table of each kind: one interning strings
// only (the default), one sharing sub-objects too (Deduplicate).
func decoderTables() []*InternTable {
	return []*InternTable{newBareInternTable(), newSharingTable()}
}

// randomObjects returns the encodings of n random objects of type T.
func randomObjects[T any, P pbMessage[T]](t testing.TB, seed uint64, n int) [][]byte {
	t.Helper()
	f := randfill.NewWithSeed(int64(seed)).NilChance(0.2).NumElements(0, 3)
	out := make([][]byte, n)
	for i := range out {
		obj := P(new(T))
		f.Fill(obj)
		data, err := obj.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = data
	}
	return out
}

// rootTest is the tests of one root of the generated decoder.
type rootTest struct {
	typ reflect.Type
	// decode is checkRoot, refs checkRefRecords (refcode_test.go).
	decode, refs func(t *testing.T, seed uint64)
}

// testRoot returns the tests of root T.
func testRoot[T any, P pbMessage[T]]() rootTest {
	return rootTest{reflect.TypeFor[T](), checkRoot[T, P], checkRefRecords[T, P]}
}

// rootTests returns the tests of every root of the generated decoder, in
// pbdecode.Roots' order.
func rootTests() []rootTest {
	return []rootTest{
		testRoot[corev1.Pod](), testRoot[corev1.PodList](),
		testRoot[corev1.Node](), testRoot[corev1.NodeList](),
		testRoot[corev1.Service](), testRoot[corev1.ServiceList](),
		testRoot[corev1.ConfigMap](), testRoot[corev1.ConfigMapList](),
		testRoot[corev1.Secret](), testRoot[corev1.SecretList](),
		testRoot[corev1.Namespace](), testRoot[corev1.NamespaceList](),
		testRoot[discoveryv1.EndpointSlice](), testRoot[discoveryv1.EndpointSliceList](),
		testRoot[appsv1.Deployment](), testRoot[appsv1.DeploymentList](),
		testRoot[appsv1.ReplicaSet](), testRoot[appsv1.ReplicaSetList](),
		testRoot[appsv1.StatefulSet](), testRoot[appsv1.StatefulSetList](),
		testRoot[appsv1.DaemonSet](), testRoot[appsv1.DaemonSetList](),
		testRoot[batchv1.Job](), testRoot[batchv1.JobList](),
	}
}

// checkRoot decodes random objects of type T both ways, twice through each
// kind of table, so that the second decode takes its strings from the
// table; then truncations and random mutations of some of them: the
// generated decoder must fail exactly when Unmarshal does, and decode the
// same object when neither fails.
func checkRoot[T any, P pbMessage[T]](t *testing.T, seed uint64) {
	encoded := randomObjects[T, P](t, seed, 20)
	for _, table := range decoderTables() {
		for range 2 {
			for _, data := range encoded {
				decodeBoth[T, P](t, table, data)
			}
		}
	}
	r := rand.New(rand.NewPCG(seed, 1))
	tables := decoderTables()
	for i, data := range encoded[:4] {
		table := tables[i%len(tables)]
		// At most 100 lengths and 50 mutations per object: more take too
		// long under -race for the lists of pod templates (hundreds of KB
		// each), and FuzzUnmarshalPod and FuzzUnmarshalNode cover the rest.
		for n := 0; n < len(data); n += max(7, len(data)/100) {
			decodeBoth[T, P](t, table, data[:n])
		}
		for range 50 {
			m := bytes.Clone(data)
			for range 1 + r.IntN(3) {
				m[r.IntN(len(m))] = byte(r.Uint32())
			}
			decodeBoth[T, P](t, table, m)
		}
	}
}

// TestUnmarshalRootsEqualUnmarshal runs checkRoot for every root of the
// generated decoder, and fails if one has no test here.
func TestUnmarshalRootsEqualUnmarshal(t *testing.T) {
	tests := rootTests()
	var tested []reflect.Type
	for i, rt := range tests {
		tested = append(tested, rt.typ)
		t.Run(rt.typ.String(), func(t *testing.T) { rt.decode(t, 40+uint64(i)) })
	}
	if roots := pbdecode.Roots(); !slices.Equal(roots, tested) {
		t.Errorf("the decoder's roots are %v, the roots tested %v", roots, tested)
	}
}

// realisticNodes returns n nodes as a cluster has them: labels, images,
// conditions and addresses repeating across nodes, names and addresses
// not.
func realisticNodes(n int) []*corev1.Node {
	r := rand.New(rand.NewPCG(7, 7))
	images := make([]corev1.ContainerImage, 200)
	for i := range images {
		repo := fmt.Sprintf("registry.example.com/team-%d/service-%d", i%13, i)
		images[i] = corev1.ContainerImage{
			Names:     []string{fmt.Sprintf("%s@sha256:%064x", repo, i*7919), fmt.Sprintf("%s:v1.%d.%d", repo, i%9, i%17)},
			SizeBytes: int64(20_000_000 + i*1_234_567),
		}
	}
	since := metav1.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("16"),
		corev1.ResourceMemory:           resource.MustParse("64Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
	}
	allocatable := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("15890m"),
		corev1.ResourceMemory:           resource.MustParse("62Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("95Gi"),
	}
	nodes := make([]*corev1.Node, n)
	for i := range nodes {
		name := fmt.Sprintf("ip-10-0-%d-%d.eu-west-1.compute.internal", i/250, i%250)
		zone := fmt.Sprintf("eu-west-1%c", 'a'+i%3)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name: name, UID: types.UID(fmt.Sprintf("5f1c7a2e-0000-4000-8000-%012d", i)), ResourceVersion: fmt.Sprint(1000 + i),
				CreationTimestamp: since,
				Labels: map[string]string{
					"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "kubernetes.io/hostname": name,
					"node.kubernetes.io/instance-type": "m6i.4xlarge", "topology.kubernetes.io/region": "eu-west-1",
					"topology.kubernetes.io/zone": zone, "karpenter.sh/nodepool": fmt.Sprintf("pool-%d", i%4),
					"karpenter.sh/capacity-type": "on-demand",
				},
				Annotations: map[string]string{
					"node.alpha.kubernetes.io/ttl":                           "0",
					"volumes.kubernetes.io/controller-managed-attach-detach": "true",
				},
			},
			Spec: corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.244.%d.0/24", i), ProviderID: "aws:///" + zone + "/i-0" + fmt.Sprintf("%016x", i)},
			Status: corev1.NodeStatus{
				Capacity: capacity, Allocatable: allocatable,
				Addresses: []corev1.NodeAddress{
					{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.%d.%d", i/250, i%250)},
					{Type: corev1.NodeHostName, Address: name},
					{Type: corev1.NodeInternalDNS, Address: name},
				},
				DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
				NodeInfo: corev1.NodeSystemInfo{
					MachineID: fmt.Sprintf("ec2%029x", i), SystemUUID: fmt.Sprintf("ec2%029x", i), BootID: fmt.Sprintf("%032x", i*31),
					KernelVersion: "6.1.112-124.190.amzn2023.x86_64", OSImage: "Amazon Linux 2023.6.20241010",
					ContainerRuntimeVersion: "containerd://1.7.22", KubeletVersion: "v1.37.1", KubeProxyVersion: "v1.37.1",
					OperatingSystem: "linux", Architecture: "amd64",
				},
			},
		}
		for _, c := range []struct {
			typ             corev1.NodeConditionType
			status          corev1.ConditionStatus
			reason, message string
		}{
			{corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"},
			{corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"},
			{corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"},
			{corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"},
		} {
			node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{
				Type: c.typ, Status: c.status, Reason: c.reason, Message: c.message,
				LastHeartbeatTime: metav1.Date(2026, 11, 25, 7, r.IntN(60), r.IntN(60), 0, time.UTC), LastTransitionTime: since,
			})
		}
		for _, k := range r.Perm(len(images))[:40] {
			node.Status.Images = append(node.Status.Images, images[k])
		}
		nodes[i] = node
	}
	return nodes
}

// encodedRealisticNodes returns the encodings of realisticNodes(n).
func encodedRealisticNodes(t testing.TB, n int) [][]byte {
	t.Helper()
	var out [][]byte
	for _, node := range realisticNodes(n) {
		data, err := node.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, data)
	}
	return out
}

// TestUnmarshalNodeShares decodes nodes and checks that two of them share
// a label value's and an image name's bytes, but not their names.
func TestUnmarshalNodeShares(t *testing.T) {
	for _, table := range decoderTables() {
		var nodes []*corev1.Node
		for _, data := range encodedRealisticNodes(t, 5) {
			nodes = append(nodes, decodeBoth[corev1.Node](t, table, data))
		}
		a, b := nodes[3], nodes[4]
		if x, y := a.Labels["karpenter.sh/capacity-type"], b.Labels["karpenter.sh/capacity-type"]; x == "" || unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("sharing sub-objects %v: the label value %q is not shared", table.shareSubObjects, x)
		}
		if x, y := a.Status.NodeInfo.KernelVersion, b.Status.NodeInfo.KernelVersion; unsafe.StringData(x) != unsafe.StringData(y) {
			t.Errorf("sharing sub-objects %v: the kernel version %q is not shared", table.shareSubObjects, x)
		}
		if a.Name == b.Name || unsafe.StringData(a.Name) == unsafe.StringData(b.Name) {
			t.Errorf("sharing sub-objects %v: names shared", table.shareSubObjects)
		}
	}
}

// FuzzUnmarshalNode compares the generated decoder with Node.Unmarshal on
// any bytes.
func FuzzUnmarshalNode(f *testing.F) {
	fuzzDecode[corev1.Node](f, encodedRealisticNodes(f, 2), randomObjects[corev1.Node](f, 20, 5))
}

// fuzzDecode fuzzes decodeBoth for T, with each kind of table, from the
// seeds given.
func fuzzDecode[T any, P pbMessage[T]](f *testing.F, seeds ...[][]byte) {
	for _, set := range seeds {
		for _, data := range set {
			f.Add(data)
		}
	}
	tables := decoderTables()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, table := range tables {
			decodeBoth[T, P](t, table, data)
		}
	})
}

// BenchmarkDecodeNode decodes realistic nodes (realisticNodes: 100 of
// them, in turn) from protobuf with k8s.io/api's Unmarshal and with the
// generated decoder through a warm table of the default kind (strings
// interned, sub-objects not shared). Each decoded node replaces the
// previous one of its name in a cache, so that the table holds what a
// cache uses. cpu-ns/op is as in BenchmarkDecodePod.
func BenchmarkDecodeNode(b *testing.B) {
	benchDecode(b, encodedRealisticNodes(b, 100), []decodeBenchCase[corev1.Node]{
		{"Unmarshal", false, func(_ *InternTable, data []byte, n *corev1.Node) error { return n.Unmarshal(data) }},
		{"unmarshalNode", false, func(table *InternTable, data []byte, n *corev1.Node) error {
			table.mu.Lock()
			defer table.mu.Unlock()
			return unmarshalNode(table, data, n)
		}},
	})
}

// decodeBenchCase is one way to decode objects of type T, for benchDecode.
type decodeBenchCase[T any] struct {
	name string
	// share is the table's shareSubObjects.
	share  bool
	decode func(table *InternTable, data []byte, obj *T) error
}

// benchDecode decodes the objects encoded, in turn, with each case, through
// a table of its own warmed by two rounds over them (every string seen
// twice is in it), keeping the last round's objects alive as a cache
// would, and reports allocations and the process's CPU time per object
// (garbage collection included) beside the wall time.
func benchDecode[T any](b *testing.B, encoded [][]byte, cases []decodeBenchCase[T]) {
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			table := NewInternTable() // with its sweeps after garbage collections, as an informer's
			table.shareSubObjects = c.share
			cache := make([]*T, len(encoded))
			for range 2 {
				for i, data := range encoded {
					cache[i] = new(T)
					if err := c.decode(table, data, cache[i]); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportAllocs()
			cpu0, err := benchkit.CPUTime()
			if err != nil {
				b.Fatal(err)
			}
			i := 0
			for b.Loop() {
				obj := new(T)
				if err := c.decode(table, encoded[i], obj); err != nil {
					b.Fatal(err)
				}
				cache[i] = obj
				i = (i + 1) % len(encoded)
			}
			cpu1, err := benchkit.CPUTime()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64((cpu1-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}
