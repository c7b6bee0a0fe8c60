package repo_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/repo"
	"github.com/seckill-zk/seckill-zk/internal/service"
)

// buy sells one piece of goods 1 with the atomic purchase and returns the order.
func buy(t *testing.T, s *repo.Store, rid string) service.Order {
	t.Helper()
	o := &service.Order{GoodsNo: 1, RequestID: rid}
	if err := s.SellAtomic(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if o.Status != service.OrderUnpaid {
		t.Fatalf("a new order is %q, want unpaid", o.Status)
	}
	return *o
}

func TestOrderLifeCycle(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	paid, unpaid := buy(t, s, "pay-me"), buy(t, s, "leave-me")
	assertState(t, s, 98, 2)
	now := time.Now().UTC()

	o, err := s.PayOrder(ctx, paid.ID, "", now, now.Add(-time.Hour))
	if err != nil || o.Status != service.OrderPaid || o.PaidAt == nil {
		t.Fatalf("pay: %+v, %v", o, err)
	}
	if o, err = s.PayOrder(ctx, paid.ID, "", now, now.Add(-time.Hour)); err != nil || o.Status != service.OrderPaid {
		t.Fatalf("paying a paid order again: %+v, %v, want it paid, no error", o, err)
	}
	if _, err := s.PayOrder(ctx, 1<<40, "", now, time.Time{}); !errors.Is(err, service.ErrOrderNotFound) {
		t.Fatalf("paying no order: %v, want ErrOrderNotFound", err)
	}
	// Past its timeout an unpaid order cannot be paid, swept or not.
	if _, err := s.PayOrder(ctx, unpaid.ID, "", now, now.Add(time.Hour)); !errors.Is(err, service.ErrOrderExpired) {
		t.Fatalf("paying an order past its timeout: %v, want ErrOrderExpired", err)
	}

	expired, err := s.ExpireOrders(ctx, now.Add(time.Hour), now, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(expired) != 1 || expired[0].ID != unpaid.ID || expired[0].Status != service.OrderExpired {
		t.Fatalf("expired %+v, want only the unpaid order", expired)
	}
	g, _ := s.Goods(ctx, 1)
	if g.Stock != 99 {
		t.Fatalf("stock %d after one expiry, want 99 (its piece back)", g.Stock)
	}
	if again, err := s.ExpireOrders(ctx, now.Add(time.Hour), now, 100); err != nil || len(again) != 0 {
		t.Fatalf("a second sweep expired %v (%v), want nothing", again, err)
	}
	if _, err := s.PayOrder(ctx, unpaid.ID, "", now, time.Time{}); !errors.Is(err, service.ErrOrderExpired) {
		t.Fatalf("paying an expired order: %v, want ErrOrderExpired", err)
	}
	all, err := s.OrderCounts(ctx, []int32{1})
	counts := all[1]
	if err != nil || counts[service.OrderPaid] != 1 || counts[service.OrderExpired] != 1 || counts[service.OrderUnpaid] != 0 {
		t.Fatalf("counts %v (%v), want 1 paid, 1 expired", counts, err)
	}
}

// A payment and an expiry of one order, raced many times: exactly one
// wins, and the stock comes back only when the expiry did.
func TestPaymentAndExpiryRace(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	const rounds = 60
	paidWins, expiryWins := 0, 0
	for i := range rounds {
		o := buy(t, s, fmt.Sprint("race-", i))
		before, _ := s.Goods(ctx, 1)
		now := time.Now().UTC()
		var wg sync.WaitGroup
		var payErr, sweepErr error
		var expired []service.Order
		start := make(chan struct{})
		wg.Go(func() { <-start; _, payErr = s.PayOrder(ctx, o.ID, "", now, time.Time{}) })
		wg.Go(func() { <-start; expired, sweepErr = s.ExpireOrders(ctx, now.Add(time.Hour), now, 10) })
		close(start)
		wg.Wait()
		if sweepErr != nil {
			t.Fatal(sweepErr)
		}
		after, _ := s.Goods(ctx, 1)
		got, err := s.Order(ctx, o.ID, "")
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case payErr == nil && len(expired) == 0:
			paidWins++
			if got.Status != service.OrderPaid || after.Stock != before.Stock {
				t.Fatalf("round %d: payment won, yet the order is %s and the stock went %d → %d", i, got.Status, before.Stock, after.Stock)
			}
		case errors.Is(payErr, service.ErrOrderExpired) && len(expired) == 1:
			expiryWins++
			if got.Status != service.OrderExpired || after.Stock != before.Stock+1 {
				t.Fatalf("round %d: expiry won, yet the order is %s and the stock went %d → %d", i, got.Status, before.Stock, after.Stock)
			}
		default:
			t.Fatalf("round %d: pay %v and %d expired: both or neither won", i, payErr, len(expired))
		}
	}
	t.Logf("payment won %d, expiry won %d of %d", paidWins, expiryWins, rounds)
}

// Two sweepers at once (a leader that does not know yet that it lost, and
// the next): every order expires, and its piece returns, once.
func TestConcurrentSweepersExpireEachOrderOnce(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	const orders = 40
	for i := range orders {
		buy(t, s, fmt.Sprint("o-", i))
	}
	now := time.Now().UTC()
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[uint64]int{}
	for range 4 {
		wg.Go(func() {
			for {
				expired, err := s.ExpireOrders(ctx, now.Add(time.Hour), now, 7)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, o := range expired {
					seen[o.ID]++
				}
				mu.Unlock()
				if len(expired) == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	if len(seen) != orders {
		t.Fatalf("%d orders expired, want %d", len(seen), orders)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("order %d expired %d times", id, n)
		}
	}
	assertState(t, s, 100, orders)
}

// Request ids are compared exactly: ids that differ only in case are two
// purchases; the same id twice is one.
func TestRequestIDsAreCaseSensitive(t *testing.T) {
	s := newStore(t)
	buy(t, s, "dup-1")
	buy(t, s, "DUP-1")
	if err := s.SellAtomic(context.Background(), &service.Order{GoodsNo: 1, RequestID: "dup-1"}); !errors.Is(err, service.ErrDuplicateRequest) {
		t.Fatalf("the same id again: %v, want ErrDuplicateRequest", err)
	}
	o, found, err := s.OrderByRequestID(context.Background(), service.RequestKey{RequestID: "DUP-1"})
	if err != nil || !found || o.RequestID != "DUP-1" {
		t.Fatalf("lookup of DUP-1: %+v %v %v", o, found, err)
	}
	assertState(t, s, 98, 2)
}

// A request id is its buyer's: two buyers' purchases under one id are two
// orders, in one batch too, and each buyer's lookup finds its own; the same
// buyer's id twice is one, anonymous buyers (no user id) share one space.
func TestRequestIDsArePerBuyer(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	alice := &service.Order{GoodsNo: 1, RequestID: "req-1", UserID: "alice"}
	if err := s.SellAtomic(ctx, alice); err != nil {
		t.Fatal(err)
	}
	refused, err := sellBatch(ctx, s, 0, []*service.Order{
		{GoodsNo: 1, RequestID: "req-1", UserID: "mallory"},
		{GoodsNo: 1, RequestID: "req-1"},
		{GoodsNo: 1, RequestID: "req-1", UserID: "alice"},
		{GoodsNo: 1, RequestID: "req-2"},
		{GoodsNo: 1, RequestID: "req-2"},
	}, sellAll, noGuard, nil)
	if err != nil {
		t.Fatal(err)
	}
	var dups int
	for _, e := range refused {
		if !errors.Is(e, service.ErrDuplicateRequest) {
			t.Errorf("refused: %v, want only duplicates", e)
		}
		dups++
	}
	if dups != 2 {
		t.Errorf("%d of the batch refused as duplicates, want 2 (alice's req-1 and the second anonymous req-2)", dups)
	}
	for _, k := range []service.RequestKey{{UserID: "alice", RequestID: "req-1"}, {UserID: "mallory", RequestID: "req-1"}, {RequestID: "req-1"}} {
		o, found, err := s.OrderByRequestID(ctx, k)
		if err != nil || !found || o.UserID != k.UserID {
			t.Errorf("lookup of %+v: %+v found %v err %v", k, o, found, err)
		}
		if k.UserID == "alice" && o.ID != alice.ID {
			t.Errorf("alice's req-1 is order %d, she bought %d", o.ID, alice.ID)
		}
	}
	if _, found, err := s.OrderByRequestID(ctx, service.RequestKey{UserID: "bob", RequestID: "req-1"}); err != nil || found {
		t.Errorf("bob's req-1, never sent: found %v err %v", found, err)
	}
	if err := s.SellAtomic(ctx, &service.Order{GoodsNo: 1, RequestID: "req-1", UserID: "mallory"}); !errors.Is(err, service.ErrDuplicateRequest) {
		t.Errorf("mallory's req-1 again: %v, want ErrDuplicateRequest", err)
	}
	assertState(t, s, 96, 4)
}

// An owner reads and pays its own orders only: another buyer's is not
// found, and stays unpaid.
func TestOrdersOfAnOwner(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	o := &service.Order{GoodsNo: 1, RequestID: "alices", UserID: "alice"}
	if err := s.SellAtomic(ctx, o); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if _, err := s.Order(ctx, o.ID, "mallory"); !errors.Is(err, service.ErrOrderNotFound) {
		t.Fatalf("mallory reads alice's order: %v, want ErrOrderNotFound", err)
	}
	if _, err := s.PayOrder(ctx, o.ID, "mallory", now, time.Time{}); !errors.Is(err, service.ErrOrderNotFound) {
		t.Fatalf("mallory pays alice's order: %v, want ErrOrderNotFound", err)
	}
	if got, err := s.Order(ctx, o.ID, "alice"); err != nil || got.Status != service.OrderUnpaid {
		t.Fatalf("alice's order after mallory's try: %+v, %v; want unpaid", got, err)
	}
	if got, err := s.PayOrder(ctx, o.ID, "alice", now, time.Time{}); err != nil || got.Status != service.OrderPaid {
		t.Fatalf("alice pays: %+v, %v", got, err)
	}
}

// GoodsOf and OrderCounts read several goods at once (the sampler's two
// reads): each goods its own row and counts, a goods without a row
// missing from the rows and counted zero.
func TestGoodsAndOrdersOfSeveralGoods(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := s.SetStock(ctx, 2, 7, repo.StockReset{}); err != nil {
		t.Fatal(err)
	}
	buy(t, s, "g1-a")
	paid := buy(t, s, "g1-b")
	if _, err := s.PayOrder(ctx, paid.ID, "", time.Now().UTC(), time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := s.SellAtomic(ctx, &service.Order{GoodsNo: 2, RequestID: "g2-a"}); err != nil {
		t.Fatal(err)
	}
	nos := []int32{1, 2, 3}
	goods, err := s.GoodsOf(ctx, nos)
	if err != nil {
		t.Fatal(err)
	}
	if len(goods) != 2 || goods[1].Stock != 98 || goods[2].Stock != 6 {
		t.Fatalf("GoodsOf(1, 2, 3) = %+v, want goods 1 at 98 and 2 at 6, no goods 3", goods)
	}
	counts, err := s.OrderCounts(ctx, nos)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]map[string]int64{
		1: {service.OrderUnpaid: 1, service.OrderPaid: 1, service.OrderExpired: 0},
		2: {service.OrderUnpaid: 1, service.OrderPaid: 0, service.OrderExpired: 0},
		3: {service.OrderUnpaid: 0, service.OrderPaid: 0, service.OrderExpired: 0},
	}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Fatalf("OrderCounts(1, 2, 3) = %v, want %v", counts, want)
	}
	if g, err := s.GoodsOf(ctx, nil); err != nil || len(g) != 0 {
		t.Fatalf("GoodsOf() = %v, %v, want nothing, no query", g, err)
	}
}

// The sweeper returns the pieces of expired orders goods by goods in the
// order a batch of several goods claims their rows, so the two never
// deadlock: here a transaction holds goods 1's row while the sweeper,
// with orders of eight goods to expire, waits for it; then it locks the
// other seven rows, as a batch would. In map order the sweeper held some
// of them by then in seven rounds of eight, and InnoDB rolled one of the
// two back (error 1213); four rounds.
func TestTheSweeperLocksGoodsRowsInTheBatchsOrder(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, db := storeAndDB(ctx, t, 8, 10)
	for round := range 4 {
		sweepWhileABatchHoldsGoodsOne(ctx, t, s, db, round)
	}
	for g := int32(1); g <= 8; g++ {
		if got, err := s.Goods(ctx, g); err != nil || got.Stock != 10 {
			t.Errorf("goods %d: %+v, %v; want every piece back, stock 10", g, got, err)
		}
	}
}

// sweepWhileABatchHoldsGoodsOne is a round of
// TestTheSweeperLocksGoodsRowsInTheBatchsOrder.
func sweepWhileABatchHoldsGoodsOne(ctx context.Context, t *testing.T, s *repo.Store, db *sql.DB, round int) {
	t.Helper()
	for g := int32(1); g <= 8; g++ {
		if err := s.SellAtomic(ctx, &service.Order{GoodsNo: g, RequestID: fmt.Sprint("sweep-", round, "-", g)}); err != nil {
			t.Fatal(err)
		}
	}
	batch, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer batch.Rollback()
	lock := func(goods string) error {
		rows, err := batch.QueryContext(ctx, "SELECT id FROM goods_stock WHERE goods_no IN ("+goods+") ORDER BY goods_no, id FOR UPDATE")
		if err == nil {
			err = rows.Close()
		}
		return err
	}
	if err := lock("1"); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	var expired []service.Order
	var sweepErr error
	var wg sync.WaitGroup
	wg.Go(func() { expired, sweepErr = s.ExpireOrders(ctx, now.Add(time.Hour), now, 100) })
	// The sweeper waits at goods 1's row (its statement shows in the
	// process list while it waits).
	waiting := false
	for range 200 {
		var n int
		err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() "+
			"AND INFO LIKE 'UPDATE goods_stock SET stock = stock + % WHERE goods_no = 1 %'").Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if waiting = n > 0; waiting {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	if !waiting {
		t.Fatalf("round %d: the sweeper never waited for goods 1's row", round)
	}
	lockErr := lock("2,3,4,5,6,7,8")
	if lockErr == nil {
		lockErr = batch.Commit()
	}
	wg.Wait()
	if lockErr != nil || sweepErr != nil {
		t.Fatalf("round %d: the batch's lock: %v; the sweep: %v (both want no error)", round, lockErr, sweepErr)
	}
	if len(expired) != 8 {
		t.Fatalf("round %d: expired %d orders, want 8", round, len(expired))
	}
}
