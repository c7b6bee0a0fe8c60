package repo_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/seckill-zk/seckill-zk/internal/repo"
	"github.com/seckill-zk/seckill-zk/internal/service"
)

// BenchmarkSellBatch is one batch of 100 orders, one transaction after
// the other, over one goods and over 80 and 200: what a sale of many goods
// adds to the transaction a batch holds its lock for.
//
//	go test -run '^$' -bench SellBatch ./internal/repo/
func BenchmarkSellBatch(b *testing.B) {
	ctx := context.Background()
	s := newStore(b)
	for g := int32(1); g <= 200; g++ {
		if err := s.SetStock(ctx, g, 1<<30, repo.StockReset{}); err != nil {
			b.Fatal(err)
		}
	}
	all := func(_ service.Goods, c []*service.Order) ([]*service.Order, error) { return c, nil }
	for _, goods := range []int{1, 80, 200} {
		b.Run(fmt.Sprintf("goods=%d", goods), func(b *testing.B) {
			for n := range b.N {
				orders := make([]*service.Order, 100)
				for i := range orders {
					orders[i] = &service.Order{GoodsNo: int32(i%goods + 1), RequestID: fmt.Sprintf("bench-%d-%d-%d", goods, n, i)}
				}
				if _, err := s.SellBatch(ctx, 1, orders, all, func() error { return nil }); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
