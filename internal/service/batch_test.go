package service_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// gateLocker holds its first Lock until the test opens the gate, so that
// buyers pile up behind the first batch and form the next one.
type gateLocker struct {
	gate  chan struct{}
	once  sync.Once
	locks atomic.Int32
	held  atomic.Int32 // holds now; more than one would be a bug
	max   atomic.Int32
}

func (g *gateLocker) Lock(ctx context.Context, _ int32) (service.Lease, error) {
	g.once.Do(func() { <-g.gate })
	g.locks.Add(1)
	if n := g.held.Add(1); n > g.max.Load() {
		g.max.Store(n)
	}
	return gateLease{g}, nil
}

type gateLease struct{ g *gateLocker }

func (l gateLease) Lost() <-chan struct{}                { return nil }
func (l gateLease) Token(context.Context) (int64, error) { return int64(l.g.locks.Load()), nil }
func (l gateLease) Unlock(context.Context) error         { l.g.held.Add(-1); return nil }

type batchResult struct {
	order *service.Order
	err   error
}

// buyInBatches starts n buyers (request ids from id) on a batch shop whose
// lock opens once all of them wait, and returns their results.
func buyInBatches(t *testing.T, store *fakeStore, ctxs []context.Context, id func(i int) string) []batchResult {
	t.Helper()
	locker := &gateLocker{gate: make(chan struct{})}
	log := slog.New(slog.DiscardHandler)
	cfg := service.Config{BatchMax: 100, SoldOutFor: -1}
	b := service.NewBatch(store, locker, cfg, log)
	defer b.Close()
	shop := service.New(store, b, cfg, log)
	results := make([]batchResult, len(ctxs))
	var wg sync.WaitGroup
	for i, ctx := range ctxs {
		wg.Go(func() {
			o, err := shop.Purchase(ctx, service.PurchaseRequest{GoodsNo: 1, RequestID: id(i)})
			results[i] = batchResult{o, err}
		})
	}
	time.Sleep(100 * time.Millisecond) // all queued behind the first batch's lock
	close(locker.gate)
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("buyers not answered within 10s")
	}
	if locker.max.Load() > 1 {
		t.Errorf("%d batches held the lock at once", locker.max.Load())
	}
	return results
}

func background(n int) []context.Context {
	ctxs := make([]context.Context, n)
	for i := range ctxs {
		ctxs[i] = context.Background()
	}
	return ctxs
}

func TestBatchSellsTheStockInFewTransactions(t *testing.T) {
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 30}}}
	results := buyInBatches(t, store, background(50), func(i int) string { return fmt.Sprint("r-", i) })
	sold, soldOut := 0, 0
	for _, r := range results {
		switch {
		case r.err == nil && r.order != nil && r.order.ID != 0:
			sold++
		case errors.Is(r.err, service.ErrSoldOut):
			soldOut++
		default:
			t.Errorf("unexpected answer %+v", r)
		}
	}
	if sold != 30 || soldOut != 20 || len(store.orders) != 30 || store.goods[1].Stock != 0 {
		t.Fatalf("sold %d, sold out %d, %d orders, stock %d; want 30, 20, 30, 0", sold, soldOut, len(store.orders), store.goods[1].Stock)
	}
	if store.batches > 3 {
		t.Errorf("%d transactions for 50 buyers queued at once: the batch did not coalesce", store.batches)
	}
}

// A request id that bought before, or twice in one batch, buys once: the
// repeat is answered with the first purchase's order (a replay), nobody
// else in the batch is affected.
func TestBatchRepeatedRequestIDIsReplayed(t *testing.T) {
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 100}},
		orders: []service.Order{{ID: 1, GoodsNo: 1, RequestID: "old"}}}
	ids := []string{"a", "old", "b", "a", "c"} // "old" bought before; "a" twice in the batch
	results := buyInBatches(t, store, background(len(ids)), func(i int) string { return ids[i] })
	replays := 0
	orderOf := map[string]uint64{}
	for i, r := range results {
		if r.err != nil {
			t.Errorf("buyer %d (%s): %v", i, ids[i], r.err)
			continue
		}
		if r.order.Replayed {
			replays++
		}
		if id, ok := orderOf[ids[i]]; ok && id != r.order.ID {
			t.Errorf("request id %s answered with orders %d and %d", ids[i], id, r.order.ID)
		}
		orderOf[ids[i]] = r.order.ID
	}
	if replays != 2 || len(store.orders) != 4 || orderOf["old"] != 1 {
		t.Fatalf("%d replays, %d orders, old → order %d; want 2, 4 (the old one, a, b, c), 1", replays, len(store.orders), orderOf["old"])
	}
}

func TestBatchDoesNotSellToBuyersWhoGaveUp(t *testing.T) {
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 100}}}
	ctxs := background(6)
	for _, i := range []int{1, 4} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		ctxs[i] = ctx
	}
	results := buyInBatches(t, store, ctxs, func(i int) string { return fmt.Sprint("r-", i) })
	for i, r := range results {
		gaveUp := i == 1 || i == 4
		if gaveUp != errors.Is(r.err, context.Canceled) || (!gaveUp && r.err != nil) {
			t.Errorf("buyer %d (gave up %t): %v", i, gaveUp, r.err)
		}
	}
	if len(store.orders) != 4 {
		t.Fatalf("%d orders, want 4: nothing for the buyers who gave up", len(store.orders))
	}
}

func TestBatchTransactionFailureAnswersEveryBuyer(t *testing.T) {
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 100}}, sellErr: service.ErrUnavailable}
	results := buyInBatches(t, store, background(8), func(i int) string { return fmt.Sprint("r-", i) })
	for i, r := range results {
		if !errors.Is(r.err, service.ErrUnavailable) || r.order != nil {
			t.Errorf("buyer %d: %+v, want ErrUnavailable", i, r)
		}
	}
	if len(store.orders) != 0 || store.goods[1].Stock != 100 {
		t.Fatalf("%d orders, stock %d: a failed batch must sell nothing", len(store.orders), store.goods[1].Stock)
	}
}
