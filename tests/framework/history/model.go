package history

import (
	"fmt"
	"hash/fnv"
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
		Init: func() []any { return []any{state{stock: stock, orders: strings.Repeat("\x00", n)}} },
		Step: func(st, in, _ any) []any {
			var out []any
			for _, s := range step(st.(state), in.(modelOp)) {
				out = append(out, s)
			}
			return out
		},
		Equal: func(a, b any) bool { return a.(state) == b.(state) },
		Hash: func(s any) uint64 {
			h := fnv.New64a()
			fmt.Fprintf(h, "%d/%d/%s", s.(state).stock, s.(state).vanishing, s.(state).orders)
			return h.Sum64()
		},
		DescribeOperation: func(in, _ any) string { return in.(modelOp).String() },
		DescribeState: func(s any) string {
			st := s.(state)
			counts := map[byte]int{}
			for i := 0; i < len(st.orders); i++ {
				counts[st.orders[i]]++
			}
			return fmt.Sprintf("stock %d (%d of it taken until a crash); orders unpaid %d (past deadline %d), paid %d, expired %d",
				st.stock, st.vanishing, counts[unpaid]+counts[doomed], counts[doomed], counts[paid], counts[expired])
		},
	}
	return nm.ToModel()
}

// with is s with order i in state b.
func (s state) with(i int, b byte) state {
	o := []byte(s.orders)
	o[i] = b
	s.orders = string(o)
	return s
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
		case op.Result == OK && s.stock > 0:
			s.stock--
			return []state{s.with(op.idx, unpaid)}
		case op.Result == SoldOut && s.stock == 0:
			return []state{s}
		case op.Result == Unknown: // left no order: nothing, or a piece seen taken until a crash
			if s.stock == 0 {
				return []state{s}
			}
			t := s
			t.stock--
			t.vanishing++
			return []state{s, t}
		}
	case Crash:
		s.stock += s.vanishing
		s.vanishing = 0
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
		if op.Stock == s.stock {
			return []state{s}
		}
	case ReadOrder:
		if op.Result == NotFound && st == absent || op.Result == OK && op.Status == statusOf(st) && st != absent {
			return []state{s}
		}
	case FinalRows:
		if op.Stock != s.stock || s.vanishing != 0 {
			return nil
		}
		for i := 0; i < len(s.orders); i++ {
			if op.final[i] != statusOf(s.orders[i]) { // an order the rows lack: "" and absent
				return nil
			}
		}
		return []state{s}
	}
	return nil
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
