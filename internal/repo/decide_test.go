package repo_test

import (
	"context"

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

// sellBatch is s.SellBatch deciding by choose (see byGoods); it returns
// what the buyer rules refused.
func sellBatch(ctx context.Context, s *repo.Store, fence int64, orders []*service.Order,
	choose func(service.Goods, []*service.Order) ([]*service.Order, error), guard func() error,
	more func(accept func(*service.Order) bool) []*service.Order) (map[*service.Order]error, error) {
	d := &byGoods{choose: choose}
	if err := s.SellBatch(ctx, fence, orders, d.decide, guard, more); err != nil {
		return nil, err
	}
	return d.refused, nil
}

// sellAllotted is s.SellAllotted deciding by choose (see byGoods); it
// returns what the buyer rules refused.
func sellAllotted(ctx context.Context, s *repo.Store, lease int64, held map[int32]service.Allotment, goods map[int32]service.Goods,
	orders []*service.Order, choose func(service.Goods, []*service.Order) ([]*service.Order, error)) (map[*service.Order]error, error) {
	d := &byGoods{choose: choose}
	if err := s.SellAllotted(ctx, lease, held, goods, orders, d.decide); err != nil {
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
