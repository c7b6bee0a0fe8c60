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
