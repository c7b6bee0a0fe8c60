package service

import (
	"context"
	"sync"
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
	offset atomic.Int64  // ns: the database's clock less the machine's (skew included), as estimated

	mu       sync.Mutex    // serializes Measure
	bound    time.Duration // the estimate's error when it was measured
	measured time.Time     // when (the machine's monotonic clock); zero: never
}

// Measuring's constants. A measurement is the read of the samples with
// the shortest round trip: a read that waited for a connection's dial, a
// retransmitted packet or a slow link's worse direction has a long round
// trip and, its database time taken as the round trip's middle, an error
// up to half of it. An estimate's error grows by clockDrift a second (a
// machine's clock runs off by up to 100 ppm: an NTP-disciplined one far
// less), so that a precise estimate ages into a worse one and is replaced.
const (
	clockSamples = 4
	clockDrift   = 100e-6
)

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
// the skew), and that estimate's error now.
func (c *Clock) Offset() (offset, bound time.Duration) {
	if c == nil {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Duration(c.offset.Load()), c.agedBound()
}

// agedBound is the estimate's error now: its measurement's, grown by the
// drift since. c.mu is held.
func (c *Clock) agedBound() time.Duration {
	if c.measured.IsZero() {
		return 0
	}
	return c.bound + time.Duration(float64(time.Since(c.measured))*clockDrift)
}

// Measure reads the database's clock with read clockSamples times and
// takes the offset from the read with the shortest round trip (the
// database read its clock at some moment of it, taken as its middle).
// The estimate in use stays if it is the tighter one and the two agree
// (each offset within the other's error); a measurement that disagrees
// replaces it whatever its error, the machine's clock having been stepped.
// It returns the estimate in use after it, and its error; an error when no
// read succeeded.
func (c *Clock) Measure(ctx context.Context, read func(context.Context) (time.Time, error)) (offset, bound time.Duration, err error) {
	read1 := false // a read succeeded
	for range clockSamples {
		sent := time.Now()
		db, rerr := read(ctx)
		if rerr != nil {
			err = rerr
			break
		}
		rtt := time.Since(sent)
		if !read1 || rtt/2 < bound {
			offset, bound, read1 = db.Sub(sent.Add(rtt/2).Add(c.skew)), rtt/2, true
		}
	}
	if !read1 {
		return 0, 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.measured.IsZero() {
		cur, curBound := time.Duration(c.offset.Load()), c.agedBound()
		diff := offset - cur
		if diff < 0 {
			diff = -diff
		}
		if diff <= bound+curBound && curBound <= bound {
			return cur, curBound, nil
		}
	}
	c.offset.Store(int64(offset))
	c.bound, c.measured = bound, time.Now()
	return offset, bound, nil
}
