package history

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// A state with a spread stands for its stocks exactly: what an operation
// leaves from it stands for what the operation leaves from each of those
// stocks, one at a time. And keeps says "nothing changes" only where step
// leaves the state as it is. Random states of three orders, random
// operations. Every state step leaves is spread 0, but for the purchase
// of unknown outcome, whose reference is the fork.
func TestAStateStandsForItsStocksAndKeepsIsRight(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 1))
	kinds := []Kind{Buy, Crash, Pay, Expire, ReadGoods, ReadOrder, FinalRows}
	results := []Result{OK, SoldOut, Unknown, Expired, NotFound}
	codes := []byte{absent, unpaid, doomed, paid, expired}
	statuses := []string{"", "unpaid", "paid", "expired"}
	for range 200_000 {
		s := start(0, 3)
		for i := range 3 {
			s = s.with(i, codes[rnd.IntN(len(codes))])
		}
		s.stock, s.vanishing = rnd.Int32N(4), rnd.Int32N(3)
		s.spread = rnd.Int32N(s.stock + 1)
		op := modelOp{Op: Op{Kind: kinds[rnd.IntN(len(kinds))], Result: results[rnd.IntN(len(results))], Stock: rnd.Int32N(4),
			Status: statuses[rnd.IntN(len(statuses))]}, idx: -1}
		if op.Kind == Buy && op.Result == OK || op.Kind == Pay || op.Kind == ReadOrder {
			op.idx = rnd.IntN(3) // the operations of an order
		}
		if op.Kind == Expire {
			op.idxs = []int{rnd.IntN(3)}
		}
		if op.Kind == FinalRows {
			op.final = map[int]string{}
			for i := range 3 {
				op.final[i] = statuses[rnd.IntN(len(statuses))]
			}
		}
		var want, got []string
		for _, c := range s.stocks() {
			for _, a := range stepOne(c, op) {
				want = append(want, a.String())
			}
		}
		for _, a := range step(s, op) {
			for _, c := range a.stocks() {
				got = append(got, c.String())
			}
		}
		for _, c := range s.stocks() {
			for _, a := range step(c, op) {
				if a.spread != 0 && (op.Kind != Buy || op.Result != Unknown) {
					t.Fatalf("%+v in %s: leaves a spread %d", op, c, a.spread)
				}
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(slices.Compact(want), slices.Compact(got)) {
			t.Fatalf("%+v in %s: leaves %v, its stocks one at a time %v", op, s, got, want)
		}
		if after := step(s, op); keeps(s, op) && !(len(after) == 1 && after[0] == s) {
			t.Fatalf("%+v in %s: keeps says nothing changes, step leaves %v", op, s, after)
		}
	}
}

// stepOne is step on a state of one stock, a purchase of unknown outcome
// forking it as the model did before spreads: nothing, or a piece taken.
func stepOne(c state, op modelOp) []state {
	if op.Kind != Buy || op.Result != Unknown {
		return step(c, op)
	}
	if c.stock == 0 {
		return []state{c}
	}
	taken := c
	taken.stock--
	taken.vanishing++
	return []state{c, taken}
}

// stocks are the states of one stock each that s stands for.
func (s state) stocks() []state {
	var out []state
	for k := range s.spread + 1 {
		out = append(out, s.only(s.stock-k))
	}
	return out
}

func (s state) String() string {
	return fmt.Sprintf("{stock %d vanishing %d spread %d orders %q}", s.stock, s.vanishing, s.spread, s.orders)
}
