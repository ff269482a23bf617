package informer

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
)

func lease(name, holder string, seconds int32, renew time.Time) coordinationv1.Lease {
	t := metav1.NewMicroTime(renew)
	return coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds, RenewTime: &t},
	}
}

// TestLiveMembersByTheObserversClock checks lease expiry on a fake clock: a
// Lease lives for its duration after its renewal was seen to change,
// whatever time it claims, except at first sight, when a renewal time in
// the past counts; the member itself lives while its own renewals succeed.
func TestLiveMembersByTheObserversClock(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	seen := map[string]leaseSighting{}
	late := clk.Now().Add(-time.Hour) // b's clock is an hour late, or b is dead
	leases := []coordinationv1.Lease{lease("g-a", "a", 3, clk.Now()), lease("g-b", "b", 3, late), lease("g-c", "c", 3, clk.Now().Add(-2*time.Second))}
	live := func(self time.Time) []string {
		return liveMembers(leases, seen, clk.Now(), "self", self, 3*time.Second)
	}
	if diff := cmp.Diff([]string{"a", "c", "self"}, live(clk.Now())); diff != "" {
		t.Errorf("at first (-want +got):\n%s", diff)
	}
	renewed := clk.Now()
	clk.Step(time.Second + 500*time.Millisecond)
	leases[1] = lease("g-b", "b", 3, late.Add(time.Second)) // b renews, by its late clock
	if diff := cmp.Diff([]string{"a", "b", "self"}, live(renewed)); diff != "" {
		t.Errorf("after 1.5s, c expired, b renewed (-want +got):\n%s", diff)
	}
	clk.Step(time.Second)
	leases[0] = lease("g-a", "a", 3, clk.Now()) // a renews; b does not
	leases = leases[:2]                         // c's Lease is deleted
	if diff := cmp.Diff([]string{"a", "b", "self"}, live(renewed)); diff != "" {
		t.Errorf("after 2.5s (-want +got):\n%s", diff)
	}
	clk.Step(2 * time.Second)
	if diff := cmp.Diff([]string{"a"}, live(renewed)); diff != "" {
		t.Errorf("after 4.5s, b expired and self failed to renew (-want +got):\n%s", diff)
	}
	if _, ok := seen["g-c"]; ok {
		t.Errorf("the deleted Lease is still remembered")
	}
}

// TestShardGroupRunJoinsAndLeaves runs a group on a fake clock against a
// fake API: it creates its Lease, sees another member come and go, and
// deletes its Lease when stopped.
func TestShardGroupRunJoinsAndLeaves(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now())
	client := fake.NewClientset()
	g, err := NewShardGroup(client.CoordinationV1(), ShardGroupOptions{Name: "ctl", Namespace: "ns", Identity: "a", LeaseDuration: 3 * time.Second, RenewInterval: time.Second, Clock: clk})
	plMust(t, err)
	ctx, cancel := context.WithCancel(plCtx(t))
	done := make(chan error)
	go func() { done <- g.Run(ctx) }()
	Eventually(t, "member a alone", func() bool { return cmp.Equal(g.Members(), []string{"a"}) })

	other := lease("ctl-b", "b", 3, clk.Now())
	other.Labels = map[string]string{ShardGroupLabel: "ctl"}
	_, err = client.CoordinationV1().Leases("ns").Create(ctx, &other, metav1.CreateOptions{})
	plMust(t, err)
	step := func() {
		Eventually(t, "the renewal ticker waiting", clk.HasWaiters)
		clk.Step(time.Second)
	}
	step()
	Eventually(t, "members a and b", func() bool { return cmp.Equal(g.Members(), []string{"a", "b"}) })
	for range 3 { // b's Lease is not renewed: it expires after 3s
		step()
	}
	Eventually(t, "b expired", func() bool { return cmp.Equal(g.Members(), []string{"a"}) })

	cancel()
	plMust(t, <-done)
	if g.Members() != nil {
		t.Errorf("members after Run returned: %v, want none", g.Members())
	}
	leases, err := client.CoordinationV1().Leases("ns").List(context.Background(), metav1.ListOptions{})
	plMust(t, err)
	if len(leases.Items) != 1 || leases.Items[0].Name != "ctl-b" {
		t.Errorf("Leases left: %v, want only b's", leases.Items)
	}
}

// TestShardGroupDeletesStaleLeases checks that a member deletes the Lease of
// a member gone without deleting it once it has seen the Lease unchanged
// for staleLeaseFactor durations, with preconditions on the version it
// read, and keeps Leases that are renewed; and that a Lease renewed between
// the read and the delete survives.
func TestShardGroupDeletesStaleLeases(t *testing.T) {
	for _, tc := range []struct {
		name string
		// renewOnDelete makes the stale member renew its Lease just before
		// the delete reaches the (precondition-checking) server.
		renewOnDelete bool
	}{
		{name: "crashed member"},
		{name: "renewed before the delete", renewOnDelete: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Now())
			client := fake.NewClientset()
			leases := client.CoordinationV1().Leases("ns")
			ctx, cancel := context.WithCancel(plCtx(t))
			create := func(name, holder, rv string) {
				l := lease(name, holder, 3, clk.Now())
				l.Labels = map[string]string{ShardGroupLabel: "ctl"}
				l.UID, l.ResourceVersion = types.UID("uid-"+holder), rv
				_, err := leases.Create(ctx, &l, metav1.CreateOptions{})
				plMust(t, err)
			}
			create("ctl-crashed", "crashed", "5")
			create("ctl-live", "live", "6")
			var deletes []metav1.DeleteOptions
			var mu sync.Mutex
			// The fake client ignores preconditions: check them here.
			client.PrependReactor("delete", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
				del := action.(k8stesting.DeleteAction)
				mu.Lock()
				deletes = append(deletes, del.GetDeleteOptions())
				mu.Unlock()
				if tc.renewOnDelete && del.GetName() == "ctl-crashed" {
					l := lease("ctl-crashed", "crashed", 3, clk.Now())
					l.Labels = map[string]string{ShardGroupLabel: "ctl"}
					l.UID, l.ResourceVersion = "uid-crashed", "9"
					plMust(t, client.Tracker().Update(coordinationv1.SchemeGroupVersion.WithResource("leases"), &l, "ns"))
				}
				obj, err := client.Tracker().Get(coordinationv1.SchemeGroupVersion.WithResource("leases"), "ns", del.GetName())
				if err != nil {
					return true, nil, err
				}
				cur := obj.(*coordinationv1.Lease)
				if pre := del.GetDeleteOptions().Preconditions; pre != nil && pre.ResourceVersion != nil && *pre.ResourceVersion != cur.ResourceVersion {
					return true, nil, apierrors.NewConflict(coordinationv1.Resource("leases"), del.GetName(), errors.New("resource version changed"))
				}
				return false, nil, nil
			})
			g, err := NewShardGroup(client.CoordinationV1(), ShardGroupOptions{Name: "ctl", Namespace: "ns", Identity: "a", LeaseDuration: 3 * time.Second, RenewInterval: time.Second, Clock: clk})
			plMust(t, err)
			done := make(chan error)
			go func() { done <- g.Run(ctx) }()
			defer func() {
				cancel()
				plMust(t, <-done)
			}()
			renewals := 0
			step := func() {
				Eventually(t, "the renewal ticker waiting", clk.HasWaiters)
				// The live member renews before each of a's readings.
				l, err := leases.Get(ctx, "ctl-live", metav1.GetOptions{})
				plMust(t, err)
				now := metav1.NewMicroTime(clk.Now())
				l.Spec.RenewTime, l.ResourceVersion = &now, "live-"+strconv.Itoa(renewals)
				renewals++
				_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
				plMust(t, err)
				clk.Step(time.Second)
			}
			names := func() []string {
				list, err := leases.List(ctx, metav1.ListOptions{})
				plMust(t, err)
				var out []string
				for _, l := range list.Items {
					out = append(out, l.Name)
				}
				slices.Sort(out)
				return out
			}
			Eventually(t, "a's first reading", func() bool { return len(g.Members()) > 0 })
			// Seen unchanged for 11 s: expired (3 s), not yet stale (12 s).
			for range 11 {
				step()
			}
			Eventually(t, "the crashed member gone from the view", func() bool { return cmp.Equal(g.Members(), []string{"a", "live"}) })
			if diff := cmp.Diff([]string{"ctl-a", "ctl-crashed", "ctl-live"}, names()); diff != "" {
				t.Fatalf("Leases after 11 s (-want +got):\n%s", diff)
			}
			step() // 12 s: stale
			wantDelete := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptrTo(types.UID("uid-crashed")), ResourceVersion: ptrTo("5")}}
			Eventually(t, "the stale Lease's delete", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(deletes) > 0
			})
			mu.Lock()
			if diff := cmp.Diff([]metav1.DeleteOptions{wantDelete}, deletes); diff != "" {
				t.Errorf("deletes (-want +got):\n%s", diff)
			}
			mu.Unlock()
			want := []string{"ctl-a", "ctl-live"}
			if tc.renewOnDelete {
				want = []string{"ctl-a", "ctl-crashed", "ctl-live"}
			}
			if diff := cmp.Diff(want, names()); diff != "" {
				t.Errorf("Leases after 12 s (-want +got):\n%s", diff)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestShardGroupWarnsOfASkewedSplit checks that a member publishes its
// informers' object counts in its Lease and warns once when one live member
// holds far more than the members' mean, and once when the split is even
// again.
func TestShardGroupWarnsOfASkewedSplit(t *testing.T) {
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.BufferLogs(true)))
	clk := testingclock.NewFakeClock(time.Now())
	client := fake.NewClientset()
	leases := client.CoordinationV1().Leases("ns")
	ctx, cancel := context.WithCancel(klog.NewContext(plCtx(t), logger))
	// b and c hold 10 pods each, renewing before each of a's readings.
	renew := func() {
		for _, holder := range []string{"b", "c"} {
			l := lease("ctl-"+holder, holder, 3, clk.Now())
			l.Labels = map[string]string{ShardGroupLabel: "ctl"}
			l.Annotations = map[string]string{shardObjectsAnnotation: `{"pods":10}`}
			if _, err := leases.Update(ctx, &l, metav1.UpdateOptions{}); apierrors.IsNotFound(err) {
				_, err = leases.Create(ctx, &l, metav1.CreateOptions{})
				plMust(t, err)
			} else {
				plMust(t, err)
			}
		}
	}
	renew()
	g, err := NewShardGroup(client.CoordinationV1(), ShardGroupOptions{Name: "ctl", Namespace: "ns", Identity: "a", LeaseDuration: 3 * time.Second, RenewInterval: time.Second, Clock: clk})
	plMust(t, err)
	var pods atomic.Int64
	pods.Store(1000)
	defer g.countObjects("pods", func() (int, bool) { return int(pods.Load()), true })()
	done := make(chan error)
	go func() { done <- g.Run(ctx) }()
	step := func() {
		Eventually(t, "the renewal ticker waiting", clk.HasWaiters)
		renew()
		clk.Step(time.Second)
	}
	for range 3 {
		step()
	}
	pods.Store(12)
	for range 2 {
		step()
	}
	Eventually(t, "the renewal ticker waiting", clk.HasWaiters)
	cancel()
	plMust(t, <-done)

	own, err := leases.Get(context.Background(), "ctl-a", metav1.GetOptions{})
	if err == nil { // deleted when Run returned
		t.Errorf("a's Lease left behind: %v", own)
	}
	type line struct {
		Message       string
		Member        string
		Objects, Mean int
	}
	var got []line
	for _, entry := range logger.GetSink().(ktesting.Underlier).GetBuffer().Data() {
		kv := map[string]any{}
		for i := 0; i+1 < len(entry.ParameterKVList); i += 2 {
			kv[entry.ParameterKVList[i].(string)] = entry.ParameterKVList[i+1]
		}
		if kv["informer"] != "pods" {
			continue
		}
		got = append(got, line{Message: entry.Message, Member: kv["member"].(string), Objects: kv["objects"].(int), Mean: kv["mean"].(int)})
	}
	want := []line{
		{Message: "Warning: one member of the shard group holds far more objects than its share; sharding by namespace with names that differ only at their end does this (see docs/sharding.md)",
			Member: "a", Objects: 1000, Mean: 340},
		{Message: "The shard group's split is even again", Member: "a", Objects: 12, Mean: 11},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("skew log lines (-want +got):\n%s", diff)
	}
}
