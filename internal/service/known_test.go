package service_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// Answers that cannot buy cost nothing shared (issue 61): a buyer who
// holds an order of the goods, asking again and again, is answered
// already_bought from what the instance learnt, without the admission, the
// lock or the store's sale; a retry of a request id that bought is
// replayed likewise; and a buyer's second purchase while its first is
// under way is refused at once (one at a time), leaving the admission's
// places to the others. Fails without known.go: every repeat takes the
// lock and the store's sale.
func TestAnswersThatCannotBuyTakeNoLockNorPlace(t *testing.T) {
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 5, IsActive: 1}}}
	locker := &fakeLocker{lost: make(chan struct{})}
	shop := newShop(store, locker, service.Config{OnePerBuyer: true, KnownFor: time.Minute})
	ctx := context.Background()
	first, err := shop.Purchase(ctx, service.PurchaseRequest{GoodsNo: 1, RequestID: "r1", ClientRequestID: true, UserID: "mallory"})
	if err != nil {
		t.Fatal(err)
	}
	locks := locker.locks
	for i := range 1000 {
		_, err := shop.Purchase(ctx, service.PurchaseRequest{GoodsNo: 1, RequestID: "other", UserID: "mallory"})
		var held *service.AlreadyBoughtError
		if !errors.As(err, &held) || held.Order.ID != first.ID {
			t.Fatalf("repeat %d: %v, want already bought, order %d", i, err, first.ID)
		}
		again, err := shop.Purchase(ctx, service.PurchaseRequest{GoodsNo: 1, RequestID: "r1", ClientRequestID: true, UserID: "mallory"})
		if err != nil || !again.Replayed || again.ID != first.ID {
			t.Fatalf("retry %d: %+v, %v, want order %d replayed", i, again, err, first.ID)
		}
	}
	if locker.locks != locks || len(store.orders) != 1 {
		t.Errorf("2000 answers from memory took %d locks, the store has %d orders; want none and 1", locker.locks-locks, len(store.orders))
	}
	if _, err := shop.Purchase(ctx, service.PurchaseRequest{GoodsNo: 2, RequestID: "r1", ClientRequestID: true, UserID: "mallory"}); !errors.Is(err, service.ErrRequestIDConflict) {
		t.Errorf("the request id for another goods: %v, want a request id conflict", err)
	}

	// One at a time: a buyer whose purchase waits refuses its second at
	// once; another buyer still gets a place.
	g := &gatedPurchaser{outcomes: []error{nil}, hold: true, entered: make(chan struct{}, 2), gate: make(chan struct{})}
	gated := must(service.New(custom(g), service.Deps{Store: store, Env: service.Env{Marks: service.NewSoldOutMarks(0),
		Config: service.Config{MaxWaiting: 2, OnePerBuyer: true}}}))
	errs := make(chan error, 2)
	go func() {
		_, err := gated.Purchase(ctx, service.PurchaseRequest{GoodsNo: 1, RequestID: "a1", UserID: "mallory"})
		errs <- err
	}()
	e2e.Receive(t, g.entered, 10*time.Second, "mallory's first purchase under way")
	for range 100 {
		_, err := gated.Purchase(ctx, service.PurchaseRequest{GoodsNo: 1, RequestID: "a2", UserID: "mallory"})
		var limited *service.RateLimitError
		if !errors.As(err, &limited) || limited.RetryAfter <= 0 {
			t.Fatalf("mallory's second purchase at once: %v, want one at a time (a rate limit with a wait)", err)
		}
	}
	go func() {
		_, err := gated.Purchase(ctx, service.PurchaseRequest{GoodsNo: 1, RequestID: "b1", UserID: "bob"})
		errs <- err
	}()
	e2e.Receive(t, g.entered, 10*time.Second, "bob's purchase let in beside mallory's")
	close(g.gate)
	for range 2 {
		if err := e2e.Receive(t, errs, 10*time.Second, "a held buyer's answer"); err != nil {
			t.Errorf("a held buyer: %v", err)
		}
	}
}

// What was learnt is trusted for KnownFor only: an order cleared or
// expired since is asked of the store again.
func TestWhatWasLearntEnds(t *testing.T) {
	store := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 5, IsActive: 1}}}
	locker := &fakeLocker{lost: make(chan struct{})}
	shop := newShop(store, locker, service.Config{OnePerBuyer: true, KnownFor: 50 * time.Millisecond})
	ctx := context.Background()
	if _, err := shop.Purchase(ctx, service.PurchaseRequest{GoodsNo: 1, RequestID: "r1", UserID: "carol"}); err != nil {
		t.Fatal(err)
	}
	store.data.Lock()
	store.orders = nil // cleared, as by shop stock set --clear-orders
	store.data.Unlock()
	time.Sleep(60 * time.Millisecond)
	if _, err := shop.Purchase(ctx, service.PurchaseRequest{GoodsNo: 1, RequestID: "r2", UserID: "carol"}); err != nil {
		t.Errorf("carol after her order was cleared and KnownFor passed: %v, want a purchase", err)
	}
}

// indexedStore is a fakeStore that also reads a goods' orders at once,
// counting the reads and the per-buyer lookups.
type indexedStore struct {
	*fakeStore
	reads, lookups atomic.Int64
}

func (s *indexedStore) OrdersOfGoods(_ context.Context, no int32, _ int) ([]service.Order, bool, error) {
	s.reads.Add(1)
	s.data.RLock()
	defer s.data.RUnlock()
	var out []service.Order
	for _, o := range s.orders {
		if o.GoodsNo == no {
			out = append(out, o)
		}
	}
	return out, true, nil
}

func (s *indexedStore) ActiveOrderOfBuyer(ctx context.Context, no int32, user string) (service.Order, bool, error) {
	s.lookups.Add(1)
	return s.fakeStore.ActiveOrderOfBuyer(ctx, no, user)
}

// The crowd after a sell-out, each buyer with its id, costs one read of the
// goods' orders, not a query per buyer; a buyer who holds an order still
// hears which (measured in make bench-shop (k): a statement per sold-out
// answer before).
func TestTheCrowdAfterASellOutCostsOneRead(t *testing.T) {
	base := &fakeStore{goods: map[int32]service.Goods{1: {ID: 10, GoodsNo: 1, Stock: 1, IsActive: 1}}}
	store := &indexedStore{fakeStore: base}
	locker := &fakeLocker{lost: make(chan struct{})}
	shop := must(service.New(strategy("seed"), service.Deps{Store: store, Locker: locker,
		Env: service.Env{Marks: service.NewSoldOutMarks(time.Minute), Config: service.Config{OnePerBuyer: true, KnownFor: time.Minute}}}))
	ctx := context.Background()
	first, err := shop.Purchase(ctx, service.PurchaseRequest{GoodsNo: 1, RequestID: "w", UserID: "winner"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := shop.Purchase(ctx, service.PurchaseRequest{GoodsNo: 1, RequestID: "l0", UserID: "loser-0"}); !errors.Is(err, service.ErrSoldOut) {
		t.Fatalf("after the last piece: %v, want sold out", err)
	}
	for i := range 200 {
		_, err := shop.Purchase(ctx, service.PurchaseRequest{GoodsNo: 1, RequestID: fmt.Sprint("r", i), UserID: fmt.Sprint("loser-", i+1)})
		if !errors.Is(err, service.ErrSoldOut) {
			t.Fatalf("buyer %d: %v, want sold out", i, err)
		}
	}
	if r, l := store.reads.Load(), store.lookups.Load(); r != 1 || l != 0 {
		t.Errorf("200 buyers refused sold out: %d reads of the goods' orders and %d lookups, want 1 and 0", r, l)
	}
	_, err = shop.Purchase(ctx, service.PurchaseRequest{GoodsNo: 1, RequestID: "w2", UserID: "winner"})
	var held *service.AlreadyBoughtError
	if !errors.As(err, &held) || held.Order.ID != first.ID {
		t.Errorf("the winner again after the sell-out: %v, want already bought, order %d", err, first.ID)
	}
}
