package repo_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/uuid"

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
	s := benchStore(b)
	for _, goods := range []int{1, 80, 200} {
		b.Run(fmt.Sprintf("goods=%d", goods), func(b *testing.B) {
			for n := range b.N {
				orders := make([]*service.Order, 100)
				for i := range orders {
					orders[i] = &service.Order{GoodsNo: int32(i%goods + 1), RequestID: fmt.Sprintf("bench-%d-%d-%d", goods, n, i)}
				}
				if _, err := sellBatch(ctx, s, 1, orders, sellAll, func() error { return nil }, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSellAllotted is BenchmarkSellBatch for the allot strategy: one
// batch of 100 orders from a lease that holds stock of as many goods as the
// batch spans, one transaction after the other; and the same batch of one
// goods from a lease that holds 200 (what the lease row's length costs).
//
//	go test -run '^$' -bench SellAllotted ./internal/repo/
func BenchmarkSellAllotted(b *testing.B) {
	ctx := context.Background()
	s := benchStore(b)
	for _, c := range []struct{ goods, held int }{{1, 1}, {1, 200}, {80, 200}, {200, 200}} {
		b.Run(fmt.Sprintf("goods=%d/held=%d", c.goods, c.held), func(b *testing.B) {
			lease, err := s.OpenLease(ctx, "/bench")
			if err != nil {
				b.Fatal(err)
			}
			want := map[int32]int32{}
			for g := range int32(c.held) {
				want[g+1] = 1 << 24
			}
			grant, err := grant(ctx, s, lease, map[int32]service.Allotment{}, want, func(_ service.Goods, need int32) int32 { return need })
			if err != nil {
				b.Fatal(err)
			}
			held := map[int32]service.Allotment{}
			for g, n := range grant.Granted {
				held[g] = service.Allotment{Granted: n}
			}
			b.ResetTimer()
			for n := range b.N {
				orders := make([]*service.Order, 100)
				for i := range orders {
					orders[i] = &service.Order{GoodsNo: int32(i%c.goods + 1), RequestID: fmt.Sprintf("bench-allot-%d-%d-%d-%d", c.goods, c.held, n, i)}
				}
				if _, err := sellAllotted(ctx, s, lease, held, grant.Goods, orders, sellAll); err != nil {
					b.Fatal(err)
				}
				for _, o := range orders {
					h := held[o.GoodsNo]
					h.Sold++
					held[o.GoodsNo] = h
				}
			}
			b.StopTimer()
			if _, _, err := s.CloseLease(ctx, lease); err != nil {
				b.Fatal(err)
			}
		})
	}
}

// BenchmarkOrderIDs is one batch of 65 orders of goods 1 at a time into an
// order_info that grows by them from empty (3000 batches: 195 000 orders),
// the request ids random (UUIDv4) or time-ordered (UUIDv7, what the shop
// makes for a request without one): where the unique index on request_id
// takes each.
//
//	go test -run '^$' -bench OrderIDs -benchtime 3000x ./internal/repo/
func BenchmarkOrderIDs(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		id   func() (uuid.UUID, error)
	}{{"v4", uuid.NewRandom}, {"v7", uuid.NewV7}} {
		b.Run("ids="+c.name, func(b *testing.B) {
			s := benchStore(b)
			b.ResetTimer()
			for range b.N {
				orders := make([]*service.Order, 65)
				for i := range orders {
					id, err := c.id()
					if err != nil {
						b.Fatal(err)
					}
					orders[i] = &service.Order{GoodsNo: 1, RequestID: id.String()}
				}
				if _, err := sellBatch(ctx, s, 1, orders, sellAll, func() error { return nil }, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// benchStore is a store with goods 1-200 of a stock no benchmark exhausts.
func benchStore(b *testing.B) *repo.Store {
	s := newStore(b)
	for g := int32(1); g <= 200; g++ {
		if err := s.SetStock(context.Background(), g, 1<<30, repo.StockReset{}); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// sellAll is a batch's choice that sells to every candidate.
func sellAll(_ service.Goods, c []*service.Order) ([]*service.Order, error) { return c, nil }
