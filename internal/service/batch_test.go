package service_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// gateLocker is a mutex whose first Lock waits until the test opens the
// gate, so that buyers pile up behind the first batch and form the next one
// (the first batch forms when it holds the lock).
type gateLocker struct {
	gate  chan struct{}
	once  sync.Once
	sem   chan struct{} // the mutex; made by the first Lock
	init  sync.Once
	asked atomic.Int32 // calls of Lock, the one at the gate included
	locks atomic.Int32
	held  atomic.Int32 // holds now; more than one would be a bug
	max   atomic.Int32
}

func (g *gateLocker) Lock(ctx context.Context, _ int32, _ time.Time) (service.Lease, error) {
	g.asked.Add(1)
	g.once.Do(func() { <-g.gate })
	g.init.Do(func() { g.sem = make(chan struct{}, 1) })
	select {
	case g.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	g.locks.Add(1)
	if n := g.held.Add(1); n > g.max.Load() {
		g.max.Store(n)
	}
	return gateLease{g}, nil
}

type gateLease struct{ g *gateLocker }

func (l gateLease) Lost() <-chan struct{}                { return nil }
func (l gateLease) Token(context.Context) (int64, error) { return int64(l.g.locks.Load()), nil }
func (l gateLease) Unlock(context.Context) error         { l.g.held.Add(-1); <-l.g.sem; return nil }

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
	marks := service.NewSoldOutMarks(-1)
	// Every buyer waits behind the gate: the admission is not what is
	// tested here.
	cfg := service.Config{BatchMax: 100, MaxWaiting: -1, QueueTarget: -1}
	shop := must(service.New(strategy("batch"), service.Deps{Store: store, Locker: locker, Env: service.Env{Marks: marks, Config: cfg, Log: log}}))
	defer shop.Close()
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

// newBatchShop is a batch shop on store with an always-free lock.
func newBatchShop(t *testing.T, store *fakeStore, locker service.Locker, marks *service.SoldOutMarks, cfg service.Config) *service.Shop {
	t.Helper()
	if store.goods == nil {
		store.goods = map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 2, IsActive: 1}}
	}
	log := slog.New(slog.DiscardHandler)
	shop := must(service.New(strategy("batch"), service.Deps{Store: store, Locker: locker, Env: service.Env{Marks: marks, Config: cfg, Log: log}}))
	t.Cleanup(shop.Close)
	return shop
}

// A batch whose database stops answering mid-sale gives up after
// SaleTimeout: its buyers hear unavailable (nothing was committed), the
// goods' lock is let go, and the next buyer is sold to. Without the bound the
// batch worker waited for good, and every later buyer of the goods with it.
func TestABatchWhoseDatabaseStopsAnsweringGivesUp(t *testing.T) {
	store := &fakeStore{unhang: make(chan struct{})}
	store.hangs.Store(1)
	shop := newBatchShop(t, store, &fakeLocker{}, service.NewSoldOutMarks(0), service.Config{SaleTimeout: 200 * time.Millisecond, ConflictRetries: -1})
	t.Cleanup(func() { close(store.unhang) }) // before the shop closes: a hung worker ends
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	buy := func(id string) (*service.Order, error) {
		type result struct {
			o   *service.Order
			err error
		}
		done := make(chan result, 1)
		go func() {
			o, err := shop.Purchase(ctx, service.PurchaseRequest{GoodsNo: 1, RequestID: id})
			done <- result{o, err}
		}()
		select {
		case r := <-done:
			return r.o, r.err
		case <-time.After(10 * time.Second):
			t.Fatalf("buyer %s still waits after 10 s: the batch never gave up", id)
			return nil, nil
		}
	}
	if o, err := buy("hung"); !errors.Is(err, service.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the buyer of the batch that hung: %+v, %v; want unavailable, cut off by the sale timeout", o, err)
	}
	if o, err := buy("next"); err != nil || o == nil || o.ID == 0 {
		t.Fatalf("the next buyer: %+v, %v; want an order", o, err)
	}
	if len(store.orders) != 1 {
		t.Fatalf("%d orders, want 1 (the hung batch wrote nothing)", len(store.orders))
	}
}

// A batch whose COMMIT was cut off finds out, for each buyer, whether its
// order is there: cut after it was durable, 200 with the order; cut before,
// nothing written (then tried again, as any purchase that wrote nothing).
func TestABatchWhoseCommitWasCutOffTellsTheTruth(t *testing.T) {
	yes, no := true, false
	store := &fakeStore{cutCommit: &yes}
	shop := newBatchShop(t, store, &fakeLocker{}, service.NewSoldOutMarks(0), service.Config{OutcomeTimeout: time.Second})
	o, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "cut-1"})
	if err != nil || o == nil || o.ID == 0 || o.RequestID != "cut-1" {
		t.Fatalf("cut after it was durable: %+v, %v; want the order", o, err)
	}
	store = &fakeStore{cutCommit: &no}
	shop = newBatchShop(t, store, &fakeLocker{}, service.NewSoldOutMarks(0), service.Config{OutcomeTimeout: time.Second, ConflictRetries: 1})
	if o, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "cut-2"}); !errors.Is(err, service.ErrUnavailable) || errors.Is(err, service.ErrCommitUnknown) {
		t.Fatalf("cut before it was durable: %+v, %v; want unavailable (known not to have happened)", o, err)
	}
	if len(store.orders) != 0 {
		t.Fatalf("%d orders, want none", len(store.orders))
	}
}

// A buyer refused in a batch as a duplicate whose request id bought
// another goods hears request_id_conflict when the batch's commit is cut
// off, not "bought" with the other goods' order.
func TestACutOffBatchDoesNotAnswerWithAnotherGoodsOrder(t *testing.T) {
	yes := true
	store := &fakeStore{cutCommit: &yes,
		goods:  map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 5, IsActive: 1}, 2: {ID: 20, GoodsNo: 2, Stock: 5, IsActive: 1}},
		orders: []service.Order{{ID: 1, GoodsNo: 2, RequestID: "reused"}}}
	shop := newBatchShop(t, store, &fakeLocker{}, service.NewSoldOutMarks(0), service.Config{OutcomeTimeout: time.Second})
	o, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "reused", ClientRequestID: true})
	if !errors.Is(err, service.ErrRequestIDConflict) {
		t.Fatalf("Purchase = %+v, %v; want request_id_conflict (the id bought goods 2)", o, err)
	}
}

// When the fencing token cannot be read right after the lock is taken,
// every buyer of the batch hears lock_lost at once, nothing is sold, the
// lock is let go, and Close does not wait for them.
func TestABatchWithoutItsTokenAnswersEveryBuyer(t *testing.T) {
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 50, IsActive: 1}}}
	locker := &fakeLocker{tokenErr: errors.New("zklock: connection lost")}
	log := slog.New(slog.DiscardHandler)
	marks := service.NewSoldOutMarks(0)
	cfg := service.Config{BatchMax: 100, ConflictRetries: -1}
	shop := must(service.New(strategy("batch"), service.Deps{Store: store, Locker: locker, Env: service.Env{Marks: marks, Config: cfg, Log: log}}))
	errs := make(chan error, 20)
	for i := range 20 {
		go func() {
			_, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: fmt.Sprint("t-", i)})
			errs <- err
		}()
	}
	for range 20 {
		if err := itestReceive(t, errs); !errors.Is(err, service.ErrLockLost) {
			t.Errorf("buyer: %v, want lock_lost", err)
		}
	}
	closed := make(chan struct{})
	go func() { shop.Close(); close(closed) }()
	itestReceive(t, closed)
	if len(store.orders) != 0 || locker.unlocks != locker.locks {
		t.Errorf("%d orders, %d locks and %d unlocks; want none sold and every lock let go", len(store.orders), locker.locks, locker.unlocks)
	}
}

// itestReceive waits a generous minute for one value.
func itestReceive[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatal("nothing within a minute: a buyer or Close waits forever")
	}
	var zero T
	return zero
}

// A buyer who hangs up after its batch formed, before the batch chose whom
// to sell to, is not sold a piece. The first buyer's batch holds the lock
// (stopped in its claim) while three more queue: they form the second
// batch, during whose claim one of them hangs up.
func TestBatchDoesNotSellToABuyerWhoHangsUpAfterTheBatchFormed(t *testing.T) {
	ctx, hangUp := context.WithCancel(context.Background())
	firstClaim, goOn := make(chan struct{}), make(chan struct{})
	claims := 0
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 100}}, claimed: func() {
		switch claims++; claims {
		case 1:
			close(firstClaim)
			<-goOn
		case 2:
			hangUp()
		}
	}}
	shop := newBatchShop(t, store, &gateLocker{gate: closedChan()}, service.NewSoldOutMarks(-1), service.Config{BatchMax: 100})
	buy := func(ctx context.Context, id string) chan error {
		done := make(chan error, 1)
		go func() {
			_, err := shop.Purchase(ctx, service.PurchaseRequest{GoodsNo: 1, RequestID: id})
			done <- err
		}()
		return done
	}
	first := buy(context.Background(), "first")
	itestReceive(t, firstClaim) // the first batch holds the lock, in its claim
	a, gone, c := buy(context.Background(), "a"), buy(ctx, "gone"), buy(context.Background(), "c")
	time.Sleep(100 * time.Millisecond) // all three queued behind the first batch
	close(goOn)
	for name, ch := range map[string]chan error{"first": first, "a": a, "c": c} {
		if err := itestReceive(t, ch); err != nil {
			t.Errorf("%s: %v, want sold", name, err)
		}
	}
	if err := itestReceive(t, gone); !errors.Is(err, context.Canceled) {
		t.Errorf("the buyer who hung up: %v, want canceled", err)
	}
	if len(store.orders) != 3 || store.batches != 2 {
		t.Fatalf("%d orders in %d batches, want 3 in 2: nothing for the buyer who hung up", len(store.orders), store.batches)
	}
}

// A batch sells to purchase.batchMax buyers at most, and to that many when
// that many wait.
func TestABatchHoldsBatchMaxBuyersAtMost(t *testing.T) {
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 1000}}}
	buyInBatches(t, store, background(250), func(i int) string { return fmt.Sprint("m-", i) })
	if store.largest != 100 || len(store.orders) != 250 {
		t.Fatalf("largest batch %d, %d orders; want 100 (batchMax) and 250", store.largest, len(store.orders))
	}
}

// The batch that sells the last piece marks the goods sold out: the next
// buyer is answered without the lock.
func TestTheBatchThatSellsTheLastPieceMarksTheGoodsSoldOut(t *testing.T) {
	locker := &fakeLocker{}
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 2}}}
	shop := newBatchShop(t, store, locker, service.NewSoldOutMarks(time.Hour), service.Config{})
	for i := range 2 {
		if _, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: fmt.Sprint("l-", i)}); err != nil {
			t.Fatalf("buyer %d: %v", i, err)
		}
	}
	locks := locker.locks
	if _, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "l-late"}); !errors.Is(err, service.ErrSoldOut) {
		t.Fatalf("after the last piece: %v, want sold out", err)
	}
	if locker.locks != locks {
		t.Errorf("the buyer after the last piece took the lock (%d locks, want %d): no sold-out mark", locker.locks, locks)
	}
}

// A batch shop that is closed refuses new buyers: unavailable, nothing
// queued.
func TestAClosedBatchRefusesBuyers(t *testing.T) {
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 5}}}
	b := service.NewBatch(store, &fakeLocker{}, service.Env{})
	b.Close()
	if err := b.Purchase(context.Background(), &service.Order{GoodsNo: 1, RequestID: "late"}); !errors.Is(err, service.ErrUnavailable) {
		t.Fatalf("a buyer after Close: %v, want unavailable", err)
	}
	if len(store.orders) != 0 {
		t.Fatalf("%d orders after Close", len(store.orders))
	}
}

// Buyers who all gave up while they queued form no batch: no lock is taken
// for nobody.
func TestBuyersWhoAllGaveUpTakeNoLock(t *testing.T) {
	locker := &fakeLocker{}
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 5}}}
	b := service.NewBatch(store, locker, service.Env{})
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.Purchase(ctx, &service.Order{GoodsNo: 1, RequestID: "gone"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a buyer who gave up: %v, want canceled", err)
	}
	if locker.locks != 0 {
		t.Errorf("%d locks taken for a batch of nobody", locker.locks)
	}
}

// One limited buyer twice in the queue is put in different batches: one
// batch never holds two limited orders of one buyer (the store's rule).
func TestOneBuyerTwiceInTheQueueGoesInTwoBatches(t *testing.T) {
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 100}}}
	var twice atomic.Bool
	store.eachBatch = func(orders []*service.Order) {
		seen := map[string]bool{}
		for _, o := range orders {
			if o.OnePerBuyer && seen[o.UserID] {
				twice.Store(true)
			}
			seen[o.UserID] = true
		}
	}
	locker := &gateLocker{gate: make(chan struct{})}
	shop := newBatchShop(t, store, locker, service.NewSoldOutMarks(-1), service.Config{BatchMax: 100, OnePerBuyer: true})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			_, _ = shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: fmt.Sprint("u-", i), UserID: "alice"})
		})
	}
	time.Sleep(100 * time.Millisecond) // all queued behind the first batch's lock
	close(locker.gate)
	wg.Wait()
	if twice.Load() {
		t.Error("a batch held two orders of alice")
	}
}

// A buyer queued when the goods is marked sold out (by another batch, or
// another strategy's buyer) is answered sold out without the lock.
func TestABatchFormedAfterTheSellOutTakesNoLock(t *testing.T) {
	locker := &fakeLocker{}
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 1}}}
	shop := newBatchShop(t, store, locker, service.NewSoldOutMarks(time.Hour), service.Config{})
	if _, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "last"}); err != nil {
		t.Fatal(err)
	}
	locks := locker.locks
	for i := range 3 {
		if _, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: fmt.Sprint("after-", i)}); !errors.Is(err, service.ErrSoldOut) {
			t.Fatalf("after the sell-out: %v, want sold out", err)
		}
	}
	if locker.locks != locks {
		t.Errorf("%d locks after the sell-out, want none", locker.locks-locks)
	}
}

// A lock that cannot be had, or a lock lost during the demo's pause,
// answers every buyer of the batch and sells nothing.
func TestABatchWithoutItsLockSellsNothing(t *testing.T) {
	for _, tt := range []struct {
		name   string
		locker *fakeLocker
		cfg    service.Config
		want   error
	}{
		{"no lock", &fakeLocker{err: errors.New("zk: connection closed")}, service.Config{}, service.ErrUnavailable},
		{"lost in the pause", &fakeLocker{lost: closedChan()}, service.Config{Pause: func() time.Duration { return time.Hour }}, service.ErrLockLost},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 5}}}
			tt.cfg.ConflictRetries = -1
			shop := newBatchShop(t, store, tt.locker, service.NewSoldOutMarks(0), tt.cfg)
			if _, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "x"}); !errors.Is(err, tt.want) {
				t.Fatalf("Purchase = %v, want %v", err, tt.want)
			}
			if len(store.orders) != 0 {
				t.Fatalf("%d orders, want none", len(store.orders))
			}
		})
	}
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// The batch checks the sale window on the row it claimed, whatever the
// shop's cached window said: a batch after the end sells nothing.
func TestABatchChecksTheRowsWindow(t *testing.T) {
	ended := time.Now().Add(-time.Minute)
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 5, SaleEnd: &ended}}}
	b := service.NewBatch(store, &fakeLocker{}, service.Env{})
	defer b.Close()
	if err := b.Purchase(context.Background(), &service.Order{GoodsNo: 1, RequestID: "late"}); !errors.Is(err, service.ErrEnded) {
		t.Fatalf("a batch after the end: %v, want ended", err)
	}
	if len(store.orders) != 0 {
		t.Fatalf("%d orders after the end", len(store.orders))
	}
}

// Buyers who queued before the sell-out and form the batch after it are
// answered sold out without taking the lock again: the batch that sells
// the last piece lets the next one ask for the lock only once the goods is
// marked sold out, not when its commit begins.
func TestBuyersQueuedBeforeTheSellOutTakeNoLockAfterIt(t *testing.T) {
	locker := &gateLocker{gate: closedChan()}
	firstClaim, goOn := make(chan struct{}), make(chan struct{})
	claims := 0
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 1}}, claimed: func() {
		if claims++; claims == 1 {
			close(firstClaim)
			<-goOn
		}
	}}
	store.committing = func() {
		// A slow commit: time for a next batch to ask for the lock, if
		// it may.
		for deadline := time.Now().Add(300 * time.Millisecond); locker.asked.Load() < 2 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	shop := newBatchShop(t, store, locker, service.NewSoldOutMarks(time.Hour), service.Config{BatchMax: 100})
	results := make(chan error, 6)
	buy := buyerOf(shop, results)
	buy("first")
	itestReceive(t, firstClaim) // the first batch holds the lock, in its claim
	for i := range 5 {
		buy(fmt.Sprint("queued-", i))
	}
	time.Sleep(100 * time.Millisecond) // queued behind the first batch
	close(goOn)
	sold, soldOut := 0, 0
	for range 6 {
		switch err := itestReceive(t, results); {
		case err == nil:
			sold++
		case errors.Is(err, service.ErrSoldOut):
			soldOut++
		default:
			t.Errorf("a buyer: %v", err)
		}
	}
	if sold != 1 || soldOut != 5 || locker.locks.Load() != 1 || store.batches != 1 {
		t.Errorf("%d sold, %d sold out, %d locks, %d transactions; want 1, 5, 1 and 1 (the queued batch answered from the mark)",
			sold, soldOut, locker.locks.Load(), store.batches)
	}
}

// The next batch asks for the lock while the last one commits: a batch
// whose commit is slow does not keep the instance's next batch out of the
// lock's queue. Without the overlap the second Lock comes only after the
// first batch has answered.
func TestTheNextBatchQueuesForTheLockDuringTheCommit(t *testing.T) {
	locker := &gateLocker{gate: closedChan()}
	firstClaim, goOn := make(chan struct{}), make(chan struct{})
	committing, commit := make(chan struct{}), make(chan struct{})
	claims, commits := 0, 0
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 100}},
		claimed: func() {
			if claims++; claims == 1 {
				close(firstClaim)
				<-goOn
			}
		},
		committing: func() {
			if commits++; commits == 1 {
				close(committing)
				<-commit
			}
		}}
	shop := newBatchShop(t, store, locker, service.NewSoldOutMarks(-1), service.Config{BatchMax: 100})
	results := make(chan error, 3)
	buy := buyerOf(shop, results)
	buy("first")
	itestReceive(t, firstClaim)
	buy("second")
	buy("third")
	time.Sleep(100 * time.Millisecond) // queued behind the first batch
	close(goOn)
	itestReceive(t, committing) // the first batch's commit has begun, and waits
	for deadline := time.Now().Add(10 * time.Second); locker.asked.Load() < 2 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	asked := locker.asked.Load()
	close(commit)
	for range 3 {
		if err := itestReceive(t, results); err != nil {
			t.Errorf("a buyer: %v", err)
		}
	}
	if asked < 2 {
		t.Errorf("the next batch did not ask for the lock while the first committed (%d Lock calls)", asked)
	}
	if locker.max.Load() > 1 {
		t.Errorf("%d batches held the lock at once", locker.max.Load())
	}
}

// The batch's claims keep the Shop's sale windows fresh: the Shop reads a
// goods' window once, for its first buyers, and then lets buyers of a
// stale window that admits in without a read (the claim reads the row), so
// the claims are what tells it a window, and once a sale has ended its
// later buyers are refused before the lock. Without the claims' refresh
// every later batch holds the lock to hear it.
func TestBatchClaimsKeepTheSaleWindowsFresh(t *testing.T) {
	end := time.Now().Add(200 * time.Millisecond)
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 1, GoodsNo: 1, Stock: 100000, IsActive: 1, SaleEnd: &end}}}
	var late atomic.Int64 // claims after the end
	store.claimed = func() {
		if !time.Now().Before(end) {
			late.Add(1)
		}
	}
	shop := newBatchShop(t, store, &tokenLocker{}, nil, service.Config{WindowFor: time.Hour})
	deadline := end.Add(500 * time.Millisecond)
	var wg sync.WaitGroup
	for w := range 10 {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				_, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: fmt.Sprintf("w%d-%d", w, i)})
				if err != nil && !errors.Is(err, service.ErrEnded) {
					t.Errorf("purchase: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := store.reads.Load(); n != 1 {
		t.Errorf("%d reads of the goods' row before the lock, want the first buyers' one: the claims read it", n)
	}
	// Once a claim after the end has read the window, every buyer who
	// comes is refused before the lock. Those who passed the Shop's check
	// before it may still be on their way to the queue, each as late as the
	// scheduler makes it: at most one batch each (10 workers), and the one
	// that read the window. Without the claims' refresh every batch of the
	// 500 ms after the end claims (hundreds).
	if n := late.Load(); n > 11 {
		t.Errorf("%d batches claimed the row after the sale's end, want at most 11: the first claim's window refuses the later buyers", n)
	}
}

// A buyer of a goods whose window the Shop never read, before the sale's
// start, is refused not_started with the start after one read, before the
// lock and the claim, and the next buyer from that read. (Before, the
// first buyer reached the claim unread: a made-up goods number reached the
// lock, a ZooKeeper node each with a lock per goods.)
func TestABatchRefusesABuyerBeforeTheStartBeforeTheLock(t *testing.T) {
	start := time.Now().Add(time.Hour).Truncate(time.Second)
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 1, GoodsNo: 1, Stock: 5, IsActive: 1, SaleStart: &start}}}
	var claims atomic.Int64
	store.claimed = func() { claims.Add(1) }
	shop := newBatchShop(t, store, &tokenLocker{}, nil, service.Config{WindowFor: time.Hour})
	for i := range 2 {
		_, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: fmt.Sprintf("early-%d", i)})
		var we *service.WindowError
		if !errors.As(err, &we) || !errors.Is(err, service.ErrNotStarted) || !we.At.Equal(start) {
			t.Fatalf("buyer %d before the start: %v, want not started at %v", i, err, start)
		}
	}
	if n := claims.Load(); n != 0 {
		t.Errorf("%d claims for two buyers before the start, want none: the Shop's read refuses them", n)
	}
	if n := store.reads.Load(); n != 1 {
		t.Errorf("%d reads before the lock, want 1", n)
	}
	if len(store.orders) != 0 {
		t.Errorf("%d orders before the start", len(store.orders))
	}
}

// buyerOf returns a function that starts a purchase of goods 1 under a
// request id and sends its error to results.
func buyerOf(shop *service.Shop, results chan<- error) func(id string) {
	return func(id string) {
		go func() {
			_, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: id})
			results <- err
		}()
	}
}

// tokenLocker hands out leases that are never lost, with growing tokens; safe
// for concurrent use (the batch has a worker per goods).
type tokenLocker struct{ token atomic.Int64 }

func (l *tokenLocker) Lock(context.Context, int32, time.Time) (service.Lease, error) {
	return tokenLease(l.token.Add(1)), nil
}

type tokenLease int64

func (tokenLease) Lost() <-chan struct{}                  { return nil }
func (t tokenLease) Token(context.Context) (int64, error) { return int64(t), nil }
func (tokenLease) Unlock(context.Context) error           { return nil }

// failFirstLocker's first Lock waits until the test lets it fail; the
// others succeed.
type failFirstLocker struct {
	asked atomic.Int32
	fail  chan struct{}
}

func (l *failFirstLocker) Lock(ctx context.Context, _ int32, _ time.Time) (service.Lease, error) {
	if l.asked.Add(1) == 1 {
		<-l.fail
		return nil, fmt.Errorf("%w: lock: zk: connection closed", service.ErrUnavailable)
	}
	return tokenLease(l.asked.Load()), nil
}

// A lock that cannot be had answers the buyers who waited for it, not
// those who came while it was asked for: they wait for the next ask.
// Without the distinction the late buyer hears the first ask's failure.
func TestAFailedLockAnswersOnlyTheBuyersWhoWaitedForIt(t *testing.T) {
	locker := &failFirstLocker{fail: make(chan struct{})}
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 10, IsActive: 1}}}
	shop := newBatchShop(t, store, locker, service.NewSoldOutMarks(-1), service.Config{BatchMax: 100, ConflictRetries: -1})
	results := make(chan error, 1)
	late := make(chan error, 1)
	buyerOf(shop, results)("early")
	for deadline := time.Now().Add(10 * time.Second); locker.asked.Load() == 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond) // the first ask is out
	}
	buyerOf(shop, late)("late")
	time.Sleep(100 * time.Millisecond) // queued while the lock is asked for
	close(locker.fail)
	if err := itestReceive(t, results); !errors.Is(err, service.ErrUnavailable) {
		t.Errorf("the buyer who waited for the failed lock: %v, want unavailable", err)
	}
	if err := itestReceive(t, late); err != nil {
		t.Errorf("the buyer who came during the failed ask: %v, want sold by the next", err)
	}
}

// Buyers who come while a batch's claim runs join that batch when the
// store asks for them, up to BatchMax, and hear its answers; the one left
// over waits for the next batch. Without it each would wait for the next.
func TestBuyersWhoComeDuringTheClaimJoinTheBatch(t *testing.T) {
	firstClaim, goOn := make(chan struct{}), make(chan struct{})
	claims := 0
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 100}}, takesLate: true, claimed: func() {
		if claims++; claims == 1 {
			close(firstClaim)
			<-goOn
		}
	}}
	shop := newBatchShop(t, store, &gateLocker{gate: closedChan()}, service.NewSoldOutMarks(-1), service.Config{BatchMax: 3})
	buy := func(id string) chan error {
		done := make(chan error, 1)
		go func() {
			_, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: id})
			done <- err
		}()
		return done
	}
	first := buy("first")
	itestReceive(t, firstClaim) // the first batch (of one) holds the lock, in its claim
	late := []chan error{buy("a"), buy("b"), buy("c")}
	time.Sleep(100 * time.Millisecond) // all three queued behind the first batch
	close(goOn)
	for i, ch := range append([]chan error{first}, late...) {
		if err := itestReceive(t, ch); err != nil {
			t.Errorf("buyer %d: %v, want sold", i, err)
		}
	}
	if len(store.orders) != 4 || !slices.Equal(store.sizes, []int{3, 1}) {
		t.Fatalf("%d orders in batches of %v; want 4 in batches of 3 (two joined the first, BatchMax 3) and 1", len(store.orders), store.sizes)
	}
}

// The buyer rules, applied to what a sale's transaction read: a goods
// without a row, a request key that holds an order or came earlier in the
// sale, a buyer who holds an order of the goods under the one-per-buyer
// rule are refused, each with its reason; the others are their goods'
// candidates in the sale's order.
func TestSortBuyers(t *testing.T) {
	held := service.Order{ID: 7, GoodsNo: 1, RequestID: "old", UserID: "ann", OnePerBuyer: true}
	a := &service.Order{GoodsNo: 1, RequestID: "a"}
	used := &service.Order{GoodsNo: 1, RequestID: "used", UserID: "bob"}
	again := &service.Order{GoodsNo: 1, RequestID: "a"}
	otherBuyer := &service.Order{GoodsNo: 1, RequestID: "a", UserID: "cy"}
	ann := &service.Order{GoodsNo: 1, RequestID: "n", UserID: "ann", OnePerBuyer: true}
	annUnlimited := &service.Order{GoodsNo: 1, RequestID: "m", UserID: "ann"}
	annOfTwo := &service.Order{GoodsNo: 2, RequestID: "k", UserID: "ann", OnePerBuyer: true}
	missing := &service.Order{GoodsNo: 3, RequestID: "z"}
	f := service.Facts{
		Orders: []*service.Order{a, used, again, otherBuyer, ann, annUnlimited, annOfTwo, missing},
		Goods:  map[int32]service.Goods{1: {GoodsNo: 1, Stock: 10}, 2: {GoodsNo: 2, Stock: 10}},
		Used:   map[service.RequestKey]bool{{UserID: "bob", RequestID: "used"}: true},
		Held:   map[service.GoodsBuyer]service.Order{{GoodsNo: 1, UserID: "ann"}: held},
	}
	candidates, refused := service.SortBuyers(f)
	want := map[int32][]*service.Order{1: {a, otherBuyer, annUnlimited}, 2: {annOfTwo}}
	for no, w := range want {
		if !slices.Equal(candidates[no], w) {
			t.Errorf("goods %d: candidates %v, want %v", no, candidates[no], w)
		}
	}
	if len(candidates) != len(want) {
		t.Errorf("candidates of %d goods, want %d", len(candidates), len(want))
	}
	var bought *service.AlreadyBoughtError
	switch {
	case !errors.Is(refused[used], service.ErrDuplicateRequest):
		t.Errorf("a key that holds an order: %v, want duplicate", refused[used])
	case !errors.Is(refused[again], service.ErrDuplicateRequest):
		t.Errorf("a key earlier in the sale: %v, want duplicate", refused[again])
	case !errors.As(refused[ann], &bought) || bought.Order.ID != held.ID:
		t.Errorf("a limited buyer who holds an order: %v, want already bought, naming order %d", refused[ann], held.ID)
	case !errors.Is(refused[missing], service.ErrNotFound):
		t.Errorf("a goods without a row: %v, want not found", refused[missing])
	case len(refused) != 4:
		t.Errorf("%d refused, want 4: %v", len(refused), refused)
	}
}
