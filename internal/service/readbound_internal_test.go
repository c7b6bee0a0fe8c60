package service

import (
	"context"
	"errors"
	"testing"
	"time"
)

// hangingStore's reads wait until their context ends, as a read does of a
// database whose packets vanish; each read's deadline goes to deadlines.
type hangingStore struct {
	OrderStore // the rest panics: nil
	deadlines  chan time.Time
}

func newHangingStore() *hangingStore { return &hangingStore{deadlines: make(chan time.Time, 1)} }

func (h *hangingStore) wait(ctx context.Context) error {
	d, _ := ctx.Deadline()
	h.deadlines <- d
	<-ctx.Done()
	return ctx.Err()
}

func (h *hangingStore) ListGoods(ctx context.Context, _ int32, _ int) ([]Goods, error) {
	return nil, h.wait(ctx)
}

func (h *hangingStore) OrderCounts(ctx context.Context, _ []int32) (map[int32]map[string]int64, error) {
	return nil, h.wait(ctx)
}

func (h *hangingStore) Order(ctx context.Context, _ uint64, _ string) (Order, error) {
	return Order{}, h.wait(ctx)
}

// A client's read waits for the database readTimeout at most, and one that
// found no answer is ErrUnavailable (503), not a request that hangs as long
// as TCP does.
func TestAReadThatFindsNoDatabaseEndsUnavailable(t *testing.T) {
	reads := map[string]func(context.Context, *hangingStore) error{
		"a page of goods": func(ctx context.Context, h *hangingStore) error {
			_, _, err := NewCatalog(h).List(ctx, 0, 10)
			return err
		},
		"an order": func(ctx context.Context, h *hangingStore) error {
			_, err := NewOrders(h, OrdersConfig{}, nil).Get(ctx, 1, "")
			return err
		},
	}
	for name, read := range reads {
		t.Run(name, func(t *testing.T) {
			h := newHangingStore()
			// The client's own deadline is shorter: the read ends there.
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			start := time.Now()
			err := read(ctx, h)
			if !errors.Is(err, ErrUnavailable) {
				t.Errorf("a read with no answer: %v, want ErrUnavailable", err)
			}
			if d := <-h.deadlines; d.IsZero() || d.After(start.Add(readTimeout)) {
				t.Errorf("the store's read had deadline %v, want one within %v of %v", d, readTimeout, start)
			}
			// Without one, the read still has readTimeout's.
			h = newHangingStore()
			done := make(chan error, 1)
			start = time.Now()
			go func() { done <- read(context.Background(), h) }()
			if d := <-h.deadlines; d.IsZero() || d.After(time.Now().Add(readTimeout)) || d.Before(start) {
				t.Errorf("a read without the client's deadline: deadline %v, want within %v of %v", d, readTimeout, start)
			}
			select {
			case err := <-done:
				if !errors.Is(err, ErrUnavailable) {
					t.Errorf("after readTimeout: %v, want ErrUnavailable", err)
				}
			case <-time.After(readTimeout + 10*time.Second):
				t.Fatal("the read did not end within readTimeout and a margin")
			}
		})
	}
}
