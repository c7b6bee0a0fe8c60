package service

import (
	"context"
	"maps"
	"slices"
	"time"
)

// The shape of a sale. Every sale is the service's to drive: the store
// begins it with its claim and hands it over (a Sale: SeedStore.BeginSale,
// BatchStore.BeginBatch, AllotStore.BeginAllotted), the service reads what
// the buyer rules need of its orders (BatchSale.Facts), decides on the rows
// the claim read, has the store write the orders it sold, checks the lock
// (guard: then the lock's hand-off begins) and commits or aborts it
// (Seed.sell; RunBatch for the batching strategies). The decision needs the
// rows as the claim read them, the writes follow it within the same
// transaction without a round trip of their own between them, and the
// guard's check comes before the commit. The rules are the service's
// (SortBuyers, a strategy's choice, which orders may collide); the store
// runs SQL and reports what it read and what happened.

// Facts is what a sale's transaction read for the service to decide on.
type Facts struct {
	// Orders are the sale's orders, in their order; those a store took in
	// late (BatchRun.Join) at the end.
	Orders []*Order
	// Goods is the row of each goods the sale claimed, with the stock it
	// may sell from (allot: what the lease holds unsold); a goods without
	// a row is missing.
	Goods map[int32]Goods
	// Used are the keys of Orders that already hold an order, of those the
	// store looked up: a store looks up the request ids buyers chose once
	// an INSERT found one taken (and then decides again), and may look up
	// none (seed: the INSERT's duplicate key tells).
	Used map[RequestKey]bool
	// Held are the orders that the buyers of Orders under the
	// one-per-buyer rule hold of the sale's goods.
	Held map[GoodsBuyer]Order
}

// GoodsBuyer is a buyer of a goods: the key of the one-per-buyer rule.
type GoodsBuyer struct {
	GoodsNo int32
	UserID  string
}

// Decide is a strategy's decision in a sale: of each goods, the orders it
// sells to, in the order their rows are written. An error rolls the sale
// back. RunBatch may ask again when it starts the sale again: the last
// answer counts.
type Decide func(Facts) (map[int32][]*Order, error)

// SortBuyers applies the buyer rules to a sale's orders: an order of a
// goods without a row is refused ErrNotFound; one whose key holds an order
// (Used) or came earlier in the sale ErrDuplicateRequest; one whose buyer
// holds an order of the goods under the one-per-buyer rule an
// AlreadyBoughtError naming it. The others are their goods' candidates, in
// the sale's order.
func SortBuyers(f Facts) (candidates map[int32][]*Order, refused map[*Order]error) {
	candidates = make(map[int32][]*Order, len(f.Goods))
	refused = map[*Order]error{}
	seen := make(map[RequestKey]bool, len(f.Orders))
	for _, o := range f.Orders {
		if _, ok := f.Goods[o.GoodsNo]; !ok {
			refused[o] = ErrNotFound
			continue
		}
		if f.Used[o.Key()] || seen[o.Key()] {
			refused[o] = ErrDuplicateRequest
			continue
		}
		seen[o.Key()] = true
		if h, ok := f.Held[GoodsBuyer{o.GoodsNo, o.UserID}]; ok && o.OnePerBuyer && o.UserID != "" {
			refused[o] = &AlreadyBoughtError{Order: h}
			continue
		}
		candidates[o.GoodsNo] = append(candidates[o.GoodsNo], o)
	}
	return candidates, refused
}

// ByGoods is the Decide of a choice per goods: the buyer rules
// (SortBuyers), whose refusals it tells refused, then choose asked for each
// claimed goods in the order of their numbers, with the goods' candidates.
func ByGoods(choose func(g Goods, candidates []*Order) ([]*Order, error), refused func(map[*Order]error)) Decide {
	return func(f Facts) (map[int32][]*Order, error) {
		candidates, r := SortBuyers(f)
		refused(r)
		sold := make(map[int32][]*Order, len(f.Goods))
		for _, no := range slices.Sorted(maps.Keys(f.Goods)) {
			picked, err := choose(f.Goods[no], candidates[no])
			if err != nil {
				return nil, err
			}
			if len(picked) > 0 {
				sold[no] = picked
			}
		}
		return sold, nil
	}
}

// What the batch and allot strategies share besides their queue
// (queue.go): a batch's sale, which buyers of a goods it takes and each
// buyer's answer.

// batchSale is what a batch decides when RunBatch asks (decide): which
// buyers the rules refuse, which of each goods' buyers it sells to, what
// stock that leaves, and which goods' sale windows were closed; then it
// answers each buyer (answer). RunBatch asks again when it starts the
// sale again: the last answer counts. The batch and allot strategies
// decide alike; a sale under a lock also hears of the lock and of the
// rows' windows its claim read (underLock).
type batchSale struct {
	ctx     context.Context
	cfg     Config
	lost    <-chan struct{} // the lock's (underLock): the pause ends when it is lost
	windows *saleWindows    // told each window the claim read (underLock)
	buyerOf map[*Order]*waiter
	refused map[*Order]error // by the buyer rules
	chosen  map[int32]map[*Order]bool
	closed  map[int32]error // the goods' sale window refused its buyers
	left    map[int32]int32
	paused  bool
	// lastPiece: a goods may sell out, once the batch commits.
	lastPiece bool
}

// newBatchSale returns the decision of a sale of the buyers xs (more may
// join it: take), and their orders.
func newBatchSale(ctx context.Context, cfg Config, xs []*waiter) (*batchSale, []*Order) {
	s := &batchSale{ctx: ctx, cfg: cfg, buyerOf: make(map[*Order]*waiter, len(xs)),
		chosen: map[int32]map[*Order]bool{}, closed: map[int32]error{}, left: map[int32]int32{}}
	return s, s.take(xs)
}

// underLock is s for a sale under a lock, lost when lost is closed, whose
// claim reads the goods' rows: their windows are told to windows.
func (s *batchSale) underLock(lost <-chan struct{}, windows *saleWindows) {
	s.lost, s.windows = lost, windows
}

// take adds the buyers xs to the sale and returns their orders.
func (s *batchSale) take(xs []*waiter) []*Order {
	orders := make([]*Order, len(xs))
	for i, x := range xs {
		orders[i] = x.order
		s.buyerOf[x.order] = x
	}
	return orders
}

// sold is how many orders of each goods the last decision sold.
func (s *batchSale) sold() map[int32]int32 {
	out := make(map[int32]int32, len(s.chosen))
	for no, set := range s.chosen {
		out[no] = int32(len(set))
	}
	return out
}

// decide is the batch's Decide: the buyer rules, then each goods' choice
// (choose), goods by goods in their order.
func (s *batchSale) decide(f Facts) (map[int32][]*Order, error) {
	clear(s.chosen)
	clear(s.closed)
	clear(s.left)
	return ByGoods(s.choose, func(refused map[*Order]error) { s.refused = refused })(f)
}

// choose picks, of a goods' candidates in the batch's order, as many as
// its stock lets, leaving out those who gave up; nobody while its sale
// window is closed. The demo's sleep is slept once, at the first goods.
func (s *batchSale) choose(g Goods, candidates []*Order) ([]*Order, error) {
	delete(s.chosen, g.GoodsNo)
	delete(s.closed, g.GoodsNo)
	delete(s.left, g.GoodsNo)
	if !s.paused {
		s.paused = true
		if err := s.cfg.pause(s.ctx, s.lost); err != nil {
			return nil, err
		}
	}
	s.windows.observe(g, time.Now())
	if err := g.OpenAt(s.cfg.Clock.Now()); err != nil {
		s.closed[g.GoodsNo] = err // nobody of this goods is sold to
		return nil, nil
	}
	var picked []*Order
	set := map[*Order]bool{}
	for _, o := range candidates {
		if len(picked) >= int(max(g.Stock, 0)) {
			break
		}
		if s.buyerOf[o].ctx.Err() != nil {
			continue // gave up: not sold to
		}
		picked = append(picked, o)
		set[o] = true
	}
	s.chosen[g.GoodsNo], s.left[g.GoodsNo] = set, g.Stock-int32(len(picked))
	if s.left[g.GoodsNo] <= 0 {
		s.lastPiece = true
	}
	return picked, nil
}

// answer tells buyer x how the committed batch ended for it.
func (s *batchSale) answer(x *waiter) {
	g := x.order.GoodsNo
	switch {
	case s.refused[x.order] != nil:
		x.done <- s.refused[x.order]
	case s.chosen[g][x.order]:
		x.done <- nil
	case s.closed[g] != nil:
		x.done <- s.closed[g]
	case x.ctx.Err() != nil:
		x.done <- x.ctx.Err()
	default:
		x.done <- ErrSoldOut
	}
}
