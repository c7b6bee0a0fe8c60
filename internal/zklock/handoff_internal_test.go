package zklock

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// The hand-off shortcut (handoff.go) must never let a waiter hold where the
// real queue says it does not. Random queues (joins, holders releasing,
// waiters giving up anywhere in the line) are played out; every time a
// waiter's watched node is deleted, what the shortcut concludes from the
// waiter's stale listing is checked against the queue as it really is.
func TestHandoffShortcutAgreesWithTheQueue(t *testing.T) {
	rw := NewReadWriteLock(nil, "/q")
	mutex := standardRule(lockMarker, 1)
	rules := []struct {
		name    string
		rule    func(node string) rule // the rule of the node's owner
		markers []string
	}{
		{"mutex", func(string) rule { return mutex }, []string{lockMarker}},
		{"read/write", func(node string) rule {
			if isWriter(node) {
				return rw.write.q.rule
			}
			return rw.read.q.rule
		}, []string{writeMarker, readMarker}},
	}
	for _, tc := range rules {
		t.Run(tc.name, func(t *testing.T) {
			var checked, viaFirst int
			for trial := range 200 {
				c, f := playQueue(t, trial, tc.rule, tc.markers)
				checked, viaFirst = checked+c, viaFirst+f
			}
			// Not vacuous: the shortcut through a first node was taken.
			if checked == 0 || viaFirst == 0 {
				t.Fatalf("checked %d hand-offs, %d through a node that had been first", checked, viaFirst)
			}
		})
	}
}

// playQueue runs one random queue and returns how many wake-ups it checked
// and in how many the shortcut held only thanks to a first node.
func playQueue(t *testing.T, trial int, ruleOf func(string) rule, markers []string) (checked, viaFirst int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(trial), 7))
	var present []string                // the queue, in sequence order
	first := map[string]bool{}          // nodes that have been at the head
	type waiter struct{ seen []string } // the waiter's last listing
	waiters := map[string]*waiter{}
	watchOf := func(name string, kids []string) (holds bool, watch string) {
		_, holds, _, watch = ruleOf(name).decide(slices.Clone(kids), name)
		return holds, watch
	}
	seq := 0
	for range 300 {
		if len(present) > 0 {
			first[present[0]] = true // the head may hold with nothing ahead
		}
		if len(present) == 0 || rng.IntN(2) == 0 {
			name := fmt.Sprintf("_c_%08d-%s%010d", rng.IntN(1e8), markers[rng.IntN(len(markers))], seq)
			seq++
			present = append(present, name)
			if holds, _ := watchOf(name, present); !holds {
				waiters[name] = &waiter{seen: slices.Clone(present)}
			}
			continue
		}
		// Mostly the head releases; sometimes anyone gives up.
		gone := present[0]
		if rng.IntN(3) == 0 {
			gone = present[rng.IntN(len(present))]
		}
		present = slices.DeleteFunc(present, func(k string) bool { return k == gone })
		delete(waiters, gone)
		for name, w := range waiters {
			if _, watch := watchOf(name, w.seen); watch != gone {
				continue
			}
			checked++
			r := ruleOf(name)
			_, holds, isFirst, _ := r.decide(r.remaining(slices.Clone(w.seen), gone, first[gone]), name)
			_, realHolds, realFirst, _ := r.decide(slices.Clone(present), name)
			// What a mutex waiter keeps instead of its listing (the number
			// of nodes ahead of the one it watches) must decide the same.
			if r.exclusive {
				if byCount := r.countAhead(w.seen, gone) == 0 || first[gone]; byCount != holds {
					t.Fatalf("trial %d: %s woken by %s: by the count of nodes ahead the shortcut holds=%v, by the listing %v",
						trial, name, gone, byCount, holds)
				}
			}
			if holds && !realHolds || isFirst && !realFirst {
				t.Fatalf("trial %d: %s woken by the deletion of %s (first: %v): shortcut holds=%v first=%v, queue %v says holds=%v first=%v",
					trial, name, gone, first[gone], holds, isFirst, present, realHolds, realFirst)
			}
			if holds {
				if _, withoutFirst, _, _ := r.decide(r.remaining(slices.Clone(w.seen), gone, false), name); !withoutFirst {
					viaFirst++
				}
				delete(waiters, name)
				continue
			}
			w.seen = slices.Clone(present) // lists again
			if realHolds {
				delete(waiters, name)
			}
		}
	}
	return checked, viaFirst
}

// A Client remembers, per queue and ordering, the last few nodes it saw
// first in a listing: protected names only, the first by the queue's
// markers, not the first in the listing's order.
func TestSawHeadRecordsTheFirstProtectedNode(t *testing.T) {
	c := &Client{}
	name := func(seq int) string {
		return fmt.Sprintf("_c_%s-lock-%010d", "0f8fad5b-d9cb-469f-a165-70867728950e", seq)
	}
	mutex := []string{lockMarker}
	c.sawHead("/q", mutex, []string{name(7), name(3), name(5)})
	if !c.seenFirst("/q", mutex, name(3)) || c.seenFirst("/q", mutex, name(5)) || c.seenFirst("/q", mutex, name(7)) {
		t.Error("want only the lowest sequence, 3, seen first")
	}
	if c.seenFirst("/other", mutex, name(3)) || c.seenFirst("/q", []string{readMarker}, name(3)) {
		t.Error("a head is known only for its queue and ordering")
	}
	c.sawHead("/q", mutex, []string{"lock-0000000001", name(3)})
	if c.seenFirst("/q", mutex, "lock-0000000001") {
		t.Error("an unprotected name was recorded: after its parent is made again, another node may bear it")
	}
	for seq := 10; seq < 10+headsKept; seq++ {
		c.sawHead("/q", mutex, []string{name(seq)})
	}
	if c.seenFirst("/q", mutex, name(3)) || !c.seenFirst("/q", mutex, name(10)) || !c.seenFirst("/q", mutex, name(9+headsKept)) {
		t.Errorf("want the last %d heads kept: %v", headsKept, c.heads)
	}
	if !isProtected(name(1)) || isProtected("_c_not-a-uuid-at-all-but-long-enough-xxxxx-lock-0000000001") {
		t.Error("isProtected")
	}
}
