package service_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

type fakeStore struct {
	mu      sync.Mutex // the row lock: held by a sale (BeginSale, BeginBatch) from claim to end
	batches int        // batch sales committed
	goods   map[int32]service.Goods
	fences  map[int32]int64 // the highest token each goods was sold under
	orders  []service.Order
	readErr error
	reads   atomic.Int64 // Goods calls: the reads outside a sale
	sellErr error
	onSell  func() // runs inside the sale's transaction, before the guard
	// committing runs after the guard passed, before the commit
	committing func()
	// cutCommit makes Sell report ErrCommitUnknown after deciding whether
	// the commit went through (true: written).
	cutCommit *bool
	lookupErr error // OrderByRequestID fails with it
	countsErr error // OrderCounts fails with it
	// claimed runs in BeginBatch after the claim; largest is the most
	// orders a batch's sale was given (late buyers not counted).
	claimed func()
	largest int
	// takesLate makes BeginBatch insert the orders first, as the MySQL
	// store does, so that late buyers join; sizes are the orders of each
	// batch's Facts, late buyers included, in the order of the claims.
	takesLate bool
	sizes     []int
	// eachBatch sees the orders of every batch (late buyers not counted).
	eachBatch func([]*service.Order)
	// hangs: that many BeginBatch calls wait for their context to end (or
	// unhang to close), as a database that stops answering mid-sale.
	hangs  atomic.Int32
	unhang chan struct{}

	data sync.RWMutex // goods and orders: reads outside the row lock race with commits
}

func (f *fakeStore) Goods(ctx context.Context, no int32) (service.Goods, error) {
	f.reads.Add(1)
	return f.row(ctx, no)
}

// row is the goods' row as a sale reads (claims) it.
func (f *fakeStore) row(_ context.Context, no int32) (service.Goods, error) {
	if f.readErr != nil {
		return service.Goods{}, f.readErr
	}
	f.data.RLock()
	defer f.data.RUnlock()
	g, ok := f.goods[no]
	if !ok {
		return service.Goods{}, service.ErrNotFound
	}
	return g, nil
}

func (f *fakeStore) Sell(_ context.Context, g service.Goods, stock int32, o *service.Order) error {
	return f.write(g, stock, o, func() error { return nil })
}

// write is the transaction both sales end with: guard, then commit.
func (f *fakeStore) write(g service.Goods, stock int32, o *service.Order, guard func() error) error {
	if f.sellErr != nil {
		return f.sellErr
	}
	if f.onSell != nil {
		f.onSell()
	}
	if err := guard(); err != nil {
		return err // rolled back: nothing changes
	}
	return f.commit(g, stock, o)
}

// commit is a sale's commit, its guard passed: the stock and the order
// written, unless the commit is cut off (cutCommit).
func (f *fakeStore) commit(g service.Goods, stock int32, o *service.Order) error {
	if f.committing != nil {
		f.committing()
	}
	if f.cutCommit != nil && !*f.cutCommit {
		return service.ErrCommitUnknown // cut off, and rolled back
	}
	f.data.Lock()
	g.Stock = stock
	f.goods[g.GoodsNo] = g
	o.ID = uint64(len(f.orders) + 1)
	f.orders = append(f.orders, *o)
	f.data.Unlock()
	if f.cutCommit != nil {
		return service.ErrCommitUnknown // cut off after it was durable
	}
	return nil
}

// BeginSale keeps the real store's contract: the row lock is held from the
// claim to the sale's end; a token below the goods' fence sells nothing.
func (f *fakeStore) BeginSale(ctx context.Context, no int32, fence int64) (service.Sale, error) {
	f.mu.Lock()
	g, err := f.row(ctx, no)
	if err == nil && fence < f.fences[no] {
		err = service.ErrFenced
	}
	if err != nil {
		f.mu.Unlock()
		return nil, err
	}
	return &fakeSale{f: f, g: g, fence: fence}, nil
}

// fakeSale is a fakeStore's sale of one goods: what Sell wrote is
// committed by Commit, and the row lock let go at the end.
type fakeSale struct {
	f     *fakeStore
	g     service.Goods
	fence int64
	order *service.Order
}

func (s *fakeSale) Goods() map[int32]service.Goods { return map[int32]service.Goods{s.g.GoodsNo: s.g} }

func (s *fakeSale) Sell(_ context.Context, sold map[int32][]*service.Order) error {
	if s.f.sellErr != nil {
		return s.f.sellErr
	}
	if len(sold) != 1 || len(sold[s.g.GoodsNo]) != 1 {
		return service.ErrPurchaseFailed // the fake sells one order of its goods
	}
	if s.f.onSell != nil {
		s.f.onSell()
	}
	s.order = sold[s.g.GoodsNo][0]
	return nil
}

func (s *fakeSale) Commit(context.Context) error {
	defer s.f.mu.Unlock()
	if s.order == nil {
		return nil
	}
	err := s.f.commit(s.g, s.g.Stock-1, s.order)
	if err == nil {
		if s.f.fences == nil {
			s.f.fences = map[int32]int64{}
		}
		s.f.fences[s.g.GoodsNo] = s.fence
	}
	return err
}

func (s *fakeSale) Abort(_ context.Context, err error) error {
	s.f.mu.Unlock()
	return err
}

// BeginBatch keeps the real store's contract: the rows claimed (a token
// below a goods' fence sells nothing) and locked until the sale ends; the
// orders of start.First in first with takesLate, as the MySQL store does,
// so that late buyers join; every request key looked up and the buyers'
// orders under the one-per-buyer rule read as the Facts; everything sold
// written at the commit.
func (f *fakeStore) BeginBatch(ctx context.Context, start service.BatchStart) (service.BatchSale, error) {
	if f.hangs.Add(-1) >= 0 {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-f.unhang:
			return nil, service.ErrUnavailable
		}
	}
	f.mu.Lock()
	b := &fakeBatchSale{f: f, fence: start.Fence, nos: start.Goods, claimed: map[int32]service.Goods{}}
	if f.takesLate {
		b.first = start.First
	}
	if err := b.claim(ctx); err != nil {
		f.mu.Unlock()
		return nil, err
	}
	if f.claimed != nil {
		f.claimed()
	}
	return b, nil
}

// fakeBatchSale is a fakeStore's batch sale: the row lock held from the
// claim to its end.
type fakeBatchSale struct {
	f       *fakeStore
	fence   int64
	nos     []int32
	claimed map[int32]service.Goods
	first   []*service.Order
	sold    map[int32][]*service.Order
}

func (b *fakeBatchSale) claim(ctx context.Context) error {
	if b.f.sellErr != nil {
		return b.f.sellErr
	}
	for _, no := range b.nos {
		g, err := b.f.row(ctx, no)
		switch {
		case errors.Is(err, service.ErrNotFound):
			continue
		case err != nil:
			return err
		}
		if b.fence < b.f.fences[no] {
			return service.ErrFenced
		}
		b.claimed[no] = g
	}
	return nil
}

func (b *fakeBatchSale) Goods() map[int32]service.Goods { return b.claimed }

func (b *fakeBatchSale) OrdersFirst() bool { return len(b.first) > 0 }

func (b *fakeBatchSale) Facts(_ context.Context, orders []*service.Order, _ bool) (service.Facts, error) {
	f := b.f
	own := orders // the batch's, without the late buyers
	if b.OrdersFirst() {
		own = b.first
	}
	f.largest = max(f.largest, len(own))
	if f.eachBatch != nil {
		f.eachBatch(own)
	}
	f.sizes = append(f.sizes, len(orders))
	facts := service.Facts{Orders: orders, Goods: b.claimed, Used: map[service.RequestKey]bool{}, Held: map[service.GoodsBuyer]service.Order{}}
	f.data.RLock()
	defer f.data.RUnlock()
	for _, o := range f.orders {
		facts.Used[o.Key()] = true
		if o.OnePerBuyer && o.UserID != "" && o.Status != service.OrderExpired {
			facts.Held[service.GoodsBuyer{GoodsNo: o.GoodsNo, UserID: o.UserID}] = o
		}
	}
	return facts, nil
}

func (b *fakeBatchSale) Sell(_ context.Context, sold map[int32][]*service.Order) error {
	b.sold = sold
	return nil
}

func (b *fakeBatchSale) SellAndCommit(ctx context.Context, sold map[int32][]*service.Order) error {
	b.sold = sold
	return b.Commit(ctx)
}

func (b *fakeBatchSale) Commit(context.Context) error {
	f := b.f
	defer f.mu.Unlock()
	if f.committing != nil {
		f.committing()
	}
	if f.cutCommit != nil && !*f.cutCommit {
		return service.ErrCommitUnknown // cut off, and rolled back
	}
	f.data.Lock()
	for _, no := range b.nos {
		for _, o := range b.sold[no] {
			o.ID = uint64(len(f.orders) + 1)
			f.orders = append(f.orders, *o)
		}
		if g, ok := b.claimed[no]; ok {
			g.Stock -= int32(len(b.sold[no]))
			f.goods[no] = g
		}
	}
	f.data.Unlock()
	f.batches++
	if f.fences == nil {
		f.fences = map[int32]int64{}
	}
	for no := range b.claimed {
		f.fences[no] = b.fence
	}
	if f.cutCommit != nil {
		return service.ErrCommitUnknown // cut off after it was durable
	}
	return nil
}

func (b *fakeBatchSale) Abort(_ context.Context, err error) error {
	b.f.mu.Unlock()
	return err
}

func (f *fakeStore) SellAtomic(ctx context.Context, o *service.Order) error {
	g, err := f.Goods(ctx, o.GoodsNo)
	if err != nil {
		return err
	}
	if g.Stock < 1 {
		return service.ErrSoldOut
	}
	return f.write(g, g.Stock-1, o, func() error { return nil })
}

func (f *fakeStore) OrderByRequestID(_ context.Context, key service.RequestKey) (service.Order, bool, error) {
	if f.lookupErr != nil {
		return service.Order{}, false, f.lookupErr
	}
	f.data.RLock()
	defer f.data.RUnlock()
	for _, o := range f.orders {
		if o.Key() == key {
			return o, true, nil
		}
	}
	return service.Order{}, false, nil
}

func (f *fakeStore) ActiveOrderOfBuyer(_ context.Context, no int32, user string) (service.Order, bool, error) {
	f.data.RLock()
	defer f.data.RUnlock()
	for _, o := range f.orders {
		if o.GoodsNo == no && o.UserID == user && o.OnePerBuyer && o.Status != service.OrderExpired {
			return o, true, nil
		}
	}
	return service.Order{}, false, nil
}

func (f *fakeStore) SaleTotals(context.Context) (service.SaleTotals, error) {
	f.data.RLock()
	defer f.data.RUnlock()
	var t service.SaleTotals
	for _, g := range f.goods {
		t.Goods++
		if g.Stock <= 0 {
			t.SoldOut++
		}
		t.StockLeft += int64(max(g.Stock, 0))
	}
	return t, nil
}

func (f *fakeStore) GoodsOf(ctx context.Context, nos []int32) (map[int32]service.Goods, error) {
	out := map[int32]service.Goods{}
	for _, no := range nos {
		g, err := f.Goods(ctx, no)
		switch {
		case errors.Is(err, service.ErrNotFound):
		case err != nil:
			return nil, err
		default:
			out[no] = g
		}
	}
	return out, nil
}

func (f *fakeStore) OrderCounts(_ context.Context, nos []int32) (map[int32]map[string]int64, error) {
	if f.countsErr != nil {
		return nil, f.countsErr
	}
	f.data.RLock()
	defer f.data.RUnlock()
	n := map[int32]map[string]int64{}
	for _, no := range nos {
		n[no] = map[string]int64{}
	}
	for _, o := range f.orders {
		if c, ok := n[o.GoodsNo]; ok {
			c[service.OrderUnpaid]++
		}
	}
	return n, nil
}

type fakeLocker struct {
	mu        sync.Mutex // a batch's release may overlap the next batch's Lock
	err       error
	lost      chan struct{}
	token     int64 // handed out by Token, then incremented
	tokenErr  error
	locks     int
	unlocks   int
	deadline  bool          // Lock waits for ctx to end
	released  chan struct{} // if not nil, closed by the first Unlock
	unlockCtx error         // ctx.Err() of the last Unlock
}

func (f *fakeLocker) Lock(ctx context.Context, _ int32, _ time.Time) (service.Lease, error) {
	if f.deadline {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if f.err != nil {
		return nil, f.err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.locks++
	return f, nil
}

func (f *fakeLocker) Lost() <-chan struct{} { return f.lost }

func (f *fakeLocker) Token(context.Context) (int64, error) {
	if f.tokenErr != nil {
		return 0, f.tokenErr
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.token++
	return f.token, nil
}

func (f *fakeLocker) Unlock(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.unlocks++
	f.unlockCtx = ctx.Err()
	if f.released != nil {
		close(f.released)
	}
	return nil
}

// strategy is the registry's entry of name.
func strategy(name string) service.Strategy {
	st, ok := service.StrategyNamed(name)
	if !ok {
		panic("no strategy " + name)
	}
	return st
}

// custom is a strategy that sells with p.
func custom(p service.Purchaser) service.Strategy {
	return service.Strategy{Name: "custom", New: func(service.Deps) (service.Purchaser, error) { return p, nil }}
}

// must is the Shop New built, for deps a test has right.
func must(shop *service.Shop, err error) *service.Shop {
	if err != nil {
		panic(err)
	}
	return shop
}

func newShop(store *fakeStore, locker service.Locker, cfg service.Config) *service.Shop {
	return newShopMarking(store, locker, service.NewSoldOutMarks(0), cfg)
}

// newUnlockedShop sells with the seed's purchase without a lock.
func newUnlockedShop(store *fakeStore, cfg service.Config) *service.Shop {
	if store.goods == nil {
		store.goods = map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 2, IsActive: 1}}
	}
	log := slog.New(slog.DiscardHandler)
	return must(service.New(service.UnlockedStrategy(), service.Deps{Store: store, Env: service.Env{Marks: service.NewSoldOutMarks(0), Config: cfg, Log: log}}))
}

// newShopMarking is newShop with the sold-out marks given.
func newShopMarking(store *fakeStore, locker service.Locker, marks *service.SoldOutMarks, cfg service.Config) *service.Shop {
	if store.goods == nil {
		store.goods = map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 2, IsActive: 1}}
	}
	log := slog.New(slog.DiscardHandler)
	return must(service.New(strategy("seed"), service.Deps{Store: store, Locker: locker, Env: service.Env{Marks: marks, Config: cfg, Log: log}}))
}

func TestPurchaseOutcomes(t *testing.T) {
	tests := []struct {
		name    string
		store   *fakeStore
		goodsNo int32
		want    error
		orders  int
	}{
		{"sells one", &fakeStore{}, 1, nil, 1},
		{"no such goods", &fakeStore{}, 2, service.ErrNotFound, 0},
		{"sold out", &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 0}}}, 1, service.ErrSoldOut, 0},
		{"invalid goods number", &fakeStore{}, 0, service.ErrInvalidGoodsNo, 0},
		{"database down", &fakeStore{readErr: service.ErrUnavailable}, 1, service.ErrUnavailable, 0},
		{"write fails", &fakeStore{sellErr: service.ErrPurchaseFailed}, 1, service.ErrPurchaseFailed, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			locker := &fakeLocker{lost: make(chan struct{})}
			_, err := newShop(tt.store, locker, service.Config{}).Purchase(context.Background(), service.PurchaseRequest{GoodsNo: tt.goodsNo, RequestID: "r"})
			if !errors.Is(err, tt.want) {
				t.Fatalf("Purchase = %v, want %v", err, tt.want)
			}
			if len(tt.store.orders) != tt.orders {
				t.Fatalf("%d orders, want %d", len(tt.store.orders), tt.orders)
			}
			if locker.locks != locker.unlocks {
				t.Fatalf("%d locks but %d unlocks: the lock must be released on every path", locker.locks, locker.unlocks)
			}
		})
	}
}

func TestPurchaseWritesReadValueMinusOne(t *testing.T) {
	store := &fakeStore{}
	order, err := newUnlockedShop(store, service.Config{}).Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "req-7"})
	if err != nil {
		t.Fatal(err)
	}
	if store.goods[1].Stock != 1 || order.RequestID != "req-7" || order.ID == 0 {
		t.Fatalf("stock %d, order %+v", store.goods[1].Stock, order)
	}
}

func TestPurchaseAbortsWhenTheLockIsLost(t *testing.T) {
	t.Run("during the sleep", func(t *testing.T) {
		store := &fakeStore{}
		locker := &fakeLocker{lost: make(chan struct{})}
		close(locker.lost)
		_, err := newShop(store, locker, service.Config{Pause: func() time.Duration { return time.Hour }}).Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "r"})
		if !errors.Is(err, service.ErrLockLost) || len(store.orders) != 0 || store.goods[1].Stock != 2 {
			t.Fatalf("err %v, %d orders, stock %d: want ErrLockLost and nothing written", err, len(store.orders), store.goods[1].Stock)
		}
		if locker.unlocks != 1 {
			t.Fatal("a lost lock must still be released")
		}
	})
	t.Run("just before commit", func(t *testing.T) {
		locker := &fakeLocker{lost: make(chan struct{})}
		store := &fakeStore{onSell: func() { close(locker.lost) }}
		_, err := newShop(store, locker, service.Config{}).Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "r"})
		if !errors.Is(err, service.ErrLockLost) || len(store.orders) != 0 || store.goods[1].Stock != 2 {
			t.Fatalf("err %v, %d orders, stock %d: want ErrLockLost and nothing written", err, len(store.orders), store.goods[1].Stock)
		}
	})
}

func TestPurchaseLockFailures(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		locker := &fakeLocker{deadline: true}
		_, err := newShop(&fakeStore{}, locker, service.Config{AcquireTimeout: 20 * time.Millisecond}).Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "r"})
		if !errors.Is(err, service.ErrLockTimeout) {
			t.Fatalf("Purchase = %v, want ErrLockTimeout", err)
		}
	})
	t.Run("zookeeper down", func(t *testing.T) {
		locker := &fakeLocker{err: errors.New("zk: could not connect to a server")}
		_, err := newShop(&fakeStore{}, locker, service.Config{}).Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "r"})
		if !errors.Is(err, service.ErrUnavailable) {
			t.Fatalf("Purchase = %v, want ErrUnavailable", err)
		}
	})
	t.Run("buyer gone", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := newShop(&fakeStore{}, &fakeLocker{deadline: true}, service.Config{}).Purchase(ctx, service.PurchaseRequest{GoodsNo: 1, RequestID: "r"})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Purchase = %v, want context.Canceled", err)
		}
	})
}

func TestPurchaseIsFencedByTheLocksToken(t *testing.T) {
	t.Run("a token older than the row's is refused and writes nothing", func(t *testing.T) {
		store := &fakeStore{fences: map[int32]int64{1: 100}}
		locker := &fakeLocker{lost: make(chan struct{}), token: 41}
		_, err := newShop(store, locker, service.Config{}).Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "r"})
		if !errors.Is(err, service.ErrFenced) || !errors.Is(err, service.ErrLockLost) {
			t.Fatalf("Purchase = %v, want ErrFenced (an ErrLockLost)", err)
		}
		if len(store.orders) != 0 || store.goods[1].Stock != 2 || locker.unlocks != 1 {
			t.Fatalf("%d orders, stock %d, %d unlocks: want nothing written and the lock released", len(store.orders), store.goods[1].Stock, locker.unlocks)
		}
	})
	t.Run("each purchase sells under its own lease's token", func(t *testing.T) {
		store := &fakeStore{}
		locker := &fakeLocker{lost: make(chan struct{}), token: 7}
		shop := newShop(store, locker, service.Config{})
		for range 2 {
			if _, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "r"}); err != nil {
				t.Fatal(err)
			}
		}
		if store.fences[1] != 9 {
			t.Fatalf("row fenced at %d, want the second lease's token 9", store.fences[1])
		}
	})
	t.Run("no token: lock lost, nothing written", func(t *testing.T) {
		store := &fakeStore{}
		locker := &fakeLocker{lost: make(chan struct{}), tokenErr: errors.New("zklock: lock lost")}
		_, err := newShop(store, locker, service.Config{}).Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "r"})
		if !errors.Is(err, service.ErrLockLost) || len(store.orders) != 0 || locker.unlocks != 1 {
			t.Fatalf("Purchase = %v with %d orders and %d unlocks, want ErrLockLost, none and 1", err, len(store.orders), locker.unlocks)
		}
	})
}

func TestPurchaseWhoseCommitWasCutOffTellsTheTruth(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name      string
		store     func() *fakeStore // a new one for each subtest
		want      error             // nil: a 200 with the order
		wantCount int
	}{
		{"it went through: the order is found and returned", func() *fakeStore { return &fakeStore{cutCommit: &yes} }, nil, 1},
		{"it did not: unavailable, nothing bought", func() *fakeStore { return &fakeStore{cutCommit: &no} }, service.ErrUnavailable, 0},
		{"the database stays away: outcome unknown", func() *fakeStore { return &fakeStore{cutCommit: &yes, lookupErr: service.ErrUnavailable} },
			service.ErrCommitUnknown, 1},
	}
	for _, tt := range tests {
		for _, locked := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s (locked %t)", tt.name, locked), func(t *testing.T) {
				store := tt.store()
				cfg := service.Config{OutcomeTimeout: 200 * time.Millisecond}
				shop := newUnlockedShop(store, cfg)
				if locked {
					shop = newShop(store, &fakeLocker{lost: make(chan struct{})}, cfg)
				}
				order, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "req-cut"})
				if tt.want == nil {
					if err != nil || order == nil || order.ID == 0 || order.RequestID != "req-cut" {
						t.Fatalf("Purchase = %+v, %v; want the order that was written", order, err)
					}
				} else if !errors.Is(err, tt.want) || order != nil {
					t.Fatalf("Purchase = %+v, %v; want %v", order, err, tt.want)
				}
				if tt.want == service.ErrUnavailable && errors.Is(err, service.ErrCommitUnknown) {
					t.Fatalf("Purchase = %v: a purchase known not to have happened is no unknown outcome", err)
				}
				if len(store.orders) != tt.wantCount {
					t.Fatalf("%d orders, want %d", len(store.orders), tt.wantCount)
				}
			})
		}
	}
}

func TestSoldOutIsAnsweredWithoutTheLockUntilTheMarkExpires(t *testing.T) {
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 0}}}
	locker := &fakeLocker{lost: make(chan struct{})}
	shop := newShopMarking(store, locker, service.NewSoldOutMarks(50*time.Millisecond), service.Config{})
	for range 3 {
		if _, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "r"}); !errors.Is(err, service.ErrSoldOut) {
			t.Fatalf("Purchase = %v, want ErrSoldOut", err)
		}
	}
	if locker.locks != 1 {
		t.Fatalf("%d locks for 3 sold-out buyers, want 1: the others are answered from the mark", locker.locks)
	}
	time.Sleep(60 * time.Millisecond) // the mark expires; the goods is still sold out
	if _, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "r1"}); !errors.Is(err, service.ErrSoldOut) {
		t.Fatalf("Purchase after the mark expired = %v, want ErrSoldOut", err)
	}
	if locker.locks != 1 {
		t.Fatalf("%d locks: a buyer after the mark's expiry queued for the lock; a read without it says sold out", locker.locks)
	}
	store.data.Lock()
	store.goods[1] = service.Goods{ID: 10, GoodsNo: 1, Stock: 5} // restock
	store.data.Unlock()
	time.Sleep(60 * time.Millisecond)
	if _, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "r2"}); err != nil {
		t.Fatalf("after the restock and the mark's expiry: %v, want a sale", err)
	}
}

// blockingLocker holds every Lock until release is closed, then is a real
// mutex, so that the fakes behind it are used by one buyer at a time.
type blockingLocker struct {
	fakeLocker
	entered chan struct{}
	release chan struct{}
	mu      sync.Mutex
}

func (b *blockingLocker) Lock(ctx context.Context, n int32, at time.Time) (service.Lease, error) {
	b.entered <- struct{}{}
	<-b.release
	b.mu.Lock()
	if _, err := b.fakeLocker.Lock(ctx, n, at); err != nil {
		b.mu.Unlock()
		return nil, err
	}
	return b, nil
}

func (b *blockingLocker) Unlock(ctx context.Context) error {
	defer b.mu.Unlock()
	return b.fakeLocker.Unlock(ctx)
}

func TestBuyersBeyondMaxWaitingAreBusy(t *testing.T) {
	store := &fakeStore{}
	locker := &blockingLocker{fakeLocker: fakeLocker{lost: make(chan struct{})}, entered: make(chan struct{}, 3), release: make(chan struct{})}
	shop := newShop(store, locker, service.Config{MaxWaiting: 2})
	errs := make(chan error, 2)
	for i := range 2 {
		go func() {
			_, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: fmt.Sprint("w-", i)})
			errs <- err
		}()
	}
	for range 2 { // both wait for the lock
		e2e.Receive(t, locker.entered, 10*time.Second, "a buyer at the lock")
	}
	if _, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "third"}); !errors.Is(err, service.ErrBusy) {
		t.Fatalf("a third buyer with two waiting: %v, want ErrBusy", err)
	}
	close(locker.release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("a waiting buyer: %v", err)
		}
	}
	if _, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "later"}); err != nil && !errors.Is(err, service.ErrSoldOut) {
		t.Fatalf("once the waiters are done: %v, want room again", err)
	}
}

// The lock is let go while the sale commits, not after: the next holder's
// claim waits for the row lock instead (see handOff). A sale that would only
// release after its commit waits here in vain.
func TestTheLockIsHandedOnWhileTheSaleCommits(t *testing.T) {
	locker := &fakeLocker{lost: make(chan struct{}), released: make(chan struct{})}
	var releasedFirst bool
	store := &fakeStore{committing: func() {
		select {
		case <-locker.released:
			releasedFirst = true
		case <-time.After(5 * time.Second):
		}
	}}
	shop := newShop(store, locker, service.Config{})
	if _, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "r-1"}); err != nil {
		t.Fatal(err)
	}
	if !releasedFirst {
		t.Fatal("the commit went ahead without the lock being released: the hand-off follows the commit")
	}
	if locker.unlocks != 1 {
		t.Fatalf("unlocks = %d, want 1", locker.unlocks)
	}

	// A sale that fails before its guard still releases, once.
	locker = &fakeLocker{lost: make(chan struct{})}
	store = &fakeStore{sellErr: service.ErrUnavailable}
	shop = newShop(store, locker, service.Config{})
	if _, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "r-2"}); !errors.Is(err, service.ErrUnavailable) {
		t.Fatalf("err = %v, want ErrUnavailable", err)
	}
	if locker.unlocks != 1 {
		t.Fatalf("unlocks after a failed sale = %d, want 1", locker.unlocks)
	}
}

// The buyer who gets the last piece marks the goods sold out: the next one
// is answered without the lock.
func TestTheLastPieceMarksSoldOut(t *testing.T) {
	locker := &fakeLocker{lost: make(chan struct{})}
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 1, IsActive: 1}}}
	shop := newShop(store, locker, service.Config{})
	if _, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "last"}); err != nil {
		t.Fatal(err)
	}
	if _, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "after"}); !errors.Is(err, service.ErrSoldOut) {
		t.Fatalf("after the last piece: %v, want ErrSoldOut", err)
	}
	if locker.locks != 1 {
		t.Fatalf("locks = %d, want 1: the buyer after the last piece queued for the lock", locker.locks)
	}
}

// A buyer who gives up (its request's context ends) mid-purchase still has
// the lock released with a context of its own: released with the request's,
// the delete would never be sent and the lock held for the session.
func TestTheLockIsReleasedWithADetachedContext(t *testing.T) {
	locker := &fakeLocker{lost: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	store := &fakeStore{onSell: cancel} // the buyer gives up inside the sale
	shop := newShop(store, locker, service.Config{})
	_, _ = shop.Purchase(ctx, service.PurchaseRequest{GoodsNo: 1, RequestID: "r"})
	if locker.unlocks != 1 || locker.unlockCtx != nil {
		t.Fatalf("unlocks %d with a context ended by %v; want 1 with a live context", locker.unlocks, locker.unlockCtx)
	}
}

// queueLocker hands the lock to its first caller; every later one queues
// until its context ends, as a waiter behind a holder does.
type queueLocker struct {
	fakeLocker
	mu      sync.Mutex
	held    bool
	entered chan struct{}
}

func (q *queueLocker) Lock(ctx context.Context, n int32, at time.Time) (service.Lease, error) {
	q.mu.Lock()
	first := !q.held
	q.held = true
	q.mu.Unlock()
	if first {
		return q.fakeLocker.Lock(ctx, n, at)
	}
	q.entered <- struct{}{}
	<-ctx.Done()
	return nil, ctx.Err()
}

// The buyers waiting for the lock when the last piece is sold leave the
// queue at once with "sold out", instead of each taking the lock in turn
// to hear it (seconds of hand-offs with a thousand queued). Fails when a
// queued buyer waits for its turn: here the lock never comes, and the
// buyers would wait out the acquire timeout.
func TestQueuedBuyersHearSoldOutWhenTheLastPieceSells(t *testing.T) {
	const queued = 5
	locker := &queueLocker{fakeLocker: fakeLocker{lost: make(chan struct{})}, entered: make(chan struct{}, queued)}
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 1, IsActive: 1}}}
	inSale, allQueued := make(chan struct{}), make(chan struct{})
	store.onSell = func() { close(inSale); <-allQueued } // the holder sells the last piece once the others wait
	shop := newShop(store, locker, service.Config{AcquireTimeout: time.Hour})
	holder := make(chan error, 1)
	go func() {
		_, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "holder"})
		holder <- err
	}()
	e2e.Receive(t, inSale, 10*time.Second, "the holder's sale")
	answers := make(chan error, queued)
	for i := range queued {
		go func() {
			_, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: fmt.Sprint("queued-", i)})
			answers <- err
		}()
	}
	for range queued {
		e2e.Receive(t, locker.entered, 10*time.Second, "a buyer queueing for the lock")
	}
	close(allQueued)
	if err := e2e.Receive(t, holder, 10*time.Second, "the holder"); err != nil {
		t.Fatalf("the holder: %v", err)
	}
	for range queued {
		if err := e2e.Receive(t, answers, 10*time.Second, "a queued buyer after the last piece sold"); !errors.Is(err, service.ErrSoldOut) {
			t.Fatalf("a queued buyer: %v, want ErrSoldOut", err)
		}
	}
	if len(store.orders) != 1 {
		t.Errorf("%d orders, want the holder's only", len(store.orders))
	}
}

// With HandOffAfterCommit (a store whose row locks do not span every sale
// of a goods: Galera nodes) the lock is released only once the commit has
// answered, and once.
func TestTheLockIsHandedOnAfterTheCommitWhenTheStoreSaysSo(t *testing.T) {
	locker := &fakeLocker{lost: make(chan struct{}), released: make(chan struct{})}
	var releasedDuringCommit bool
	store := &fakeStore{committing: func() {
		select {
		case <-locker.released:
			releasedDuringCommit = true
		case <-time.After(200 * time.Millisecond): // the release, had it begun, is a goroutine away
		}
	}}
	shop := newShop(store, locker, service.Config{HandOffAfterCommit: true})
	if _, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "r-1"}); err != nil {
		t.Fatal(err)
	}
	if releasedDuringCommit {
		t.Fatal("the lock was released during the commit")
	}
	if locker.unlocks != 1 {
		t.Fatalf("unlocks = %d, want 1", locker.unlocks)
	}
}

// gatedPurchaser answers purchases in turn from outcomes (nil: sold) and,
// while hold is set, first waits at the gate, saying so on entered.
type gatedPurchaser struct {
	mu       sync.Mutex
	outcomes []error
	next     int
	hold     bool
	entered  chan struct{}
	gate     chan struct{}
}

func (g *gatedPurchaser) Close() {}

func (g *gatedPurchaser) Purchase(ctx context.Context, o *service.Order) error {
	g.mu.Lock()
	hold := g.hold
	err := g.outcomes[g.next%len(g.outcomes)]
	g.next++
	g.mu.Unlock()
	if hold {
		g.entered <- struct{}{}
		<-g.gate
		return nil
	}
	if err == nil {
		o.ID = 1
	}
	return err
}

// Every way a purchase ends gives its maxWaiting slot back: after many
// purchases that were sold, sold out, failed, cut off or given up, two
// buyers still fit, and the third is busy.
func TestEveryPurchaseGivesItsSlotBack(t *testing.T) {
	g := &gatedPurchaser{outcomes: []error{nil, service.ErrSoldOut, service.ErrUnavailable, service.ErrCommitUnknown,
		fmt.Errorf("%w: deadlock", service.ErrConflict), context.Canceled, service.ErrLockTimeout, service.ErrFenced},
		entered: make(chan struct{}, 3), gate: make(chan struct{})}
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 5, IsActive: 1}}}
	shop := must(service.New(custom(g), service.Deps{Store: store, Env: service.Env{Marks: service.NewSoldOutMarks(-1),
		Config: service.Config{MaxWaiting: 2, OutcomeTimeout: 100 * time.Millisecond, ConflictRetries: -1}}}))
	for i := range 100 {
		ctx, cancel := context.WithCancel(context.Background())
		if i%5 == 4 {
			cancel() // a buyer who hung up
		}
		_, err := shop.Purchase(ctx, service.PurchaseRequest{GoodsNo: 1, RequestID: fmt.Sprint("p-", i)})
		cancel()
		if errors.Is(err, service.ErrBusy) {
			t.Fatalf("purchase %d, one at a time: busy", i)
		}
	}
	g.mu.Lock()
	g.hold = true
	g.mu.Unlock()
	errs := make(chan error, 2)
	for i := range 2 {
		go func() {
			_, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: fmt.Sprint("w-", i)})
			errs <- err
		}()
	}
	for range 2 {
		e2e.Receive(t, g.entered, 10*time.Second, "a buyer in the purchase (its slot taken)")
	}
	if _, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "third"}); !errors.Is(err, service.ErrBusy) {
		t.Fatalf("a third buyer with two in progress: %v, want busy", err)
	}
	close(g.gate)
	for range 2 {
		if err := e2e.Receive(t, errs, 10*time.Second, "a held buyer's answer"); err != nil {
			t.Errorf("a held buyer: %v", err)
		}
	}
}

// Stock refuses a goods number that is not one and passes the store's
// failures on.
func TestStockRefusesBadInputAndPassesFailuresOn(t *testing.T) {
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 5}}}
	shop := newUnlockedShop(store, service.Config{})
	if _, err := shop.Stock(context.Background(), 0); !errors.Is(err, service.ErrInvalidGoodsNo) {
		t.Errorf("goods 0: %v, want invalid", err)
	}
	if _, err := shop.Stock(context.Background(), 2); !errors.Is(err, service.ErrNotFound) {
		t.Errorf("goods 2: %v, want not found", err)
	}
	store.countsErr = service.ErrUnavailable
	if _, err := shop.Stock(context.Background(), 1); !errors.Is(err, service.ErrUnavailable) {
		t.Errorf("orders not countable: %v, want unavailable", err)
	}
	store.readErr = service.ErrUnavailable
	if _, err := shop.Stock(context.Background(), 1); !errors.Is(err, service.ErrUnavailable) {
		t.Errorf("database away: %v, want unavailable", err)
	}
}

// A buyer before the sale's start is refused from the shop's copy of the
// window, without the lock.
func TestABuyerBeforeTheStartTakesNoLock(t *testing.T) {
	start := time.Now().Add(time.Hour)
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 5, SaleStart: &start}}}
	locker := &fakeLocker{lost: make(chan struct{})}
	shop := newShop(store, locker, service.Config{})
	for i := range 3 {
		if _, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: fmt.Sprint("early-", i)}); !errors.Is(err, service.ErrNotStarted) {
			t.Fatalf("before the start: %v, want not started", err)
		}
	}
	if locker.locks != 0 {
		t.Errorf("%d locks taken before the start, want none", locker.locks)
	}
}

// A buyer who holds an order of the goods and is refused (sold out, the
// window) hears which order it holds: already_bought, not the refusal.
func TestARefusedBuyerWhoHoldsAnOrderHearsIt(t *testing.T) {
	ended := time.Now().Add(-time.Minute)
	for _, g := range []service.Goods{{ID: 10, GoodsNo: 1, Stock: 0}, {ID: 10, GoodsNo: 1, Stock: 5, SaleEnd: &ended}} {
		store := &fakeStore{goods: map[int32]service.Goods{1: g},
			orders: []service.Order{{ID: 7, GoodsNo: 1, RequestID: "first", UserID: "alice", OnePerBuyer: true, Status: service.OrderUnpaid}}}
		shop := newShop(store, &fakeLocker{lost: make(chan struct{})}, service.Config{OnePerBuyer: true})
		_, err := shop.Purchase(context.Background(), service.PurchaseRequest{GoodsNo: 1, RequestID: "again", UserID: "alice"})
		var bought *service.AlreadyBoughtError
		if !errors.As(err, &bought) || bought.Order.ID != 7 {
			t.Errorf("stock %d, end %v: %v, want already bought with order 7", g.Stock, g.SaleEnd, err)
		}
	}
}

// A strategy of the registry is built only with what it needs: a lock, the
// leases' nodes, a store that sells its way; otherwise New says what is
// missing.
func TestAStrategyIsBuiltOnlyWithWhatItNeeds(t *testing.T) {
	store := &fakeStore{}
	for _, c := range []struct {
		strategy string
		d        service.Deps
		want     string // "": built
	}{
		{"seed", service.Deps{Store: store}, "needs a lock"},
		{"batch", service.Deps{Store: store}, "needs a lock"},
		{"allot", service.Deps{Store: store}, "needs lease nodes"},
		{"allot", service.Deps{Store: store, Leases: noLeases{}}, "is no service.AllotStore"},
		{"seed", service.Deps{Store: store, Locker: &fakeLocker{}}, ""},
		{"batch", service.Deps{Store: store, Locker: &fakeLocker{}}, ""},
		{"atomic", service.Deps{Store: store}, ""},
	} {
		shop, err := service.New(strategy(c.strategy), c.d)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want built", c.strategy, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error saying %q", c.strategy, err, c.want)
		}
		if err == nil {
			shop.Close()
		}
	}
}

// noLeases are lease nodes that are never used.
type noLeases struct{}

func (noLeases) Create(context.Context) (string, <-chan struct{}, error) {
	return "", nil, service.ErrUnavailable
}
func (noLeases) Exists(context.Context, string) (bool, error) { return false, nil }
func (noLeases) Delete(context.Context, string) error         { return nil }
