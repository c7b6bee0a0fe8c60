package history

import (
	"fmt"
	"strings"

	"github.com/anishathalye/porcupine"
)

// An order's state in the model, one byte an order.
const (
	absent  byte = 0
	unpaid  byte = 'u'
	doomed  byte = 'd' // unpaid, but past its deadline: a payment was refused expired, the sweeper will expire it
	paid    byte = 'p'
	expired byte = 'e'
)

// state is a goods' stock and its orders' states, by the order's index in
// the goods' history: a comparable value, so that porcupine's cache and
// the forks of the nondeterministic model compare them cheaply.
type state struct {
	stock  int32
	orders string
	// vanishing is how many pieces purchases that left no order took
	// from the stock, visible until a crash gives them back (see Crash).
	vanishing int32
	// spread is how many more pieces such purchases may have taken: the
	// state stands for the stocks stock-k, with vanishing+k, for every k
	// from 0 to spread (stock-spread >= 0). One state for them all: each
	// such purchase would otherwise fork the state, and a sale cut off by
	// a crash has thousands of them.
	spread int32
	// sum is a hash of orders, kept up to date by with: a state is hashed
	// without reading its orders, which are as many as the sale's.
	sum uint64
}

// modelOp is an operation as the model steps it: the recorded op and the
// index of its order in the goods' history.
type modelOp struct {
	Op
	idx   int
	idxs  []int          // Expire: its orders'
	final map[int]string // FinalRows: each order's status, by index
}

// model is the shop, for one goods: stock initially, n orders that may
// come to exist. Its Step is nondeterministic: a payment whose outcome the
// client never learned forks into "paid" and "not paid".
func model(stock int32, n int) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Init: func() []any { return []any{start(stock, n)} },
		Step: func(st, in, _ any) []any {
			var out []any
			for _, s := range step(st.(state), in.(modelOp)) {
				out = append(out, s)
			}
			return out
		},
		Equal:             func(a, b any) bool { return a.(state) == b.(state) },
		Hash:              func(s any) uint64 { return s.(state).hash() },
		DescribeOperation: func(in, _ any) string { return in.(modelOp).String() },
		DescribeState: func(s any) string {
			st := s.(state)
			counts := map[byte]int{}
			for i := 0; i < len(st.orders); i++ {
				counts[st.orders[i]]++
			}
			return fmt.Sprintf("stock %d to %d (%d to %d of it taken until a crash); orders unpaid %d (past deadline %d), paid %d, expired %d",
				st.stock-st.spread, st.stock, st.vanishing+st.spread, st.vanishing, counts[unpaid]+counts[doomed], counts[doomed], counts[paid], counts[expired])
		},
	}
	return nm.ToModel()
}

// start is a goods' state before the sale: stock, and n orders absent.
func start(stock int32, n int) state {
	return state{stock: stock, orders: strings.Repeat("\x00", n)}
}

// with is s with order i in state b.
func (s state) with(i int, b byte) state {
	if s.orders[i] == b {
		return s
	}
	o := []byte(s.orders)
	s.sum ^= orderSum(i, o[i]) ^ orderSum(i, b)
	o[i] = b
	s.orders = string(o)
	return s
}

// orderSum is order i's part in a state's sum when its state is b
// (Zobrist's hashing: the sum is the XOR of its orders' parts, an absent
// order's part 0, so that a change of one order changes the sum in O(1)).
func orderSum(i int, b byte) uint64 {
	if b == absent {
		return 0
	}
	return mix(uint64(i)<<8 | uint64(b))
}

// hash is s's hash: its stock, its vanishing pieces and its orders' sum.
func (s state) hash() uint64 {
	return mix(mix(uint64(uint32(s.stock))<<32|uint64(uint32(s.vanishing)))^uint64(s.spread)) ^ s.sum
}

// mix is splitmix64's finalizer: every bit of x moves about half of the
// result's.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// keeps reports whether op, in s, is sure to leave s as it is: step(s, op)
// is then exactly [s]. It reads no more than the order op is about, so the
// search can tell the operations that change nothing without building the
// states they would leave. A false answer only costs the search that
// shortcut.
func keeps(s state, op modelOp) bool {
	st := byte(absent)
	if op.idx >= 0 {
		st = s.orders[op.idx]
	}
	switch op.Kind {
	case Buy:
		return op.Result == OK && st != absent || op.Result == SoldOut && s.stock == 0 || op.Result == Unknown && s.spread == s.stock
	case Crash:
		return s.vanishing == 0 && s.spread == 0
	case Pay:
		switch op.Result {
		case OK:
			return st == paid
		case Expired:
			return st == expired || st == doomed
		case NotFound:
			return st == absent
		case Unknown:
			return st != unpaid
		}
	case ReadGoods:
		return op.Stock == s.stock && s.spread == 0
	case ReadOrder:
		return op.Result == NotFound && st == absent || op.Result == OK && op.Status == statusOf(st) && st != absent
	}
	return false
}

// step is what op may have done to s: the states after it, none if it
// cannot have happened in s.
func step(s state, op modelOp) []state {
	st := byte(absent)
	if op.idx >= 0 {
		st = s.orders[op.idx]
	}
	switch op.Kind {
	case Buy:
		switch {
		case op.Result == OK && st != absent:
			return []state{s} // the request id's order, replayed
		case op.Result == OK && s.stock > 0: // in the states with a piece left
			s.stock--
			s.spread = min(s.spread, s.stock)
			return []state{s.with(op.idx, unpaid)}
		case op.Result == SoldOut && s.stock <= s.spread: // in the one with none left
			return []state{s.only(0)}
		case op.Result == Unknown: // left no order: nothing, or a piece seen taken until a crash
			s.spread = min(s.spread+1, s.stock)
			return []state{s}
		}
	case Crash:
		s.stock += s.vanishing
		s.vanishing, s.spread = 0, 0
		return []state{s}
	case Pay:
		switch op.Result {
		case OK:
			if st == unpaid || st == paid {
				return []state{s.with(op.idx, paid)}
			}
		case Expired:
			switch st {
			case expired, doomed:
				return []state{s}
			case unpaid:
				return []state{s.with(op.idx, doomed)}
			}
		case NotFound:
			if st == absent {
				return []state{s}
			}
		case Unknown:
			if st == unpaid {
				return []state{s, s.with(op.idx, paid)}
			}
			return []state{s}
		}
	case Expire:
		for _, i := range op.idxs {
			if st := s.orders[i]; st != unpaid && st != doomed {
				return nil
			}
			s.stock++
			s = s.with(i, expired)
		}
		return []state{s}
	case ReadGoods:
		if op.Stock <= s.stock && op.Stock >= s.stock-s.spread {
			return []state{s.only(op.Stock)}
		}
	case ReadOrder:
		if op.Result == NotFound && st == absent || op.Result == OK && op.Status == statusOf(st) && st != absent {
			return []state{s}
		}
	case FinalRows:
		if op.Stock != s.stock || s.vanishing != 0 { // spread or not, vanishing+k is 0 only at k = 0
			return nil
		}
		for i := 0; i < len(s.orders); i++ {
			if op.final[i] != statusOf(s.orders[i]) { // an order the rows lack: "" and absent
				return nil
			}
		}
		return []state{s.only(s.stock)}
	}
	return nil
}

// only is the one of the stocks s stands for that is stock (which must be
// one of them).
func (s state) only(stock int32) state {
	s.vanishing += s.stock - stock
	s.stock, s.spread = stock, 0
	return s
}

// statusOf is the status the shop shows for an order in state b: "" for
// none.
func statusOf(b byte) string {
	switch b {
	case unpaid, doomed:
		return "unpaid"
	case paid:
		return "paid"
	case expired:
		return "expired"
	}
	return ""
}
