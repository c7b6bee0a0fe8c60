package repo

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// A batch's orders get the ids their rows have, whether the server hands
// them back with RETURNING (MariaDB) or they are counted from
// LAST_INSERT_ID() (MySQL, tried here on MariaDB): one batch after another,
// so that the second's ids do not start at 1.
func TestABatchsOrdersGetTheirRowsIDs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := openMigrated(ctx, t)
	if err := s.SetStock(ctx, 1, 100, StockReset{}); err != nil {
		t.Fatal(err)
	}
	all := func(f service.Facts) (map[int32][]*service.Order, error) {
		return map[int32][]*service.Order{1: f.Orders}, nil
	}
	for i, returning := range []bool{true, false, true, false} {
		s.returning = returning
		var orders []*service.Order
		for j := range 5 {
			orders = append(orders, &service.Order{GoodsNo: 1, RequestID: fmt.Sprintf("ids-%d-%d", i, j), NewRequestID: true})
		}
		begin := func(ctx context.Context, goods []int32, first []*service.Order) (service.BatchSale, error) {
			return s.BeginBatch(ctx, service.BatchStart{Goods: goods, Fence: int64(i + 1), First: first})
		}
		if err := service.RunBatch(ctx, service.BatchRun{Orders: orders, Begin: begin, Decide: all}); err != nil {
			t.Fatalf("returning=%v: %v", returning, err)
		}
		for _, o := range orders {
			row, found, err := s.OrderByRequestID(ctx, o.Key())
			if err != nil || !found || row.ID != o.ID {
				t.Errorf("returning=%v: order %s got id %d; its row: %+v, found %v, %v", returning, o.RequestID, o.ID, row, found, err)
			}
		}
	}
}

// openMigrated opens a store on a fresh test database and migrates it; the
// test closes it.
func openMigrated(ctx context.Context, t *testing.T) *Store {
	t.Helper()
	s, err := Open(ctx, e2e.Database(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

// The rows a store remembers for its claims are bounded: a sale of more
// goods than maxRowIDs forgets some.
func TestTheRowsRememberedAreBounded(t *testing.T) {
	var r rowIDs
	for g := int32(1); g <= 3*maxRowIDs; g++ {
		r.remember(map[int32]goodsStock{g: {ID: uint32(g), GoodsNo: g}})
	}
	if n := len(r.m); n != maxRowIDs {
		t.Fatalf("%d goods remembered after %d, want %d", n, 3*maxRowIDs, maxRowIDs)
	}
	last := []int32{3 * maxRowIDs}
	if ids, ok := r.lookup(last); !ok || ids[0] != uint32(last[0]) {
		t.Fatalf("the last goods remembered: %v, %v", ids, ok)
	}
}
