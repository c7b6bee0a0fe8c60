package repo_test

import (
	"context"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/repo"
	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// A stock set that clears the orders starts a new sale: the waiting room's
// places given so far are void (the horizon moves to the latest place), for
// one goods and for many; a stock set that keeps the orders keeps them.
// Before, a restock's crowd queued behind the places of the last sale's
// buyers, gone long since, and heard sold out.
func TestClearingTheOrdersVoidsThePlaces(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := openMigrated(t, e2e.Database(t))
	for _, g := range []int32{1, 2, 3, 4} {
		if err := s.AdvanceRoom(ctx, g, service.RoomMark{Horizon: 10, Latest: 50}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetStock(ctx, 1, 100, repo.StockReset{ClearOrders: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetStocks(ctx, []repo.GoodsStock{{GoodsNo: 2, Stock: 100}, {GoodsNo: 3, Stock: 100}}, repo.StockReset{ClearOrders: true}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.SetStock(ctx, 4, 100, repo.StockReset{}); err != nil {
		t.Fatal(err)
	}
	marks, err := s.Horizons(ctx, []int32{1, 2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	for g, want := range map[int32]int64{1: 50, 2: 50, 3: 50, 4: 10} {
		if marks[g].Horizon != want {
			t.Errorf("goods %d: horizon %d after the stock set, want %d", g, marks[g].Horizon, want)
		}
	}
	// Asked for no goods, the store names the open queues: goods 4's,
	// whose places still wait, for instances that never gave one.
	open, err := s.Horizons(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(open) != 1 || open[4] != (service.RoomMark{Horizon: 10, Latest: 50}) {
		t.Errorf("the open queues: %v, want goods 4's alone", open)
	}
}

// The rooms whose every place was let in, the latest long ago, are
// deleted, and only those: a queue still open stays however old, and a
// lately closed one stays. Before, nothing deleted a row, and each tick of
// each instance read them all (#75 item 3).
func TestClosedRoomsAreForgotten(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := openMigrated(t, e2e.Database(t))
	marks := map[int32]service.RoomMark{
		1: {Horizon: 50, Latest: 50},   // closed, long ago
		2: {Horizon: 60, Latest: 40},   // closed (the horizon passed it), long ago
		3: {Horizon: 10, Latest: 50},   // open, long ago
		4: {Horizon: 900, Latest: 900}, // closed lately
	}
	for g, m := range marks {
		if err := s.AdvanceRoom(ctx, g, m); err != nil {
			t.Fatal(err)
		}
	}
	n, err := s.ForgetRooms(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	left, err := s.Horizons(ctx, []int32{1, 2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 || len(left) != 2 || left[3] != marks[3] || left[4] != marks[4] {
		t.Errorf("forgot %d rooms, left %v; want 2 forgotten, goods 3's and 4's left", n, left)
	}
}
