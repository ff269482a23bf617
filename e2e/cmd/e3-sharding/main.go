// Command e3-sharding measures workload E3 of shared/benchmarks.md: replicas
// of one controller share the pods of a namespace through dynamic shards
// coordinated by Leases, on a local kube-apiserver with the
// ShardedListAndWatch gate that it starts itself (from $KUBE_ASSETS, see
// hack/README.md). For each run it creates the pods, starts the replicas
// and reports the objects each holds, then crashes one (its Lease stays
// until it expires) and reports how long the survivors took to cover its
// range, then starts a new one and reports the rebalance; after each step
// it compares the replicas' caches with a LIST.
//
//	go run ./cmd/e3-sharding -pods 3000 -runs 3
//
// The replicas run in this process, each with its own clients, so the
// figures include no network but loopback. Times are from the change (the
// crash, the start of the new replica) until every replica sees the same
// members and the caches partition a LIST.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kubetyped/informer/e2e/internal/cluster"
	"github.com/kubetyped/informer/e2e/internal/replica"
)

func main() {
	assets := flag.String("assets", os.Getenv("KUBE_ASSETS"), "directory with the etcd and kube-apiserver binaries")
	pods := flag.Int("pods", 3000, "pods to share")
	replicas := flag.Int("replicas", 3, "replicas sharing them")
	runs := flag.Int("runs", 3, "runs, each in a namespace of its own")
	lease := flag.Duration("lease", 5*time.Second, "the group's Lease duration")
	renew := flag.Duration("renew", time.Second, "the group's renewal interval")
	flag.Parse()
	klog.SetOutput(os.Stderr)
	if err := run(*assets, *pods, *replicas, *runs, *lease, *renew); err != nil {
		fmt.Fprintln(os.Stderr, "e3-sharding:", err)
		os.Exit(1)
	}
}

// result is what one run measured.
type result struct {
	held, afterCrash, afterJoin    []int
	settle, takeover, rebalance    time.Duration
	diffs                          [3]replica.Differences
	relistUpdates, movedToNewcomer int
	newcomerHeld                   int
}

func run(assets string, pods, replicas, runs int, lease, renew time.Duration) error {
	dir, err := os.MkdirTemp("", "e3-sharding-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ctx := context.Background()
	startCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	c, err := cluster.Start(startCtx, cluster.Options{Assets: assets, Dir: dir, APIServerArgs: []string{"--feature-gates=ShardedListAndWatch=true"}})
	cancel()
	if err != nil {
		return err
	}
	defer c.Stop()
	config := c.Config()
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	var results []result
	for i := range runs {
		fmt.Fprintf(os.Stderr, "run %d of %d\n", i+1, runs)
		res, err := measure(ctx, config, client, pods, replicas, lease, renew)
		if err != nil {
			return fmt.Errorf("run %d: %w", i+1, err)
		}
		results = append(results, res)
	}
	report(results, pods, replicas, lease, renew)
	return nil
}

func measure(ctx context.Context, config *rest.Config, client kubernetes.Interface, pods, n int, lease, renew time.Duration) (result, error) {
	var res result
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	ns, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e3-"}}, metav1.CreateOptions{})
	if err != nil {
		return res, err
	}
	if err := replica.CreatePods(ctx, client, ns.Name, pods); err != nil {
		return res, err
	}
	opts := replica.Options{Namespace: ns.Name, Group: "e3", LeaseDuration: lease, RenewInterval: renew}
	var members []*replica.Replica
	defer func() {
		for _, m := range members {
			m.Stop()
		}
	}()
	for i := range n {
		m, err := replica.Start(ctx, config, opts, fmt.Sprintf("replica-%d", i))
		if err != nil {
			return res, err
		}
		members = append(members, m)
	}
	if res.settle, res.diffs[0], err = replica.WaitSettled(ctx, client, ns.Name, members); err != nil {
		return res, err
	}
	res.held = res.diffs[0].Held

	crashed := members[n-1]
	crashed.Crash()
	members = members[:n-1]
	if res.takeover, res.diffs[1], err = replica.WaitSettled(ctx, client, ns.Name, members); err != nil {
		return res, err
	}
	res.afterCrash = res.diffs[1].Held

	var updates []int
	for _, m := range members {
		updates = append(updates, m.Updates())
		m.TakeMoved()
	}
	start := time.Now()
	newcomer, err := replica.Start(ctx, config, opts, fmt.Sprintf("replica-%d", n))
	if err != nil {
		return res, err
	}
	members = append(members, newcomer)
	if _, res.diffs[2], err = replica.WaitSettled(ctx, client, ns.Name, members); err != nil {
		return res, err
	}
	res.rebalance = time.Since(start)
	res.afterJoin = res.diffs[2].Held
	for i, m := range members[:n-1] {
		res.relistUpdates += m.Updates() - updates[i]
		res.movedToNewcomer += len(m.TakeMoved())
	}
	res.newcomerHeld = len(newcomer.Keys())
	return res, nil
}

func median(d []time.Duration) time.Duration {
	d = slices.Clone(d)
	slices.Sort(d)
	return d[len(d)/2]
}

func report(results []result, pods, n int, lease, renew time.Duration) {
	fmt.Printf("E3: %d pods, %d replicas, Lease %v, renewal %v, %d runs\n\n", pods, n, lease, renew, len(results))
	fmt.Println("| run | held by each (share of N/replicas) | settle | takeover of a crashed replica | held after | rebalance with a new replica | held after | updates to the others (relists) | moved = newcomer holds | differences from a LIST (3 checks) |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	var settle, takeover, rebalance []time.Duration
	for i, r := range results {
		var shares []string
		for _, h := range r.held {
			shares = append(shares, fmt.Sprintf("%d (%.0f%%)", h, 100*float64(h)*float64(n)/float64(pods)))
		}
		fmt.Printf("| %d | %s | %v | %v | %v | %v | %v | %d | %d = %d | %d, %d, %d |\n", i+1, strings.Join(shares, ", "),
			r.settle.Round(time.Millisecond), r.takeover.Round(time.Millisecond), r.afterCrash, r.rebalance.Round(time.Millisecond), r.afterJoin,
			r.relistUpdates, r.movedToNewcomer, r.newcomerHeld, r.diffs[0].Total(), r.diffs[1].Total(), r.diffs[2].Total())
		settle, takeover, rebalance = append(settle, r.settle), append(takeover, r.takeover), append(rebalance, r.rebalance)
	}
	fmt.Printf("\nmedians: settle %v, takeover %v (bound: Lease %v + 2 renewals %v + a sync), rebalance %v\n",
		median(settle).Round(time.Millisecond), median(takeover).Round(time.Millisecond), lease, 2*renew, median(rebalance).Round(time.Millisecond))
}
