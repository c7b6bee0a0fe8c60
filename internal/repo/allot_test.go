package repo_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// A lease's life in the store: a grant takes stock from the goods' row,
// sales from the lease write orders and not the row, a return and the
// closing put back what was not sold, and a closed lease sells nothing.
func TestLeaseGrantsSellsAndPutsBack(t *testing.T) {
	ctx := context.Background()
	s := newStore(t) // goods 1, stock 100
	all := func(_ service.Goods, c []*service.Order) ([]*service.Order, error) { return c, nil }
	asked := func(_ service.Goods, need int32) int32 { return need } // a grant of what is asked, if the row has it
	sell := func(lease int64, held map[int32]service.Allotment, goods map[int32]service.Goods, n int, tag string) error {
		orders := make([]*service.Order, n)
		for i := range orders {
			orders[i] = &service.Order{GoodsNo: 1, RequestID: fmt.Sprintf("%s-%d", tag, i)}
		}
		_, err := sellAllotted(ctx, s, lease, held, goods, orders, all)
		return err
	}

	a, err := s.OpenLease(ctx, "/a")
	if err != nil {
		t.Fatal(err)
	}
	g, err := grant(ctx, s, a, nil, map[int32]int32{1: 30, 2: 5}, asked)
	if err != nil {
		t.Fatal(err)
	}
	if g.Granted[1] != 30 || len(g.Granted) != 1 || g.Goods[1].Stock != 100 {
		t.Fatalf("grant = %+v, want 30 of goods 1 (stock 100 read), nothing of goods 2 (no row)", g)
	}
	assertState(t, s, 70, 0)

	held := map[int32]service.Allotment{1: {Granted: 30}}
	if err := sell(a, held, g.Goods, 10, "a"); err != nil {
		t.Fatal(err)
	}
	assertState(t, s, 70, 10) // the row is not touched
	held[1] = service.Allotment{Granted: 30, Sold: 10}
	if got, open, err := s.LeaseState(ctx, a); err != nil || !open || got[1] != held[1] {
		t.Fatalf("lease state %v, open %v, %v; want %v, open", got, open, err, held)
	}

	if err := s.ReturnAllotted(ctx, a, held, map[int32]int32{1: 5}); err != nil {
		t.Fatal(err)
	}
	assertState(t, s, 75, 10)
	held[1] = service.Allotment{Granted: 25, Sold: 10}

	// Another lease finds the row short: what a holds unsold is pending.
	b, err := s.OpenLease(ctx, "/b")
	if err != nil {
		t.Fatal(err)
	}
	gb, err := grant(ctx, s, b, nil, map[int32]int32{1: 100}, asked)
	if err != nil {
		t.Fatal(err)
	}
	if gb.Granted[1] != 75 || gb.Pending[1] != 15 {
		t.Fatalf("b's grant = %+v, want the row's 75 and 15 pending (a holds 25, sold 10)", gb)
	}
	assertState(t, s, 0, 10)

	// b asks a for it; a reads the ask once.
	if len(gb.Holders) != 1 || len(gb.Holders[a]) != 1 || gb.Holders[a][0] != 1 {
		t.Fatalf("b's grant names holders %v, want lease %d for goods 1", gb.Holders, a)
	}
	waits := time.UnixMicro(time.Now().UnixMicro())
	if err := s.WantBack(ctx, map[int64][]service.Ask{a: {{GoodsNo: 1, Arrived: waits}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.WantBack(ctx, map[int64][]service.Ask{a: {{GoodsNo: 1}}}); err != nil { // its buyers still wait; an ask without a time
		t.Fatal(err)
	}
	want := []service.Ask{{GoodsNo: 1, Arrived: waits}, {GoodsNo: 1}}
	if got, err := s.Wanted(ctx, a); err != nil || len(got) != 2 || got[0].GoodsNo != 1 || !got[0].Arrived.Equal(waits) || got[1] != want[1] {
		t.Fatalf("a's wanted list = %v, %v; want %v", got, err, want)
	}
	if got, err := s.Wanted(ctx, a); err != nil || len(got) != 0 {
		t.Fatalf("a's wanted list read again = %v, %v; want it cleared", got, err)
	}

	putBack, closed, err := s.CloseLease(ctx, a)
	if err != nil || !closed || putBack != 15 {
		t.Fatalf("close = %d, %v, %v; want 15 put back", putBack, closed, err)
	}
	assertState(t, s, 15, 10)
	if _, closed, _ := s.CloseLease(ctx, a); closed {
		t.Error("a lease closed twice")
	}
	// The closed lease's owner, unaware, sells: nothing is written.
	if err := sell(a, held, g.Goods, 1, "late"); !errors.Is(err, service.ErrFenced) {
		t.Fatalf("a sale from a closed lease = %v, want ErrFenced", err)
	}
	if _, err := grant(ctx, s, a, held, map[int32]int32{1: 1}, asked); !errors.Is(err, service.ErrFenced) {
		t.Fatalf("a grant to a closed lease = %v, want ErrFenced", err)
	}
	assertState(t, s, 15, 10)

	putBack, _, err = s.CloseLease(ctx, b)
	if err != nil || putBack != 75 {
		t.Fatalf("close b = %d, %v; want 75 put back", putBack, err)
	}
	assertState(t, s, 90, 10)
	if open, err := s.OpenLeases(ctx); err != nil || len(open) != 0 {
		t.Fatalf("open leases %v, %v; want none", open, err)
	}
}
