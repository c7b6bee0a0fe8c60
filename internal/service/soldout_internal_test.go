package service

import (
	"context"
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
