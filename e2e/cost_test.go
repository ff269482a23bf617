package e2e

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubetyped/informer/internal/prodpods"
)

// costPods is the number of production-like pods TestCostCommand creates.
const costPods = 60

// TestCostCommand runs cmd/informer-cost against the real server, with a
// kubeconfig, on production-like pods written as a cluster's components
// write them (so that the server records managed fields of three
// managers): it reports the pods of the namespace asked for, with rows of
// their fields, and suggests dropping metadata.managedFields first; an
// unknown resource is an error.
func TestCostCommand(t *testing.T) {
	ctx := t.Context()
	client := newClientset(t)
	ns := newNamespace(ctx, t, client)
	for _, pod := range prodpods.New(costPods) {
		pod.Namespace = ns
		writeCostPod(ctx, t, client, pod)
	}
	dir := t.TempDir()
	kubeconfig, bin := filepath.Join(dir, "kubeconfig"), filepath.Join(dir, "informer-cost")
	if err := testCluster.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/kubetyped/informer/cmd/informer-cost")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	svg := filepath.Join(dir, "cost.svg")
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "-kubeconfig", kubeconfig, "-namespace", ns, "-svg", svg, "pods")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("informer-cost: %v\n%s", err, stderr.String())
	}
	out := stdout.String()
	t.Log("\n" + out)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^pods \(typed, namespace ` + ns + `\): 60 objects, synced in `),
		regexp.MustCompile(`(?m)^ *metadata\.managedFields +[0-9.]+ [KM]iB +[0-9.]+% `),
		regexp.MustCompile(`(?m)^ *spec\.containers +[0-9.]+ [KM]iB `),
		regexp.MustCompile(`(?m)^to drop [^\n]*\n  metadata\.managedFields  `),
	} {
		if !want.MatchString(out) {
			t.Errorf("the output has no match for %s", want)
		}
	}
	if b, err := os.ReadFile(svg); err != nil || !bytes.Contains(b, []byte("metadata.managedFields")) {
		t.Errorf("the SVG: %v, %d bytes without metadata.managedFields", err, len(b))
	}

	cmd = exec.CommandContext(ctx, bin, "-kubeconfig", kubeconfig, "nosuchthings")
	stderr.Reset()
	cmd.Stderr = &stderr
	if err := cmd.Run(); err == nil || !strings.Contains(stderr.String(), "nosuchthings") {
		t.Errorf("an unknown resource: %v, %q", err, stderr.String())
	}
}

// writeCostPod creates pod as kube-controller-manager does, then sets its
// status as kube-scheduler and kubelet do, each through the status
// subresource (as e2e/cmd/realbench's seed does).
func writeCostPod(ctx context.Context, t *testing.T, client kubernetes.Interface, pod corev1.Pod) {
	t.Helper()
	pods := client.CoreV1().Pods(pod.Namespace)
	status := pod.Status
	pod.ResourceVersion, pod.UID, pod.CreationTimestamp, pod.ManagedFields = "", "", metav1.Time{}, nil
	pod.Status = corev1.PodStatus{}
	created, err := pods.Create(ctx, &pod, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
	if err != nil {
		t.Fatalf("create pod %s: %v", pod.Name, err)
	}
	created.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
	updated, err := pods.UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: "kube-scheduler"})
	if err != nil {
		t.Fatalf("schedule pod %s: %v", pod.Name, err)
	}
	updated.Status = status
	if _, err := pods.UpdateStatus(ctx, updated, metav1.UpdateOptions{FieldManager: "kubelet"}); err != nil {
		t.Fatalf("set the status of pod %s: %v", pod.Name, err)
	}
}
