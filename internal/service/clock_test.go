package service_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// A Clock moved by its skew goes by the database's once measured: the
// database 3 s ahead of a machine 5 s fast is an offset of -2 s, and Now
// is then the database's time within the measurement's error.
func TestTheClockGoesByTheDatabases(t *testing.T) {
	var nilClock *service.Clock
	if d := time.Since(nilClock.Now()); d < 0 || d > time.Second {
		t.Fatalf("a nil Clock is %v off the machine's", d)
	}
	c := service.NewClock(5 * time.Second)
	if d := c.Now().Sub(time.Now()); d < 5*time.Second-10*time.Millisecond || d > 5*time.Second+10*time.Millisecond {
		t.Fatalf("unmeasured, the skewed clock is %v ahead, want 5s", d)
	}
	read := func(context.Context) (time.Time, error) {
		time.Sleep(10 * time.Millisecond) // the round trip
		return time.Now().Add(3 * time.Second), nil
	}
	offset, bound, err := c.Measure(context.Background(), read)
	if err != nil {
		t.Fatal(err)
	}
	if bound < 5*time.Millisecond || offset < -2*time.Second-bound || offset > -2*time.Second+bound {
		t.Fatalf("offset %v ± %v, want -2s within the error", offset, bound)
	}
	if d := c.Now().Sub(time.Now().Add(3 * time.Second)); d < -bound-time.Millisecond || d > bound+time.Millisecond {
		t.Fatalf("measured, the clock is %v off the database's (error %v)", d, bound)
	}
	if _, _, err := c.Measure(context.Background(), func(context.Context) (time.Time, error) { return time.Time{}, errors.New("down") }); err == nil {
		t.Fatal("a failed read measured")
	}
	if o, _ := c.Offset(); o != offset {
		t.Fatalf("a failed read moved the offset to %v", o)
	}
}

// A measurement over a slow, uneven link — the database reads its clock at
// the end of a 100 ms round trip, as when the request's packet was
// retransmitted — is 50 ms off. After a precise one it changes nothing:
// the two agree within their errors and the precise one stays. Before the
// filter (one read, always taken) the instance's clock went 50 ms ahead of
// the others', and the orders it placed were stamped 50 ms late (the
// history checker of TestPartitions' lossy sale saw a 102 ms one).
func TestALongRoundTripDoesNotMoveAPreciseClock(t *testing.T) {
	c := service.NewClock(0)
	precise := func(context.Context) (time.Time, error) { return time.Now(), nil }
	if _, _, err := c.Measure(context.Background(), precise); err != nil {
		t.Fatal(err)
	}
	lateRead := func(context.Context) (time.Time, error) {
		time.Sleep(100 * time.Millisecond)
		return time.Now(), nil
	}
	offset, bound, err := c.Measure(context.Background(), lateRead)
	if err != nil {
		t.Fatal(err)
	}
	if offset > 5*time.Millisecond || offset < -5*time.Millisecond || bound > 5*time.Millisecond {
		t.Fatalf("a 100 ms round trip moved the estimate to %v ± %v: want the precise one kept", offset, bound)
	}
	if d := c.Now().Sub(time.Now()); d > 5*time.Millisecond || d < -5*time.Millisecond {
		t.Fatalf("the clock is %v off the database's", d)
	}
}

// Of one measurement's reads, the one with the shortest round trip counts:
// the first read dials a connection (a long round trip, the clock read at
// its end), the rest are quick.
func TestAMeasurementTakesItsQuickestRead(t *testing.T) {
	c := service.NewClock(0)
	first := true
	read := func(context.Context) (time.Time, error) {
		if first {
			first = false
			time.Sleep(100 * time.Millisecond)
		}
		return time.Now(), nil
	}
	offset, bound, err := c.Measure(context.Background(), read)
	if err != nil {
		t.Fatal(err)
	}
	if offset > 5*time.Millisecond || bound > 5*time.Millisecond {
		t.Fatalf("offset %v ± %v: the dial's read was taken", offset, bound)
	}
}

// A measurement that disagrees with the estimate in use — the machine's
// clock stepped by a second — replaces it, however precise the old one.
func TestAClockStepIsFollowed(t *testing.T) {
	c := service.NewClock(0)
	var ahead time.Duration
	read := func(context.Context) (time.Time, error) { return time.Now().Add(ahead), nil }
	if _, _, err := c.Measure(context.Background(), read); err != nil {
		t.Fatal(err)
	}
	ahead = time.Second
	offset, _, err := c.Measure(context.Background(), read)
	if err != nil {
		t.Fatal(err)
	}
	if offset < time.Second-5*time.Millisecond || offset > time.Second+5*time.Millisecond {
		t.Fatalf("after a 1 s step the offset is %v", offset)
	}
}
