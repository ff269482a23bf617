package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/kubetyped/informer/e2e/internal/cluster"
	"github.com/kubetyped/informer/internal/prodpods"
)

// E7 at 150,000 pods would spend hours seeding through the API on this
// machine (three writes a pod, each with kube-apiserver's admission,
// defaulting and managed-fields computation: about 28 pods/s on a loaded
// machine, docs/benchmarks.md). seedRangeEtcd writes the pods straight
// into etcd instead, as kube-apiserver stores them (protobuf, kind Pod,
// under /registry/pods/NAMESPACE/NAME, without a resource version), one
// put a pod through etcd's JSON gateway; the server's watch of etcd then
// brings them into its watch cache, as any write. The objects are the
// generated pods: what differs from the pods the API would store is
// checked first (checkEtcdForm) on a sample written through the API, and
// reported.
//
// One pod a put, not many a transaction: kube-apiserver writes one object
// a revision, and its watch cache counts on it. With 96 pods in one
// transaction (one revision), the cache counts itself at that revision
// once it has applied the first of them, so a consistent list made just
// after the seed could lack the rest of the last transaction, and a watch
// from the list's resource version never brings them: CI's client-go
// trial once waited 30 minutes with 4,922 of 5,000 pods (78 of the last
// transaction's 96 missing).

// etcdWriters is how many puts are in flight.
const etcdWriters = 16

// etcdClient keeps a connection for each writer (http.DefaultClient keeps
// two idle, so most puts would dial anew).
var etcdClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: etcdWriters}}

// etcdPodKey is where kube-apiserver stores a pod.
func etcdPodKey(pod *corev1.Pod) string {
	return "/registry/pods/" + pod.Namespace + "/" + pod.Name
}

// etcdPodValue is a pod as kube-apiserver stores it.
func etcdPodValue(pod *corev1.Pod) ([]byte, error) {
	stored := *pod
	stored.ResourceVersion = ""
	stored.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	var buf bytes.Buffer
	if err := protobufSerializer().Encode(&stored, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// seedRangeEtcd creates pods from to to of prodpods.New(to) by writing
// them into c's etcd (see above); their namespaces are created through the
// API.
func seedRangeEtcd(ctx context.Context, c *cluster.Cluster, from, to int) error {
	client, err := clientset(c.Config())
	if err != nil {
		return err
	}
	pods := prodpods.New(to)[from:]
	if err := createPodNamespaces(ctx, client, pods); err != nil {
		return err
	}
	// etcd's stop waits for its clients' connections: an idle one kept
	// open made it outlast its 30-s grace period.
	defer etcdClient.CloseIdleConnections()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(etcdWriters)
	for i := range pods {
		g.Go(func() error { return etcdPutPod(gctx, c.EtcdURL(), &pods[i]) })
	}
	return g.Wait()
}

// createPodNamespaces creates the namespaces of pods that do not exist.
func createPodNamespaces(ctx context.Context, client kubernetes.Interface, pods []corev1.Pod) error {
	namespaces := map[string]bool{}
	for i := range pods {
		namespaces[pods[i].Namespace] = true
	}
	for ns := range namespaces {
		_, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}

// etcdPutPod writes pod, at a revision of its own.
func etcdPutPod(ctx context.Context, etcdURL string, pod *corev1.Pod) error {
	value, err := etcdPodValue(pod)
	if err != nil {
		return err
	}
	body, err := json.Marshal(struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}{
		Key:   base64.StdEncoding.EncodeToString([]byte(etcdPodKey(pod))),
		Value: base64.StdEncoding.EncodeToString(value),
	})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, etcdURL+"/v3/kv/put", bytes.NewReader(body))
	if err != nil {
		return err
	}
	resp, err := etcdClient.Do(req)
	if err != nil {
		return fmt.Errorf("etcd put of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || bytes.Contains(answer, []byte(`"error"`)) {
		return fmt.Errorf("etcd put of pod %s/%s: %s: %s", pod.Namespace, pod.Name, resp.Status, answer)
	}
	return nil
}

// checkEtcdForm compares the first n pods, written through the API by
// seedRange, with the same pods as seedRangeEtcd writes them, read back
// from the server: it returns a summary of what differs (empty if
// nothing) and the mean size of each form as protobuf.
func checkEtcdForm(ctx context.Context, c *cluster.Cluster, n int) (summary string, apiBytes, etcdBytes float64, err error) {
	client, err := clientset(c.Config())
	if err != nil {
		return "", 0, 0, err
	}
	generated := prodpods.New(n)
	var diffs []string
	for i := range generated {
		want := &generated[i]
		got, err := client.CoreV1().Pods(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return "", 0, 0, err
		}
		stored, err := etcdPodValue(want)
		if err != nil {
			return "", 0, 0, err
		}
		served, err := etcdPodValue(got)
		if err != nil {
			return "", 0, 0, err
		}
		apiBytes += float64(len(served))
		etcdBytes += float64(len(stored))
		// Identity and times are the server's when written through the
		// API; the managed fields' sets are its own computation.
		diff := cmp.Diff(want, got,
			cmpopts.IgnoreFields(metav1.ObjectMeta{}, "UID", "ResourceVersion", "CreationTimestamp", "Generation"),
			cmpopts.IgnoreFields(metav1.ManagedFieldsEntry{}, "Time", "FieldsV1"),
			cmpopts.IgnoreFields(corev1.PodCondition{}, "LastTransitionTime"),
			cmpopts.EquateEmpty())
		if diff != "" && len(diffs) < 3 {
			diffs = append(diffs, fmt.Sprintf("pod %d (-generated +through the API):\n%s", i, diff))
		}
	}
	return strings.Join(diffs, "\n"), apiBytes / float64(n), etcdBytes / float64(n), nil
}

// protobufSerializer encodes objects as kube-apiserver does in protobuf.
func protobufSerializer() runtime.Encoder {
	info, _ := runtime.SerializerInfoForMediaType(clientgoscheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	return info.Serializer
}
