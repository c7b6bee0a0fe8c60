package history

import (
	"cmp"
	"slices"
	"time"
)

// The search for a linearization: Wing and Gong's depth-first search with
// Lowe's cache, as porcupine does it, and one rule porcupine lacks: an
// operation that changes nothing where it stands — a sold-out purchase
// where the stock is 0 in every state the model may be in, a read that
// every such state agrees with — is placed at once and is never a choice
// to come back to.
//
// Why the rule: a sold-out buyer that waited in the lock's queue has a
// window of seconds, and a 5% loss on every link puts dozens of them side
// by side. Porcupine tries them in every subset (each subset is a
// different set of operations done, so its cache does not help), and such
// a history went undecided in two minutes where this search takes
// milliseconds (TestLossyHistoriesAreDecided).
//
// Why it is sound and complete: placing such an operation r now, after the
// prefix P, loses nothing. In any linearization that places r later, after
// P·Q, moving r to just after P leaves every later step with the states it
// had before r, a superset of those it had after r (a read keeps only the
// states it agrees with), and a step from more states allows more; every
// operation that returned before r was called is in P already (r is a
// candidate only then), and every one called after r returned comes after
// it still.

// verdict is the search's answer.
type verdict int

const (
	linearizable verdict = iota
	notLinearizable
	timedOut
)

// entry is an operation's call or return in the time-ordered list.
type entry struct {
	op         int    // index into the operations
	ret        *entry // a call's return; nil on a return
	prev, next *entry
}

// states is a set of the model's states, sorted: the states the shop may
// be in after a prefix (a payment of unknown outcome forks).
type states []state

func (s states) equal(t states) bool { return slices.Equal(s, t) }

func (s states) hash() uint64 {
	var h uint64
	for _, st := range s {
		h = mix(h ^ st.hash())
	}
	return h
}

// keep reports whether op is sure to leave every state of s as it is.
func (s states) keep(op modelOp) bool {
	for _, st := range s {
		if !keeps(st, op) {
			return false
		}
	}
	return true
}

// after is the states op may leave from s: empty if it cannot happen.
func (s states) after(op modelOp) states {
	var out states
	for _, st := range s {
		out = append(out, step(st, op)...)
	}
	slices.SortFunc(out, func(a, b state) int {
		return cmp.Or(cmp.Compare(a.stock, b.stock), cmp.Compare(a.vanishing, b.vanishing), cmp.Compare(a.spread, b.spread), cmp.Compare(a.sum, b.sum), cmp.Compare(a.orders, b.orders))
	})
	return slices.Compact(out)
}

// search is one check's state: the list, what is placed, the cache.
type search struct {
	ops    []modelOp
	head   *entry
	placed bitset
	now    states
	stack  []frame
	cache  map[uint64][]cached
	widest int // the most states the search was in at once
}

// frame is an operation placed: the states before it, and whether the rule
// placed it (forced: not a choice).
type frame struct {
	e      *entry
	before states
	forced bool
}

type cached struct {
	placed bitset
	now    states
}

// linearize searches for a linearization of ops (each with its call and
// return, nanoseconds) from init until deadline.
func linearize(ops []modelOp, calls, rets []int64, init state, deadline time.Time) verdict {
	v, _ := linearizeWidth(ops, calls, rets, init, deadline)
	return v
}

// linearizeWidth is linearize, and says the most states the search was in
// at once: what each of its steps costs, times the orders.
func linearizeWidth(ops []modelOp, calls, rets []int64, init state, deadline time.Time) (verdict, int) {
	s := &search{ops: ops, head: entries(calls, rets), placed: newBitset(len(ops)), now: states{init}, cache: map[uint64][]cached{}, widest: 1}
	s.forceNoOps()
	e := s.head.next
	for n := 0; s.head.next != nil; n++ {
		if n%1024 == 0 && time.Now().After(deadline) {
			return timedOut, s.widest
		}
		if e.ret == nil { // a return whose operation is not placed: go back
			var ok bool
			if e, ok = s.back(); !ok {
				return notLinearizable, s.widest
			}
			continue
		}
		if next := s.now.after(ops[e.op]); len(next) > 0 && s.place(e, next, false) {
			if !s.forceNoOps() {
				var ok bool
				if e, ok = s.back(); !ok {
					return notLinearizable, s.widest
				}
				continue
			}
			e = s.head.next
			continue
		}
		e = e.next
	}
	return linearizable, s.widest
}

// place places e's operation, leaving next, unless that was tried before.
func (s *search) place(e *entry, next states, forced bool) bool {
	placed := s.placed.with(e.op)
	h := placed.hash() ^ next.hash()
	for _, c := range s.cache[h] {
		if c.placed.equal(placed) && c.now.equal(next) {
			return false
		}
	}
	s.cache[h] = append(s.cache[h], cached{placed, next})
	s.stack = append(s.stack, frame{e: e, before: s.now, forced: forced})
	s.now, s.placed = next, placed
	s.widest = max(s.widest, len(next))
	lift(e)
	return true
}

// forceNoOps places every candidate that changes nothing, until none is
// left; false if one of them leads where the search has been (a dead end:
// the prefix before them is then one too).
func (s *search) forceNoOps() bool {
	for again := true; again; {
		again = false
		for e := s.head.next; e != nil && e.ret != nil; e = e.next {
			if s.now.keep(s.ops[e.op]) {
				if !s.place(e, s.now, true) {
					return false
				}
				again = true
				break
			}
		}
	}
	return true
}

// back undoes placements up to and including the last choice, and returns
// the entry to try after it; false when there is no choice left.
func (s *search) back() (*entry, bool) {
	for len(s.stack) > 0 {
		f := s.stack[len(s.stack)-1]
		s.stack = s.stack[:len(s.stack)-1]
		s.now, s.placed = f.before, s.placed.without(f.e.op)
		unlift(f.e)
		if !f.forced {
			return f.e.next, true
		}
	}
	return nil, false
}

// entries is the list of calls and returns by time, a call before a
// return at the same time (operations that touch are concurrent), behind
// a head.
func entries(calls, rets []int64) *entry {
	type ev struct {
		t    int64
		ret  bool
		op   int
		node *entry
	}
	evs := make([]ev, 0, 2*len(calls))
	for i := range calls {
		r := &entry{op: i}
		evs = append(evs, ev{calls[i], false, i, &entry{op: i, ret: r}}, ev{rets[i], true, i, r})
	}
	slices.SortStableFunc(evs, func(a, b ev) int {
		if a.t != b.t {
			return cmp.Compare(a.t, b.t)
		}
		if a.ret == b.ret {
			return 0
		}
		if !a.ret {
			return -1
		}
		return 1
	})
	head := &entry{op: -1}
	prev := head
	for _, v := range evs {
		prev.next, v.node.prev = v.node, prev
		prev = v.node
	}
	return head
}

// lift takes a call and its return out of the list; unlift puts them back.
func lift(call *entry) {
	for _, e := range []*entry{call, call.ret} {
		e.prev.next = e.next
		if e.next != nil {
			e.next.prev = e.prev
		}
	}
}

func unlift(call *entry) {
	for _, e := range []*entry{call.ret, call} {
		e.prev.next = e
		if e.next != nil {
			e.next.prev = e
		}
	}
}

// bitset is a set of operations, by index; its methods return new sets.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) with(i int) bitset {
	c := slices.Clone(b)
	c[i/64] |= 1 << (i % 64)
	return c
}

func (b bitset) without(i int) bitset {
	c := slices.Clone(b)
	c[i/64] &^= 1 << (i % 64)
	return c
}

func (b bitset) equal(c bitset) bool { return slices.Equal(b, c) }

func (b bitset) hash() uint64 {
	var h uint64
	for _, w := range b {
		h = mix(h ^ w)
	}
	return h
}
