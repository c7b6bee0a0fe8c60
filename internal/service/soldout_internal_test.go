package service

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// A sold-out mark is trusted until ttl and never past the moment an unpaid
// order's piece could be back (its placing time plus the pay timeout, less
// ClockSkew), as read before the observation; without a reading made
// before it, an observation marks nothing, though the buyers queued before
// it began are still told; the buyers who queued after it began are told
// only when it marks (the read may have come back late, after a piece came
// back).
func TestASoldOutMarkEndsBeforeAnExpiredPieceCanBeBack(t *testing.T) {
	const payTimeout = 10 * time.Second
	for _, tc := range []struct {
		name   string
		oldest time.Duration // before now; <0: no unpaid order
		marked bool
	}{
		{"no unpaid order", -1, true},
		{"the oldest unpaid expires in 8 s", 2 * time.Second, true},
		{"the oldest unpaid expires within the clock skew", payTimeout - ClockSkew/2, false},
		{"the oldest unpaid is past its deadline", payTimeout + time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewSoldOutMarks(time.Minute)
			m.Expiring(payTimeout, func(context.Context) (time.Time, bool, error) {
				return time.Now().Add(-tc.oldest), tc.oldest >= 0, nil
			})
			m.readHorizon()
			inStock, done := m.whileInStock(1)
			defer done()
			since := time.Now()
			later, laterDone := m.whileInStock(1)
			defer laterDone()
			m.mark(1, since)
			if inStock.Err() == nil {
				t.Error("the buyers queued across the observation were not told")
			}
			if (later.Err() != nil) != tc.marked {
				t.Errorf("a buyer who queued after the observation began told sold out %v, want %v (as marked)", later.Err() != nil, tc.marked)
			}
			if m.seen(1) != tc.marked {
				t.Fatalf("marked %v, want %v", m.seen(1), tc.marked)
			}
			if tc.marked && tc.oldest >= 0 {
				m.mu.Lock()
				until := m.until[1]
				m.mu.Unlock()
				if want := time.Now().Add(payTimeout - tc.oldest - ClockSkew); until.After(want) {
					t.Errorf("trusted until %v from now, want at most %v", time.Until(until).Round(time.Millisecond), time.Until(want).Round(time.Millisecond))
				}
			}
		})
	}
	t.Run("no reading before the observation", func(t *testing.T) {
		m := NewSoldOutMarks(time.Minute)
		m.Expiring(payTimeout, func(context.Context) (time.Time, bool, error) { return time.Time{}, false, nil })
		m.mark(1, time.Now().Add(-time.Minute)) // observed before any reading began
		if m.seen(1) {
			t.Fatal("marked without knowing when a piece could be back")
		}
	})
	t.Run("orders never expire", func(t *testing.T) {
		m := NewSoldOutMarks(time.Minute)
		m.mark(1, time.Now())
		if !m.seen(1) {
			t.Fatal("not marked, though no piece can come back")
		}
	})
}

// A mark with less than half of its time left is renewed by a read in the
// background, one at a time, and the buyers who come meanwhile are
// answered from it at once: when it would have ended, it is renewed, and
// nobody waits for the read. Without stateRenewing the buyer who came as the
// mark ended waited for the whole read (a new connection to MariaDB in
// make bench-shop (k): 0.5-1.1 s).
func TestASoldOutMarkIsRenewedBeforeItEnds(t *testing.T) {
	const ttl = 2 * time.Second
	m := NewSoldOutMarks(ttl)
	store := &slowGoods{release: make(chan struct{})}
	marked := time.Now()
	m.mark(1, marked)
	time.Sleep(ttl/2 + 100*time.Millisecond)
	for range 3 {
		if !m.check(context.Background(), store, 1) {
			t.Fatal("a buyer while the mark holds was not told sold out")
		}
	}
	waitFor(t, func() bool { return store.reads.Load() > 0 })
	if n := store.reads.Load(); n != 1 {
		t.Fatalf("%d reads of the row under way, want one renewal", n)
	}
	close(store.release) // the row is read: still no stock
	waitFor(t, func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return !m.renewing[1]
	})
	time.Sleep(time.Until(marked.Add(ttl + 100*time.Millisecond))) // past the first mark's end
	if !m.check(context.Background(), store, 1) || store.reads.Load() != 1 {
		t.Errorf("a buyer after the first mark's end: told sold out %v, %d reads; want sold out from the renewed mark, no read",
			m.seen(1), store.reads.Load())
	}
}

// waitFor waits up to 10 s for cond.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not within 10s")
		}
	}
}

// slowGoods is a Store whose goods' row (no stock) is read once release
// is closed.
type slowGoods struct {
	Store
	release chan struct{}
	reads   atomic.Int32
}

func (s *slowGoods) Goods(ctx context.Context, goodsNo int32) (Goods, error) {
	s.reads.Add(1)
	select {
	case <-s.release:
		return Goods{GoodsNo: goodsNo}, nil
	case <-ctx.Done():
		return Goods{}, ctx.Err()
	}
}
