package service

import (
	"context"
	"sync/atomic"
	"time"
)

// Clock is the time the shop's rules go by: a sale window's start and end,
// an order's placing, its pay deadline and its expiry, the sold-out marks'
// horizon. Each instance has its own machine's clock, which may be seconds
// off; the rules would then differ by instance (a sale before its start, an
// order expired early, a payment of a live order refused). A Clock follows
// the database's clock instead: the machine's, plus the offset last
// measured to the database (Measure), so that the instances agree within
// the measurement's error, half the round trip of its read. Durations (a
// timeout, a wait) stay on the machine's monotonic clock.
//
// A nil *Clock is the machine's clock.
type Clock struct {
	skew   time.Duration // added to the machine's clock (clock.offset: a test's seam)
	offset atomic.Int64  // ns: the database's clock less the machine's (skew included), as last measured
	bound  atomic.Int64  // ns: that measurement's error
}

// NewClock is the machine's clock moved by skew (clock.offset; 0 but in a
// test of a machine whose clock is off), until Measure says how far the
// database's is.
func NewClock(skew time.Duration) *Clock { return &Clock{skew: skew} }

// Now is the database's time as this instance knows it.
func (c *Clock) Now() time.Time {
	if c == nil {
		return time.Now()
	}
	return time.Now().Add(c.skew + time.Duration(c.offset.Load()))
}

// Offset is how far the database's clock is ahead of this machine's (less
// the skew), and the measurement's error.
func (c *Clock) Offset() (offset, bound time.Duration) {
	if c == nil {
		return 0, 0
	}
	return time.Duration(c.offset.Load()), time.Duration(c.bound.Load())
}

// Measure reads the database's clock with read and takes the offset from
// it: the database read its clock at some moment of the round trip, taken
// as its middle.
func (c *Clock) Measure(ctx context.Context, read func(context.Context) (time.Time, error)) (offset, bound time.Duration, err error) {
	sent := time.Now()
	db, err := read(ctx)
	if err != nil {
		return 0, 0, err
	}
	rtt := time.Since(sent)
	mid := sent.Add(rtt / 2).Add(c.skew)
	offset, bound = db.Sub(mid), rtt/2
	c.offset.Store(int64(offset))
	c.bound.Store(int64(bound))
	return offset, bound, nil
}
