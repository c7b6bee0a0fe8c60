package repo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/repo"
	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// TestASaleWithoutAConnectionWroteNothing: every sale whose connection
// cannot be had (the server's address cut off) is service.ErrConnectionLost
// (nothing written: the shop tries it again), never a raw driver error,
// which the handler would answer 500.
func TestASaleWithoutAConnectionWroteNothing(t *testing.T) {
	proxy, via := throughProxy(t, e2e.Database(t))
	s := openMigrated(t, via)
	ctx := context.Background()
	if err := s.SetStock(ctx, 1, 10, repo.StockReset{}); err != nil {
		t.Fatal(err)
	}
	g, err := s.Goods(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	proxy.Cut() // every connection, pooled ones too, and new ones refused until Restore
	sales := map[string]func(context.Context) error{
		"unlocked": func(ctx context.Context) error {
			return s.Sell(ctx, g, 9, &service.Order{GoodsNo: 1, RequestID: "u"})
		},
		"fenced": func(ctx context.Context) error {
			return sellFenced(ctx, s, 1, 1, &service.Order{GoodsNo: 1, RequestID: "f"}, minusOne, noGuard)
		},
		"batch": func(ctx context.Context) error {
			_, err := sellBatch(ctx, s, 1, []*service.Order{{GoodsNo: 1, RequestID: "b"}},
				func(_ service.Goods, c []*service.Order) ([]*service.Order, error) { return c, nil }, noGuard, nil)
			return err
		},
		"atomic": func(ctx context.Context) error {
			return s.SellAtomic(ctx, &service.Order{GoodsNo: 1, RequestID: "a"})
		},
	}
	for name, sell := range sales {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			if err := sell(ctx); !errors.Is(err, service.ErrConnectionLost) {
				t.Errorf("sale = %v, want ErrConnectionLost", err)
			}
		})
	}
	proxy.Restore()
	assertState(t, s, 10, 0)
}
