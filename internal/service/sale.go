package service

import (
	"context"
	"time"
)

// What the batch and allot strategies share besides their queue
// (queue.go): a batch's sale, which buyers of a goods it takes and each
// buyer's answer.

// batchSale is what a batch decides, goods by goods, when the store asks
// (choose): which of the goods' buyers it sells to, what stock that leaves,
// and which goods' sale windows were closed; then it answers each buyer
// (answer). The store asks again when it starts the transaction again: the
// last answer counts.
type batchSale struct {
	ctx     context.Context
	cfg     Config
	lost    <-chan struct{} // the lock's; nil: none
	windows *saleWindows    // told each window read; nil: none
	buyerOf map[*Order]*waiter
	chosen  map[int32]map[*Order]bool
	closed  map[int32]error // the goods' sale window refused its buyers
	left    map[int32]int32
	paused  bool
	// lastPiece: a goods may sell out, once the batch commits.
	lastPiece bool
}

func newBatchSale(ctx context.Context, cfg Config, lost <-chan struct{}, windows *saleWindows, n int) *batchSale {
	return &batchSale{ctx: ctx, cfg: cfg, lost: lost, windows: windows, buyerOf: make(map[*Order]*waiter, n),
		chosen: map[int32]map[*Order]bool{}, closed: map[int32]error{}, left: map[int32]int32{}}
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
	now := time.Now()
	s.windows.observe(g, now)
	if err := g.OpenAt(now); err != nil {
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

// answer tells buyer x how the committed batch ended for it (refused: the
// store's refusals).
func (s *batchSale) answer(x *waiter, refused map[*Order]error) {
	g := x.order.GoodsNo
	switch {
	case refused[x.order] != nil:
		x.done <- refused[x.order]
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
