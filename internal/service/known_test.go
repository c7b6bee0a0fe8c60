package service_test

import (
	"context"
	"errors"
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
