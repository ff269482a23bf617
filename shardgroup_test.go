package informer

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
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
