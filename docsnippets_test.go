package informer_test

// The code of README.md. docs_test.go checks that every code block of the
// README appears in this file or in the migration examples.

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informer"
)

func readmeWebPods(ctx context.Context, config *rest.Config) ([]*corev1.Pod, error) {
	factory, err := informer.NewFactory(config, informer.FactoryOptions{DropFields: []string{informer.ManagedFields}})
	if err != nil {
		return nil, err
	}
	defer factory.Shutdown()
	pods, err := informer.For(factory, informer.InformerOptions[*corev1.Pod]{}) // the factory's one shared pod informer
	if err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx)
	_, err = pods.AddEventHandler(informer.ResourceEventHandlerFuncs[*corev1.Pod]{
		UpdateFunc: func(old, pod *corev1.Pod) { logger.Info("Updated", "pod", klog.KObj(pod), "phase", pod.Status.Phase) },
		DeleteFunc: func(d informer.DeletedObject[*corev1.Pod]) { logger.Info("Deleted", "pod", d.Name) },
	})
	if err != nil {
		return nil, err
	}
	factory.Start(ctx)
	if _, err := factory.WaitForCacheSync(ctx); err != nil {
		return nil, err
	}
	return pods.Lister().Namespace("default").List(labels.SelectorFromSet(labels.Set{"app": "web"}))
}

// The README's example, run against the fake API server of the migration
// examples.
func Example_readme() {
	srv := docsCluster()
	defer srv.Close()
	web, err := readmeWebPods(context.Background(), srv.Config())
	fmt.Println(podNames(web), err)
	// Output:
	// [default/web-1 default/web-2] <nil>
}

// readmeKubeconfig points TestReadmeMain at a cluster, such as the one
// hack/cluster-up.sh starts (see README.md), instead of a fake API server.
var readmeKubeconfig = flag.String("kubeconfig", "", "run TestReadmeMain against the cluster of this kubeconfig file")

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// errReadmeKubeconfigEmpty fails TestReadmeMain when -kubeconfig is given
// empty: the README's command for a real cluster passes "$KUBECONFIG", and
// must not pass against the fake API server when KUBECONFIG is not set.
const errReadmeKubeconfigEmpty = "-kubeconfig is empty: KUBECONFIG must point to the kubeconfig of a real cluster " +
	`(eval "$(hack/cluster-up.sh)" starts one and sets it); without -kubeconfig, TestReadmeMain runs against a fake API server`

// flagGiven reports whether the command line set the flag name, even to "".
func flagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// TestReadmeMain runs the README's program (readme_main_test.go): against
// the fake API server of the migration examples, it prints the pods, then a
// change, and returns once its context ends. With -kubeconfig, it runs
// against that cluster instead, and fails if the flag is given empty.
func TestReadmeMain(t *testing.T) {
	var srv *fakeAPIServer
	var config *rest.Config
	if *readmeKubeconfig == "" && flagGiven("kubeconfig") {
		t.Fatal(errReadmeKubeconfigEmpty)
	}
	if *readmeKubeconfig != "" {
		var err error
		if config, err = clientcmd.BuildConfigFromFlags("", *readmeKubeconfig); err != nil {
			t.Fatal(err)
		}
	} else {
		srv = docsCluster()
		t.Cleanup(srv.Close)
		config = srv.Config()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, config, out) }()
	informer.Eventually(t, "the pods printed", func() bool { return strings.Contains(out.String(), " pods\n") })
	if srv == nil {
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		t.Logf("output:\n%s", out)
		return
	}
	srv.Delete(podsResource, docsPod("default", "db-1", "db", "node-2"))
	informer.Eventually(t, "the deletion printed", func() bool { return strings.Contains(out.String(), "deleted") })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// The lister's order is the cache's: compare the pod lines sorted.
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	slices.Sort(lines[1:5])
	want := []string{"4 pods", "  default/db-1 Pending", "  default/web-1 Pending", "  default/web-2 Pending", "  shop/cart-1 Pending", "deleted default/db-1"}
	if diff := cmp.Diff(want, lines); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}

// TestEmptyKubeconfigFailsTheReadmeCommand runs the README's command for a
// real cluster with KUBECONFIG unset, that is with -kubeconfig="", in a
// copy of this test binary: it must fail, saying why, not pass against the
// fake API server.
func TestEmptyKubeconfigFailsTheReadmeCommand(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestReadmeMain$", "-kubeconfig=")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("TestReadmeMain -kubeconfig= ended with %v, want exit status 1; output:\n%s", err, out)
	}
	if !strings.Contains(string(out), errReadmeKubeconfigEmpty) {
		t.Errorf("TestReadmeMain -kubeconfig= does not say %q; output:\n%s", errReadmeKubeconfigEmpty, out)
	}
}
