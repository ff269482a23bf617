// Command e2e-cluster runs the end-to-end tests' etcd and kube-apiserver in
// the foreground for use by hand (hack/cluster-up.sh starts it, and
// hack/cluster-down.sh stops it). It writes a kubeconfig once the API server
// is ready and stops both servers on SIGINT or SIGTERM.
//
// -apiserver-arg adds a flag to kube-apiserver's command line, and may be
// repeated: -apiserver-arg=--feature-gates=ShardedListAndWatch=true enables
// the gate that sharded informers need (docs/sharding.md).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kubetyped/informer/e2e/internal/cluster"
)

func main() {
	assets := flag.String("assets", os.Getenv("KUBE_ASSETS"), "directory with the etcd and kube-apiserver binaries")
	dir := flag.String("dir", "", "existing directory for the servers' data, certificates and logs")
	kubeconfig := flag.String("kubeconfig", "", "where to write the kubeconfig (default DIR/kubeconfig)")
	timeout := flag.Duration("start-timeout", 3*time.Minute, "how long the servers may take to start")
	var apiserverArgs stringList
	flag.Var(&apiserverArgs, "apiserver-arg", "a flag added to kube-apiserver's command line, as --name=value (repeatable; one the harness sets is replaced)")
	flag.Parse()
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "e2e-cluster: -dir is required")
		os.Exit(2)
	}
	if *kubeconfig == "" {
		*kubeconfig = *dir + "/kubeconfig"
	}
	opts := cluster.Options{Assets: *assets, Dir: *dir, APIServerArgs: apiserverArgs}
	if err := run(opts, *kubeconfig, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-cluster:", err)
		os.Exit(1)
	}
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, " ") }

// Set adds one value; a value that is not a flag is refused, so that a
// mistyped gate fails here and not as an unexplained server start failure.
func (l *stringList) Set(v string) error {
	if !strings.HasPrefix(v, "--") || !strings.Contains(v, "=") {
		return fmt.Errorf("%q: want --name=value", v)
	}
	*l = append(*l, v)
	return nil
}

func run(opts cluster.Options, kubeconfig string, timeout time.Duration) error {
	// Listen before starting so that a signal during the start still stops
	// the servers instead of killing this process with them running.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, timeout)
	c, err := cluster.Start(startCtx, opts)
	cancel()
	if err != nil {
		return err
	}
	// Written under a temporary name and renamed, so that whoever waits
	// for the file never reads half of it.
	tmp := kubeconfig + ".tmp"
	if err := c.WriteKubeconfig(tmp); err != nil {
		return fmt.Errorf("%w (stopping: %v)", err, c.Stop())
	}
	if err := os.Rename(tmp, kubeconfig); err != nil {
		return fmt.Errorf("%w (stopping: %v)", err, c.Stop())
	}
	fmt.Println("ready; kubeconfig:", kubeconfig)
	<-ctx.Done()
	fmt.Println("stopping")
	return c.Stop()
}
