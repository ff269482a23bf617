package informer

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// owners returns each slot's owner by name.
func owners(members []string) []string {
	idx := assignSlots(members)
	if idx == nil {
		return nil
	}
	out := make([]string, len(idx))
	for slot, i := range idx {
		out[slot] = members[i]
	}
	return out
}

// checkAssignment checks that ownedSlots gives every slot to exactly one
// member, the one assignSlots names, whatever the order of members.
func checkAssignment(t *testing.T, members []string, rng *rand.Rand) []string {
	t.Helper()
	want := owners(members)
	shuffled := slices.Clone(members)
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	if got := owners(shuffled); !slices.Equal(want, got) {
		t.Fatalf("the assignment of %v depends on the members' order (-sorted +shuffled):\n%s", members, cmp.Diff(want, got))
	}
	var union slotSet
	total := 0
	for _, m := range members {
		var owned slotSet
		for slot, owner := range want {
			if owner == m {
				owned.add(slot)
			}
		}
		if rng.IntN(len(members)) == 0 && ownedSlots(shuffled, m) != owned {
			t.Fatalf("ownedSlots(%v, %s) disagrees with assignSlots", shuffled, m)
		}
		union = union.union(owned)
		total += owned.count()
	}
	if len(members) > 0 && (total != shardSlots || union.count() != shardSlots) {
		t.Fatalf("members %v own %d slots in all, %d distinct; want each of %d once", members, total, union.count(), shardSlots)
	}
	return want
}

// TestShardAssignmentOverRandomJoinsAndLeaves checks the assignment's
// properties over random sequences of joins and leaves: it is a function of
// the set of members, gives each slot to exactly one member, and a change
// moves only the slots of the member that left, or only slots to the one
// that joined.
func TestShardAssignmentOverRandomJoinsAndLeaves(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for seq := range 50 {
		var members []string
		var before []string
		next := 0
		for step := range 40 {
			leave := len(members) > 0 && (len(members) >= 12 || rng.IntN(2) == 0)
			var changed string
			if leave {
				i := rng.IntN(len(members))
				changed = members[i]
				members = slices.Delete(members, i, i+1)
			} else {
				changed = fmt.Sprintf("replica-%d-%x", next, rng.Uint32())
				next++
				members = append(members, changed)
			}
			after := checkAssignment(t, members, rng)
			for slot := range shardSlots {
				switch {
				case before == nil || after == nil || before[slot] == after[slot]:
				case leave && before[slot] != changed:
					t.Fatalf("seq %d step %d: %s left, yet slot %d moved from %s to %s", seq, step, changed, slot, before[slot], after[slot])
				case !leave && after[slot] != changed:
					t.Fatalf("seq %d step %d: %s joined, yet slot %d moved from %s to %s", seq, step, changed, slot, before[slot], after[slot])
				}
			}
			before = after
		}
	}
}

func TestShardAssignmentSpreadsTheSlots(t *testing.T) {
	for n := 1; n <= 8; n++ {
		var members []string
		for i := range n {
			members = append(members, fmt.Sprintf("member-%d", i))
		}
		ideal := float64(shardSlots) / float64(n)
		for _, m := range members {
			owned := ownedSlots(members, m)
			if got := float64(owned.count()); got < 0.85*ideal || got > 1.15*ideal {
				t.Errorf("%d members: %s owns %v slots, more than 15%% off %.0f", n, m, got, ideal)
			}
		}
	}
}

func TestSlotSetRanges(t *testing.T) {
	var s slotSet
	for _, slot := range []int{0, 1, 2, 7, shardSlots - 1} {
		s.add(slot)
	}
	step := uint64(1) << (64 - shardSlotBits)
	want := []hashRange{{0, 3 * step}, {7 * step, 8 * step}, {(shardSlots - 1) * step, 0}}
	if diff := cmp.Diff(want, s.ranges(), cmp.AllowUnexported(hashRange{})); diff != "" {
		t.Errorf("ranges (-want +got):\n%s", diff)
	}
	for _, h := range []uint64{0, 3*step - 1, 7 * step, ^uint64(0)} {
		if !s.containsHash(h) {
			t.Errorf("%x not in %v", h, s.ranges())
		}
	}
	for _, h := range []uint64{3 * step, 8 * step, (shardSlots-1)*step - 1} {
		if s.containsHash(h) {
			t.Errorf("%x in %v", h, s.ranges())
		}
	}
	if got := shardSelector(ShardByUID, s.ranges()[2:]); got != "shardRange(object.metadata.uid, '0xffc0000000000000', '0x10000000000000000')" {
		t.Errorf("selector of the last slot: %s", got)
	}
}

// union returns the slots in s or t.
func (s slotSet) union(t slotSet) slotSet {
	for i := range s {
		s[i] |= t[i]
	}
	return s
}

// count returns the number of slots in s.
func (s *slotSet) count() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}
