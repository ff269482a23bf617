package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// fleetControllerTimeout bounds TestFleetController: two API servers
// starting (unless the suite started them), the example built, and its
// convergence twice, on a loaded machine.
const fleetControllerTimeout = 5 * time.Minute

// TestFleetController runs crcache's example fleet controller
// (crcache/examples/fleetcontroller, built here) over three clusters, the
// harness's API server and two of their own over its etcd, and checks that
// it converges: every cluster's status ConfigMap lists the ConfigMaps
// labelled fleet=demo of all three clusters (cmp.Diff of each cluster's
// status against what the test wrote), first for the ConfigMaps written
// before it starts, then after changes while it runs (a value updated, a
// ConfigMap deleted, one unlabelled, one created in another cluster).
// ConfigMaps not labelled fleet=demo are in no status.
func TestFleetController(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), fleetControllerTimeout)
	defer cancel()
	configs := map[string]*rest.Config{"one": restConfig}
	for _, name := range []string{"two", "three"} {
		s, err := extraAPIServer(ctx, name)
		if err != nil {
			t.Fatalf("API server %s: %v", name, err)
		}
		configs[name] = s.Config()
	}
	clients := map[string]kubernetes.Interface{}
	namespaces := map[string]string{} // each cluster's namespace of the test
	for name, config := range configs {
		clients[name] = newClientsetFor(t, config)
		namespaces[name] = newNamespace(ctx, t, clients[name])
	}
	// The status is written in the harness's namespace of the test, in
	// every cluster (a namespace of that name exists in each).
	statusNS := namespaces["one"]
	for name, client := range clients {
		if name != "one" {
			if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: statusNS}}, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create namespace %s in %s: %v", statusNS, name, err)
			}
		}
	}

	want := map[string]string{} // the status every cluster must show
	put := func(cluster, name, value string, demo bool) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespaces[cluster]}, Data: map[string]string{"value": value}}
		if demo {
			cm.Labels = map[string]string{"fleet": "demo"}
		}
		cms := clients[cluster].CoreV1().ConfigMaps(cm.Namespace)
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
			_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
			if err != nil {
				t.Fatalf("update ConfigMap %s in %s: %v", name, cluster, err)
			}
		} else if err != nil {
			t.Fatalf("create ConfigMap %s in %s: %v", name, cluster, err)
		}
		key := cluster + "." + cm.Namespace + "." + name
		if demo {
			want[key] = value
		} else {
			delete(want, key)
		}
	}
	remove := func(cluster, name string) {
		t.Helper()
		if err := clients[cluster].CoreV1().ConfigMaps(namespaces[cluster]).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatalf("delete ConfigMap %s in %s: %v", name, cluster, err)
		}
		delete(want, cluster+"."+namespaces[cluster]+"."+name)
	}
	for _, cluster := range []string{"one", "two", "three"} {
		put(cluster, "demo-a", cluster+"-a", true)
		put(cluster, "demo-b", cluster+"-b", true)
		put(cluster, "other", "not reported", false)
	}

	// The controller, with a kubeconfig per cluster.
	dir := t.TempDir()
	bin := filepath.Join(dir, "fleetcontroller")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/kubetyped/informer/crcache/examples/fleetcontroller")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	args := []string{"-namespace", statusNS}
	for name, config := range configs {
		path := filepath.Join(dir, name+".kubeconfig")
		writeKubeconfig(t, config, path)
		args = append(args, "-cluster", name+"="+path)
	}
	var logs syncBuffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("fleetcontroller exited: %v", err)
			}
		case <-time.After(time.Minute):
			_ = cmd.Process.Kill()
			t.Errorf("fleetcontroller did not stop within a minute of SIGTERM")
		}
		if t.Failed() {
			t.Logf("fleetcontroller's output:\n%s", logs.String())
		}
	}()

	converged := func(what string) {
		t.Helper()
		got := map[string]map[string]string{}
		err := pollUntil(ctx, func() bool {
			for name, client := range clients {
				cm, err := client.CoreV1().ConfigMaps(statusNS).Get(ctx, "fleet-demo-status", metav1.GetOptions{})
				if err != nil {
					got[name] = map[string]string{"error": err.Error()}
					continue
				}
				got[name] = cm.Data
			}
			return cmp.Diff(map[string]map[string]string{"one": want, "two": want, "three": want}, got) == ""
		})
		if err != nil {
			t.Fatalf("%s: not converged: every cluster's status (-want +got):\n%s", what,
				cmp.Diff(map[string]map[string]string{"one": want, "two": want, "three": want}, got))
		}
		t.Logf("%s: converged %v after the controller's start", what, time.Since(began).Round(time.Millisecond))
	}
	converged("the ConfigMaps written before the start")

	put("one", "demo-a", "one-a, changed", true)
	remove("two", "demo-b")
	put("three", "demo-a", "three-a, unlabelled", false)
	put("two", "demo-c", "two-c", true)
	converged("after changes in every cluster")

	select {
	case err := <-exited:
		t.Fatalf("fleetcontroller exited early: %v", err)
	default:
	}
}

// writeKubeconfig writes a kubeconfig file for config (a server's address,
// CA and bearer token, as the harness's configs have).
func writeKubeconfig(t *testing.T, config *rest.Config, path string) {
	t.Helper()
	kubeconfig := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"e2e": {Server: config.Host, CertificateAuthorityData: config.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"e2e": {Token: config.BearerToken}},
		Contexts:       map[string]*clientcmdapi.Context{"e2e": {Cluster: "e2e", AuthInfo: "e2e"}},
		CurrentContext: "e2e",
	}
	if err := clientcmd.WriteToFile(kubeconfig, path); err != nil {
		t.Fatal(err)
	}
}

// syncBuffer is a bytes.Buffer for a process's output, read while it runs.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
