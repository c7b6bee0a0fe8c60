package service_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

type fakeOrderStore struct {
	mu          sync.Mutex
	placedSince time.Time
	due         int // unpaid orders past their timeout
	sweeps      int // ExpireOrders calls
	cutoffs     []time.Time
	expireErr   error
}

func (f *fakeOrderStore) Order(context.Context, uint64, string) (service.Order, error) {
	return service.Order{}, service.ErrOrderNotFound
}

func (f *fakeOrderStore) PayOrder(_ context.Context, id uint64, _ string, now, placedSince time.Time) (service.Order, error) {
	f.placedSince = placedSince
	return service.Order{ID: id, Status: service.OrderPaid, PaidAt: &now}, nil
}

func (f *fakeOrderStore) ExpireOrders(_ context.Context, placedBefore, now time.Time, limit int) ([]service.Order, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sweeps++
	f.cutoffs = append(f.cutoffs, placedBefore)
	if f.expireErr != nil {
		return nil, f.expireErr
	}
	n := min(f.due, limit)
	f.due -= n
	return make([]service.Order, n), nil
}

func TestPayHonoursTheTimeout(t *testing.T) {
	store := &fakeOrderStore{}
	o := service.NewOrders(store, service.OrdersConfig{PayTimeout: time.Minute}, slog.New(slog.DiscardHandler))
	before := time.Now()
	if _, err := o.Pay(context.Background(), 1, ""); err != nil {
		t.Fatal(err)
	}
	if d := before.Sub(store.placedSince); d < 59*time.Second || d > 61*time.Second {
		t.Fatalf("orders placed since %v ago may be paid, want the pay timeout, 1m", d)
	}
	if _, err := o.Pay(context.Background(), 0, ""); !errors.Is(err, service.ErrInvalidOrderID) {
		t.Fatalf("Pay(0) = %v, want ErrInvalidOrderID", err)
	}
	// No timeout: any unpaid order may be paid.
	o = service.NewOrders(store, service.OrdersConfig{PayTimeout: -1}, slog.New(slog.DiscardHandler)) // never expire
	if _, err := o.Pay(context.Background(), 1, ""); err != nil || !store.placedSince.IsZero() {
		t.Fatalf("without a timeout: placed since %v (%v), want the zero time", store.placedSince, err)
	}
}

// A sweep takes batches until one comes back short, and the loop stops when
// its context ends (the leader lost its leadership).
func TestSweepExpiresInBatchesUntilStopped(t *testing.T) {
	store := &fakeOrderStore{due: 25}
	o := service.NewOrders(store, service.OrdersConfig{PayTimeout: time.Minute, SweepInterval: time.Hour, SweepBatch: 10}, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Sweep(ctx, "me") }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		store.mu.Lock()
		sweeps, due := store.sweeps, store.due
		store.mu.Unlock()
		if sweeps >= 3 && due == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10s: %d batches, %d orders still due", sweeps, due)
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Sweep returned %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Sweep did not stop within 10s of its context ending")
	}
	store.mu.Lock()
	defer store.mu.Unlock()
	if store.sweeps != 3 { // 10, 10, 5: the short batch ends the sweep; the next is an hour away
		t.Fatalf("%d batches, want 3", store.sweeps)
	}
	if d := time.Since(store.cutoffs[0]); d < time.Minute || d > time.Minute+10*time.Second {
		t.Fatalf("expired orders placed before %v ago, want the pay timeout", d)
	}
}

func TestSweepWithoutATimeoutDoesNothing(t *testing.T) {
	store := &fakeOrderStore{due: 5}
	o := service.NewOrders(store, service.OrdersConfig{PayTimeout: -1, SweepInterval: time.Millisecond}, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_ = o.Sweep(ctx, "me")
	if store.sweeps != 0 {
		t.Fatalf("%d sweeps with expiry off", store.sweeps)
	}
}
