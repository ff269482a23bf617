package informer

import (
	"slices"
)

// The assignment of a dynamic shard: the hash space is cut into shardSlots
// equal slots, and each slot belongs to the member with the highest
// rendezvous score for it. So the assignment is a pure function of the set
// of members, and a change of membership moves only the slots of the member
// that left, or only those the member that joined now wins.
//
// With 1,024 slots the share of each of 3 members varies by about 4.4%
// (one standard deviation of a binomial share), and a selector names at
// most 512 ranges (alternate slots), about 44 KB, under the API server's
// 100,000-character limit on CEL expressions.

// shardSlotBits is log2 of the number of slots.
const shardSlotBits = 10

// shardSlots is the number of slots of the hash space.
const shardSlots = 1 << shardSlotBits

// slotOf is the slot of hash h: its top shardSlotBits bits.
func slotOf(h uint64) int { return int(h >> (64 - shardSlotBits)) }

// slotSet is a set of slots.
type slotSet [shardSlots / 64]uint64

func (s *slotSet) has(slot int) bool { return s[slot/64]&(1<<(slot%64)) != 0 }
func (s *slotSet) add(slot int)      { s[slot/64] |= 1 << (slot % 64) }

// minus returns the slots of s not in t.
func (s slotSet) minus(t slotSet) slotSet {
	for i := range s {
		s[i] &^= t[i]
	}
	return s
}

// empty reports whether s has no slot.
func (s *slotSet) empty() bool { return *s == slotSet{} }

// ranges returns the hash ranges of s, adjacent slots merged, in order.
func (s *slotSet) ranges() []hashRange {
	var out []hashRange
	for slot := 0; slot < shardSlots; slot++ {
		if !s.has(slot) {
			continue
		}
		start := slot
		for slot+1 < shardSlots && s.has(slot+1) {
			slot++
		}
		out = append(out, hashRange{start: uint64(start) << (64 - shardSlotBits), end: uint64(slot+1) << (64 - shardSlotBits)})
	}
	return out
}

// containsHash reports whether hash h falls in a slot of s.
func (s *slotSet) containsHash(h uint64) bool { return s.has(slotOf(h)) }

// rendezvousScore is member's score for slot: a mix of the member's hash
// and the slot number (splitmix64's finalizer), so that every member ranks
// the slots in an independent order.
func rendezvousScore(memberHash uint64, slot int) uint64 {
	z := memberHash + uint64(slot+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// assignSlots returns the owner of every slot, as an index into members,
// the distinct member names, in any order (the result does not depend on
// it, ties being broken by name). It returns nil for no members.
func assignSlots(members []string) []int {
	if len(members) == 0 {
		return nil
	}
	hashes := make([]uint64, len(members))
	for i, m := range members {
		hashes[i] = shardHash(m)
	}
	owners := make([]int, shardSlots)
	for slot := range owners {
		best := 0
		bestScore := rendezvousScore(hashes[0], slot)
		for i := 1; i < len(members); i++ {
			score := rendezvousScore(hashes[i], slot)
			if score > bestScore || score == bestScore && members[i] < members[best] {
				best, bestScore = i, score
			}
		}
		owners[slot] = best
	}
	return owners
}

// ownedSlots returns the slots members assign to self; none if self is not
// a member.
func ownedSlots(members []string, self string) slotSet {
	var owned slotSet
	me := slices.Index(members, self)
	if me < 0 {
		return owned
	}
	for slot, owner := range assignSlots(members) {
		if owner == me {
			owned.add(slot)
		}
	}
	return owned
}
