package repo_test

import (
	"context"
	"errors"
	"testing"

	"github.com/seckill-zk/seckill-zk/internal/repo"
	"github.com/seckill-zk/seckill-zk/internal/service"
)

func TestSellAtomic(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := s.SetStock(ctx, 1, 2, repo.StockReset{}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		o := &service.Order{GoodsNo: 1, RequestID: id}
		if err := s.SellAtomic(ctx, o); err != nil || o.ID == 0 {
			t.Fatalf("sell %s: %v (id %d)", id, err, o.ID)
		}
	}
	for _, tc := range []struct {
		order service.Order
		want  error
	}{
		{service.Order{GoodsNo: 1, RequestID: "c"}, service.ErrSoldOut},
		{service.Order{GoodsNo: 42, RequestID: "d"}, service.ErrNotFound},
		{service.Order{GoodsNo: 1, RequestID: "a"}, service.ErrDuplicateRequest},
	} {
		if err := s.SellAtomic(ctx, &tc.order); !errors.Is(err, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.order, err, tc.want)
		}
	}
	assertState(t, s, 0, 2)
}

func TestSellBatch(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := s.SetStock(ctx, 1, 3, repo.StockReset{}); err != nil {
		t.Fatal(err)
	}
	if err := s.SellFenced(ctx, 1, 1, &service.Order{GoodsNo: 1, RequestID: "old"}, minusOne, noGuard); err != nil {
		t.Fatal(err)
	}
	var orders []*service.Order
	for _, id := range []string{"old", "x", "x", "y", "z"} {
		orders = append(orders, &service.Order{GoodsNo: 1, RequestID: id})
	}
	var offered []*service.Order
	firstStock := func(g service.Goods, candidates []*service.Order) ([]*service.Order, error) {
		offered = candidates
		return candidates[:min(int(g.Stock), len(candidates))], nil
	}
	refused, err := s.SellBatch(ctx, 5, orders, firstStock, noGuard)
	if err != nil {
		t.Fatal(err)
	}
	if len(refused) != 2 || !errors.Is(refused[orders[0]], service.ErrDuplicateRequest) || !errors.Is(refused[orders[2]], service.ErrDuplicateRequest) {
		t.Errorf("refused %v, want the order of the used id and the second x", refused)
	}
	if len(offered) != 3 {
		t.Errorf("%d candidates offered, want x, y, z", len(offered))
	}
	if orders[1].ID == 0 || orders[3].ID == 0 || orders[4].ID != 0 || orders[1].ID == orders[3].ID {
		t.Errorf("order ids %d %d %d: want x and y sold with their own ids, z not", orders[1].ID, orders[3].ID, orders[4].ID)
	}
	assertState(t, s, 0, 3)
	if _, err := s.SellBatch(ctx, 4, orders[4:], firstStock, noGuard); !errors.Is(err, service.ErrFenced) {
		t.Errorf("a batch under an older token: %v, want ErrFenced", err)
	}
}
