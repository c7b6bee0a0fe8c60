package service

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// readStore answers Goods only (the rest of Store panics: nil embedded),
// counting the reads; a read takes delay, and waits for gate when it is set.
type readStore struct {
	Store
	reads atomic.Int64
	delay time.Duration
	gate  chan struct{}
	mu    sync.Mutex
	g     Goods
}

func (r *readStore) Goods(ctx context.Context, _ int32) (Goods, error) {
	r.reads.Add(1)
	time.Sleep(r.delay)
	if r.gate != nil {
		select {
		case <-r.gate:
		case <-ctx.Done():
			return Goods{}, ctx.Err()
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.g, nil
}

// crowd runs n calls of f at once and waits for them.
func crowd(n int, f func()) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range n {
		wg.Go(func() { <-start; f() })
	}
	close(start)
	wg.Wait()
}

// A crowd that finds a goods' sold-out mark expired sends one read of the
// stock, not one each, and hears "sold out" from it. (The renewed mark lasts
// a minute here, so whoever comes after the read finds it fresh: the count
// does not depend on how the goroutines are scheduled.)
func TestAnExpiredSoldOutMarkIsCheckedByOneRead(t *testing.T) {
	store := &readStore{g: Goods{ID: 1, GoodsNo: 1, Stock: 0}, delay: 20 * time.Millisecond}
	marks := NewSoldOutMarks(time.Minute)
	marks.until[1] = time.Now().Add(-time.Second) // seen sold out, a while ago
	var soldOut atomic.Int64
	crowd(100, func() {
		if marks.check(context.Background(), store, 1) {
			soldOut.Add(1)
		}
	})
	if n := store.reads.Load(); n != 1 {
		t.Errorf("%d reads of the stock for 100 buyers at an expired mark, want 1", n)
	}
	if soldOut.Load() != 100 {
		t.Errorf("%d of 100 buyers heard sold out, want all", soldOut.Load())
	}
	if !marks.seen(1) {
		t.Error("the read found no stock but did not renew the mark")
	}
}

// After a restock the read that follows the mark's expiry removes it, and
// the buyers go on to buy.
func TestAnExpiredSoldOutMarkGoesAfterARestock(t *testing.T) {
	store := &readStore{g: Goods{ID: 1, GoodsNo: 1, Stock: 5}}
	marks := NewSoldOutMarks(time.Minute)
	marks.until[1] = time.Now().Add(-time.Second)
	if marks.check(context.Background(), store, 1) {
		t.Fatal("restocked goods still answered sold out")
	}
	if marked, _ := marks.state(1); marked {
		t.Error("the mark outlived the restock")
	}
	if marks.check(context.Background(), store, 1) || store.reads.Load() != 1 {
		t.Errorf("a buyer after the restock: %d reads, want 1 (no mark, no read)", store.reads.Load())
	}
}

// A crowd at a fresh instance reads the sale window once, not once per
// buyer (which opened a database connection per buyer of the first crowd).
func TestTheSaleWindowIsReadOncePerCrowd(t *testing.T) {
	start := time.Now().Add(time.Hour)
	store := &readStore{g: Goods{ID: 1, GoodsNo: 1, Stock: 5, SaleStart: &start}, delay: 20 * time.Millisecond}
	windows := newSaleWindows(time.Minute)
	var notStarted atomic.Int64
	crowd(100, func() {
		if err := windows.check(context.Background(), store, 1, time.Now()); err != nil {
			notStarted.Add(1)
		}
	})
	if n := store.reads.Load(); n != 1 {
		t.Errorf("%d reads of the window for 100 buyers, want 1", n)
	}
	if notStarted.Load() != 100 {
		t.Errorf("%d of 100 buyers were told the sale has not started, want all", notStarted.Load())
	}
}

// A stale window is used while it is read again: buyers do not stall on
// the read, and the new window shows once it is in.
func TestAStaleSaleWindowServesWhileItIsReadAgain(t *testing.T) {
	store := &readStore{g: Goods{ID: 1, GoodsNo: 1, Stock: 5}, gate: make(chan struct{})}
	windows := newSaleWindows(time.Minute)
	windows.m[1] = saleWindow{read: time.Now().Add(-time.Hour)} // open, and stale
	done := make(chan error, 1)
	go func() { done <- windows.check(context.Background(), store, 1, time.Now()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("stale open window: %v, want open", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("a buyer waited for the read of a window it had")
	}
	ended := time.Now().Add(-time.Minute)
	store.mu.Lock()
	store.g.SaleEnd = &ended // the sale was closed meanwhile
	store.mu.Unlock()
	close(store.gate)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		if err := windows.check(context.Background(), store, 1, time.Now()); err != nil {
			break // the read came in: the sale has ended
		}
		if time.Now().After(deadline) {
			t.Fatal("the window read again never replaced the stale one")
		}
	}
	if n := store.reads.Load(); n != 1 {
		t.Errorf("%d reads, want 1", n)
	}
}

// A stale window that refuses is read again before the buyer hears it: a
// reopened sale shows to the first buyer after the cache's time, however
// long the goods was idle.
func TestAStaleRefusingSaleWindowIsReadAgainFirst(t *testing.T) {
	store := &readStore{g: Goods{ID: 1, GoodsNo: 1, Stock: 5}, gate: make(chan struct{})}
	close(store.gate)
	checkStaleEndedIsReadAgain(t, newSaleWindows(time.Minute), store, 1)
}

// checkStaleEndedIsReadAgain caches goodsNo's window as ended and stale,
// checks that store's row (open) lets the buyer in, and that it took one
// read, store's first.
func checkStaleEndedIsReadAgain(t *testing.T, windows *saleWindows, store *readStore, goodsNo int32) {
	t.Helper()
	ended := time.Now().Add(-time.Hour)
	windows.m[goodsNo] = saleWindow{end: &ended, read: time.Now().Add(-time.Hour)} // ended, and stale
	if err := windows.check(context.Background(), store, goodsNo, time.Now()); err != nil {
		t.Fatalf("reopened window, cache stale and ended: %v, want open", err)
	}
	if n := store.reads.Load(); n != 1 {
		t.Errorf("%d reads, want the stale refusing window's one", n)
	}
}

// For a strategy that reads the rows before it sells (allot's grants,
// batch's claims), a goods with a stale window that admits is let in
// unread; a goods without a window is read first (a made-up goods number
// must not reach the lock), and a stale window that refuses is read again.
func TestAStrategyThatReadsTheRowsSkipsTheWindowRead(t *testing.T) {
	for _, name := range []string{"allot", "batch"} {
		t.Run(name, func(t *testing.T) {
			st, _ := StrategyNamed(name)
			st.Needs = Needs{} // the Shop's windows only: no purchase is made
			st.New = func(Deps) (Purchaser, error) { return idlePurchaser{}, nil }
			store := &readStore{g: Goods{ID: 1, GoodsNo: 1, Stock: 5}}
			shop, err := New(st, Deps{Store: store, Env: Env{Config: Config{WindowFor: time.Minute}}})
			if err != nil {
				t.Fatal(err)
			}
			windows := shop.windows
			if err := windows.check(context.Background(), store, 1, time.Now()); err != nil || store.reads.Load() != 1 {
				t.Fatalf("no window yet: %v after %d reads, want let in after one", err, store.reads.Load())
			}
			windows.m[2] = saleWindow{read: time.Now().Add(-time.Hour)} // open, and stale
			if err := windows.check(context.Background(), store, 2, time.Now()); err != nil {
				t.Fatalf("stale open window: %v, want let in", err)
			}
			if n := store.reads.Load(); n != 1 {
				t.Errorf("%d reads, want the first goods' one alone", n)
			}
			checkStaleEndedIsReadAgain(t, windows, &readStore{g: store.g}, 3)
		})
	}
}

// Every strategy checks the window on the row it claimed, whatever the
// cache said.
func TestGoodsOpenAt(t *testing.T) {
	now := time.Now()
	before, after := now.Add(-time.Second), now.Add(time.Second)
	for _, c := range []struct {
		start, end *time.Time
		want       error
	}{
		{nil, nil, nil},
		{&before, &after, nil},
		{&now, nil, nil},
		{&after, nil, ErrNotStarted},
		{nil, &now, ErrEnded},
		{nil, &before, ErrEnded},
	} {
		err := Goods{SaleStart: c.start, SaleEnd: c.end}.OpenAt(now)
		if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("start %v end %v: %v, want %v", c.start, c.end, err, c.want)
		}
	}
}

// Buyers one after another within the window's second share one read too:
// the copy is trusted for its second.
func TestAFreshSaleWindowIsNotReadAgain(t *testing.T) {
	store := &readStore{g: Goods{ID: 1, GoodsNo: 1, Stock: 5}}
	windows := newSaleWindows(time.Minute)
	for range 10 {
		if err := windows.check(context.Background(), store, 1, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if n := store.reads.Load(); n != 1 {
		t.Errorf("%d reads for 10 buyers within the copy's time, want 1", n)
	}
}

// idlePurchaser is a strategy that is never asked to sell.
type idlePurchaser struct{}

func (idlePurchaser) Purchase(context.Context, *Order) error { return ErrUnavailable }
func (idlePurchaser) Close()                                 {}
