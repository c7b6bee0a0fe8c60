package service

import (
	"context"
	"errors"
	"slices"
)

// BatchRun is one batch's sale as the service runs it (RunBatch): the
// batch and allot strategies' sale, from the claim to the commit.
type BatchRun struct {
	// Orders are the batch's, in their order.
	Orders []*Order
	// Begin begins the sale: the store's BeginBatch or BeginAllotted with
	// the goods of the orders (sorted, distinct) and those it may insert
	// first (see BatchStart).
	Begin func(ctx context.Context, goods []int32, first []*Order) (BatchSale, error)
	// Decide is the strategy's decision on the sale's Facts.
	Decide Decide
	// Guard checks the lock before the commit; then its hand-off begins.
	// nil: no lock.
	Guard func() error
	// Join takes, for a sale whose orders went in first, the orders of
	// buyers who came since that accept takes; nil: none.
	Join func(accept func(*Order) bool) []*Order
}

// RunBatch runs a batch's sale: claim → join → decide → guard → write →
// commit. The claim begins the transaction (r.Begin: the claim in its
// first packet, after the orders' INSERT when none of them can collide with
// a concurrent transaction's, see mayCollide); buyers who came meanwhile
// join it (r.Join), when their INSERT cannot collide either and their goods
// is claimed; the store reads the Facts the buyer rules need, the strategy
// decides (r.Decide), and the store writes the sold and commits. The guard
// comes before the writes when nothing can collide, so that the lock's
// hand-off overlaps them: the writes and the COMMIT then go in one packet
// on one server (SellAndCommit). When an INSERT could collide it comes
// after them, and a request id used before or a buyer who came in after
// the check (ErrDuplicateRequest, ErrAlreadyBought from the INSERT) runs
// the sale once more with the request ids looked up, the joined buyers in
// it. An error anywhere before the commit sells nothing.
//
// The orders sold get their ids at the commit.
func RunBatch(ctx context.Context, r BatchRun) error {
	orders := r.Orders
	for attempt := 0; ; attempt++ {
		var late []*Order
		err := r.once(ctx, orders, attempt > 0, &late)
		orders = slices.Concat(orders, late) // in the batch from now on
		if attempt == 0 && (errors.Is(err, ErrDuplicateRequest) || errors.Is(err, ErrAlreadyBought)) {
			continue
		}
		return err
	}
}

// once is one transaction of RunBatch; the late buyers it takes in are
// appended to late.
func (r BatchRun) once(ctx context.Context, orders []*Order, lookUp bool, late *[]*Order) error {
	if len(orders) == 0 {
		return nil
	}
	goods := make([]int32, 0, 4)
	for _, o := range orders {
		goods = append(goods, o.GoodsNo)
	}
	slices.Sort(goods)
	goods = slices.Compact(goods)
	early := !mayCollide(orders) // the guard before the writes
	var first []*Order
	if early && !lookUp {
		first = orders
	}
	sale, err := r.Begin(ctx, goods, first)
	if err != nil {
		return err
	}
	all := orders
	if sale.OrdersFirst() && r.Join != nil {
		claimed := sale.Goods()
		got := r.Join(func(o *Order) bool {
			_, ok := claimed[o.GoodsNo]
			return ok && !collides(o)
		})
		*late = append(*late, got...)
		all = slices.Concat(orders, got)
	}
	facts, err := sale.Facts(ctx, all, lookUp)
	var sold map[int32][]*Order
	if err == nil {
		sold, err = r.Decide(facts)
	}
	if err == nil && early && r.Guard != nil {
		err = r.Guard()
	}
	if err != nil {
		return sale.Abort(ctx, err)
	}
	if early {
		return sale.SellAndCommit(ctx, sold)
	}
	err = sale.Sell(ctx, sold)
	if err == nil && r.Guard != nil {
		err = r.Guard()
	}
	if err != nil {
		return sale.Abort(ctx, err)
	}
	return sale.Commit(ctx)
}

// mayCollide reports whether the INSERT of some of orders could find its
// key taken by a transaction that committed after the sale's checks: a
// request id the buyer chose, or a buyer under the one-per-buyer rule. The
// sale then checks and sells once more, under the same lock, so it calls
// the guard only after its writes. Otherwise it calls the guard before
// them: a shop-made request id is a new UUID, and the INSERT cannot fail on
// a key (only on the server, which ends the sale). The guard begins the
// lock's hand-off, so the next holder's ZooKeeper round trips then overlap
// this batch's writes and commit, not only its commit; its claim waits for
// this transaction's row locks all the same (see handOff).
//
// Such a batch may also have its orders inserted first, before its claim
// (BatchStart.First): where the claim's row locks are what the next holder
// waits for, they are then held for the stock's write and the commit only,
// not for the orders' INSERT as well (the larger part of the writes).
func mayCollide(orders []*Order) bool {
	return slices.ContainsFunc(orders, collides)
}

// collides reports whether the INSERT of o could find its key taken by a
// concurrent transaction (see mayCollide).
func collides(o *Order) bool {
	return !o.NewRequestID || o.OnePerBuyer && o.UserID != ""
}
