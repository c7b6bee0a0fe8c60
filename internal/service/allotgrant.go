package service

import (
	"context"
	"maps"
	"slices"
	"time"
)

// Waiting is a lease's buyers of a goods who wait in its instance's
// queue: how many, and when the earliest and the latest of them arrived.
type Waiting struct {
	First, Last time.Time
	N           int32
}

// before is how many of w's buyers arrived before t, taking their
// arrivals as spread evenly from First to Last.
func (w Waiting) before(t time.Time) int32 {
	switch {
	case t.Before(w.First):
		return 0
	case !t.Before(w.Last):
		return w.N
	}
	return int32(int64(w.N) * int64(t.Sub(w.First)) / int64(w.Last.Sub(w.First)))
}

// allotWaitingFresh is how recent another lease's word on who waits at its
// instance must be for a grant to keep pieces back for them: a lease whose
// instance has buyers queued writes it with every batch, so only a stalled
// or dead instance's word gets this old, and its buyers then wait at most
// this long for nothing.
const allotWaitingFresh = 5 * allotIdle

// grant takes stock of the goods in want, which batch's buyers need, into
// the lease: of each grantSize of its row as the grant read it (locked), or
// what the row has if less. For a goods whose row that leaves empty short of
// what was wanted, the grant also reads what the other leases hold of it
// unsold (Grant.Pending).
//
// First come, first served across the instances: a grant that would leave
// a row with less than allotGrantMax reads who waits for the goods at the
// other instances (GrantSale.Waiting) and takes only for the batch's
// buyers whose turn, among those and its own, falls within the stock
// (keepBack). Without it, an instance slowed by a busy loop still had its
// earlier arrivals queued when the other's grant took the row's last
// pieces for later ones: make bench-shop (k) gave 86.5-94.6% of the pieces
// to the first arrivals. kept names the goods of which pieces were kept
// back: the batch's buyers the grant did not cover wait and try again (see
// sell).
func (a *Allot) grant(ctx context.Context, want map[int32]int32, batch []*waiter, now time.Time) (g Grant, kept map[int32]bool, err error) {
	gs, err := a.store.BeginGrant(ctx, a.lease, slices.Sorted(maps.Keys(want)))
	if err != nil {
		return Grant{}, nil, err
	}
	take, kept := map[int32]int32{}, map[int32]bool{}
	var others map[int32]Waiting
	short, read := false, false
	for no, g := range gs.Goods() {
		n := min(max(g.Stock, 0), grantSize(g, want[no], now))
		if g.Stock-n < allotGrantMax && !read {
			read = true
			if others, err = gs.Waiting(ctx, allotWaitingFresh); err != nil {
				return Grant{}, nil, gs.Abort(ctx, err)
			}
		}
		if w, ok := others[no]; ok {
			if m := a.keepBack(g.Stock, n, w, batch, no); m < n {
				n, kept[no] = m, true
			}
		}
		if n < want[no] && g.Stock-n <= 0 {
			short = true // the row is out: other leases' stock may come back
		}
		if n > 0 {
			take[no] = n
		}
	}
	g, err = gs.Take(ctx, a.held, take, short, a.queuedWith(batch))
	return g, kept, err
}

// keepBack is how much of a row with stock a grant of n of goodsNo may
// take while others wait for it at other instances. The batch's buyers of
// it, in arrival order, are served while each one's turn (the batch's
// buyers before it, and the others' who arrived before it: Waiting.before)
// falls within what the lease holds of it and the row has; the grant takes
// what those beyond the lease's stock need. Counting only the buyers who
// arrived before the others' earliest, as a first version did, took
// nothing for queues that interleave, on either side
// (TestAGrantKeepsBackWhatEarlierBuyersElsewhereWaitFor, its last case).
func (a *Allot) keepBack(stock, n int32, others Waiting, batch []*waiter, goodsNo int32) int32 {
	var mine []time.Time
	for _, x := range batch {
		if x.order.GoodsNo == goodsNo {
			mine = append(mine, x.order.Arrived)
		}
	}
	slices.SortFunc(mine, time.Time.Compare)
	left := a.left(goodsNo)
	served := int32(0)
	for i, t := range mine {
		if int32(i)+others.before(t) >= stock+left {
			break
		}
		served++
	}
	return max(0, min(n, served-left))
}

// queued is, per goods, who waits in the instance's queue: the lease's row
// says it with each batch (AllotStore.BeginAllotted).
func (a *Allot) queued() map[int32]Waiting {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.waiting.byGoods()
}

// queuedWith is queued with batch's buyers, who wait too while their grant
// runs: its write of the lease's row says so. Two instances that each kept
// pieces back for the other's buyers by an old word then learn within a
// grant which of them has the earlier arrivals.
func (a *Allot) queuedWith(batch []*waiter) map[int32]Waiting {
	w := a.queued()
	for _, x := range batch {
		countWaiting(w, x.order)
	}
	return w
}

// grantSize is how much a grant takes of goods g, whose row has stock:
// what the batch needs, or an eighth of the row if that is more (so that
// the next batches need no grant), up to allotGrantMax. A share, not all: in
// a sell-out the other instances keep stock of their own to sell. Nothing
// while g's sale window is closed: its buyers are refused.
func grantSize(g Goods, need int32, now time.Time) int32 {
	if g.OpenAt(now) != nil {
		return 0
	}
	return max(need, min(g.Stock/allotGrantShare, allotGrantMax))
}
