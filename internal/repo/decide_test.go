package repo_test

import (
	"context"
	"maps"
	"slices"

	"github.com/seckill-zk/seckill-zk/internal/repo"
	"github.com/seckill-zk/seckill-zk/internal/service"
)

// The store's tests decide as the batch strategies do (service.ByGoods):
// the buyer rules, then a choice per goods, in the order of the goods.

// byGoods is a sale's decision from choose; refused is what the rules
// refused at the last ask.
type byGoods struct {
	choose  func(g service.Goods, candidates []*service.Order) ([]*service.Order, error)
	refused map[*service.Order]error
}

func (b *byGoods) decide(f service.Facts) (map[int32][]*service.Order, error) {
	return service.ByGoods(b.choose, func(r map[*service.Order]error) { b.refused = r })(f)
}

// sellBatch is a batch's sale on s as the batch strategy runs it
// (service.RunBatch with s.BeginBatch), deciding by choose (see byGoods);
// it returns what the buyer rules refused. join, if set, takes late buyers.
func sellBatch(ctx context.Context, s *repo.Store, fence int64, orders []*service.Order,
	choose func(service.Goods, []*service.Order) ([]*service.Order, error), guard func() error,
	join func(accept func(*service.Order) bool) []*service.Order) (map[*service.Order]error, error) {
	d := &byGoods{choose: choose}
	begin := func(ctx context.Context, goods []int32, first []*service.Order) (service.BatchSale, error) {
		return s.BeginBatch(ctx, service.BatchStart{Goods: goods, Fence: fence, First: first})
	}
	if err := service.RunBatch(ctx, service.BatchRun{Orders: orders, Begin: begin, Decide: d.decide, Guard: guard, Join: join}); err != nil {
		return nil, err
	}
	return d.refused, nil
}

// sellAllotted is a batch's sale from what lease holds as the allot
// strategy runs it (service.RunBatch with s.BeginAllotted), deciding by
// choose (see byGoods); it returns what the buyer rules refused.
func sellAllotted(ctx context.Context, s *repo.Store, lease int64, held map[int32]service.Allotment, goods map[int32]service.Goods,
	orders []*service.Order, choose func(service.Goods, []*service.Order) ([]*service.Order, error)) (map[*service.Order]error, error) {
	d := &byGoods{choose: choose}
	begin := func(ctx context.Context, goodsNos []int32, _ []*service.Order) (service.BatchSale, error) {
		return s.BeginAllotted(ctx, lease, held, goods, goodsNos, nil)
	}
	if err := service.RunBatch(ctx, service.BatchRun{Orders: orders, Begin: begin, Decide: d.decide}); err != nil {
		return nil, err
	}
	return d.refused, nil
}

// sellFenced is the seed's sale (s.BeginSale, then Sell and Commit)
// deciding by the row alone: decide answers the stock the sale leaves (one
// less) or why it sells nothing; guard, if set, runs before the commit.
func sellFenced(ctx context.Context, s *repo.Store, goodsNo int32, fence int64, o *service.Order,
	decide func(service.Goods) (int32, error), guard func() error) error {
	sale, err := s.BeginSale(ctx, goodsNo, fence)
	if err != nil {
		return err
	}
	if _, err := decide(sale.Goods()[goodsNo]); err != nil {
		return sale.Abort(ctx, err)
	}
	if err := sale.Sell(ctx, map[int32][]*service.Order{goodsNo: {o}}); err != nil {
		return sale.Abort(ctx, err)
	}
	if guard != nil {
		if err := guard(); err != nil {
			return sale.Abort(ctx, err)
		}
	}
	return sale.Commit(ctx)
}

// grant takes stock of the goods in need into lease, which holds held, as
// the allot strategy does (BeginGrant, then Take): of each size(its row,
// what it needs), or what the row has if less, with the other leases'
// unsold stock read when a row runs out short of the need.
func grant(ctx context.Context, s *repo.Store, lease int64, held map[int32]service.Allotment, need map[int32]int32,
	size func(g service.Goods, need int32) int32) (service.Grant, error) {
	gs, err := s.BeginGrant(ctx, lease, slices.Sorted(maps.Keys(need)))
	if err != nil {
		return service.Grant{}, err
	}
	take := map[int32]int32{}
	short := false
	for no, g := range gs.Goods() {
		n := min(max(g.Stock, 0), size(g, need[no]))
		short = short || n < need[no] && g.Stock-n <= 0
		take[no] = n
	}
	return gs.Take(ctx, held, take, short, nil)
}
