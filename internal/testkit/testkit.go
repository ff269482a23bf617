// Package testkit holds the test helpers that the root package's tests and
// internal/wire's tests share: polling, a fast whole-value diff, the test
// pod constructor and a protobuf encoder. Only tests import it.
package testkit

import (
	"bytes"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Timeout bounds every wait of the tests: generous, so that it guards
// against hangs on a loaded machine and asserts no speed.
const Timeout = 20 * time.Second

// Eventually polls cond until it holds, failing t after Timeout. It is the
// one polling helper of the tests, internal and external; WaitUntil is its
// loop, for the few waits that report an error instead of failing.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !WaitUntil(cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// WaitUntil polls cond until it holds, and reports whether it did within
// Timeout.
func WaitUntil(cond func() bool) bool {
	deadline := time.Now().Add(Timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// NewPod returns a pod for tests with the given namespace, name and resource
// version; opts change it further (PodLabels, PodNode). It is the one pod
// constructor of the tests, internal and external (Examples keep their own,
// so that they read as complete programs).
func NewPod(namespace, name, rv string, opts ...func(*corev1.Pod)) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, ResourceVersion: rv}}
	for _, opt := range opts {
		opt(pod)
	}
	return pod
}

// PodLabels sets a test pod's labels (see NewPod).
func PodLabels(labels map[string]string) func(*corev1.Pod) {
	return func(pod *corev1.Pod) { pod.Labels = labels }
}

// PodNode sets the node a test pod runs on (see NewPod).
func PodNode(node string) func(*corev1.Pod) {
	return func(pod *corev1.Pod) { pod.Spec.NodeName = node }
}

// DiffLarge is cmp.Diff for the randomized tests that compare thousands of
// large objects (decodes, deduplicated copies) which are nearly always
// equal: when reflect.DeepEqual finds the values equal, cmp.Diff would find
// nothing, and it costs a small fraction of cmp.Diff, which computes an
// edit script for every slice. Under -race TestShareChangesNoValueOfRandomPods
// took 24.5 s with cmp.Diff alone, and over 240 s on a loaded machine,
// enough to time the package out.
func DiffLarge(want, got any, opts ...cmp.Option) string {
	if reflect.DeepEqual(want, got) {
		return ""
	}
	return cmp.Diff(want, got, opts...)
}

// EncodeProtobuf encodes obj, a type of client-go's scheme, in Kubernetes'
// protobuf encoding (the magic prefix and a runtime.Unknown envelope).
func EncodeProtobuf(tb testing.TB, obj runtime.Object) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := protobuf.NewSerializer(clientgoscheme.Scheme, clientgoscheme.Scheme).Encode(obj, &buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// WirePod returns the pod of the wire tests: metadata, spec and status
// with a field of each kind DropFields drops (managed fields, an
// annotation, container env, conditions), and an annotation holding what a
// JSON splitter must skip in a string: brackets, an escaped quote,
// backslash and newline.
func WirePod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "p", ResourceVersion: "7",
			Annotations:   map[string]string{"drop.example.com/a": "x", "keep": "y \"}]{[\\\n"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m", Operation: metav1.ManagedFieldsOperationApply, FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}},
		},
		Spec: corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{
			{Name: "a", Env: []corev1.EnvVar{{Name: "E", Value: "v"}}},
			{Name: "b"},
		}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

// RoundTripFunc is an http.RoundTripper that calls itself: a scripted
// server for tests of clients and transports.
type RoundTripFunc func(*http.Request) (*http.Response, error)

// RoundTrip implements http.RoundTripper.
func (f RoundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
