package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slots is an admission of n places for the door tests: admit takes one
// if there is one.
type slots struct{ free atomic.Int64 }

func (s *slots) admit() bool {
	for {
		n := s.free.Load()
		if n <= 0 {
			return false
		}
		if s.free.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// enterAsync is r.enter in a goroutine of its own; its outcome arrives on
// the channel.
func enterAsync(r *Room, who string, at time.Time, inStock <-chan struct{}, admit func() bool) <-chan error {
	out := make(chan error, 1)
	go func() {
		in, err := r.enter(context.Background(), 1, who, "", "", nil, at, inStock, admit)
		if in {
			err = nil
		} else if err == nil {
			err = errors.New("not in, and no answer")
		}
		out <- err
	}()
	return out
}

// waitTurns waits until n buyers wait at r's door.
func waitTurns(t *testing.T, r *Room, n int64) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		r.mu.Lock()
		got := r.turnsOfLocked(1)
		r.mu.Unlock()
		if got == n {
			return
		}
	}
	t.Fatalf("%d buyers never waited at the door", n)
}

// Past capacity, buyers whose turn is due within the hold wait at the
// door in their requests, and go in in the order of their places as
// places in the admission free: none is sent away, none overtakes.
func TestTheDoorLetsBuyersInInTheOrderOfTheirPlaces(t *testing.T) {
	r, _ := newTestRoom(t, RoomConfig{Hold: time.Minute})
	var adm slots
	now := time.Now()
	var mu sync.Mutex
	var order []string
	const n = 5
	outs := make([]<-chan error, n)
	// They reach the door in reverse, each with its own arrival: the door
	// orders them by place, not by when they came to it.
	for i := n - 1; i >= 0; i-- {
		who := fmt.Sprintf("u:%d", i)
		outs[i] = enterAsync(r, who, now.Add(time.Duration(i)*time.Millisecond), nil, func() bool {
			if !adm.admit() {
				return false
			}
			mu.Lock()
			order = append(order, who)
			mu.Unlock()
			return true
		})
		waitTurns(t, r, int64(n-i))
	}
	for i := range n {
		adm.free.Add(1)
		r.freed()
		if err := <-outs[i]; err != nil {
			t.Fatalf("buyer %d: %v, want it let in", i, err)
		}
	}
	for i, who := range order {
		if want := fmt.Sprintf("u:%d", i); who != want {
			t.Fatalf("let in %v, want u:0 ... u:%d in order", order, n-1)
		}
	}
}

// A buyer at the door hears sold out as soon as its goods is marked, and
// is sent away with its place when the instance shuts down (Drain).
func TestTheDoorEndsOnSoldOutAndOnShutdown(t *testing.T) {
	r, _ := newTestRoom(t, RoomConfig{Hold: time.Minute})
	full := func() bool { return false }
	marked := make(chan struct{})
	sold := enterAsync(r, "u:sold", time.Now(), marked, full)
	waitTurns(t, r, 1)
	close(marked)
	if err := <-sold; !errors.Is(err, ErrSoldOut) {
		t.Errorf("at the door when the goods was marked sold out: %v, want ErrSoldOut", err)
	}
	waiting := enterAsync(r, "u:away", time.Now(), nil, full)
	waitTurns(t, r, 1)
	r.Drain()
	var q *QueuedError
	if err := <-waiting; !errors.As(err, &q) || q.Token == "" {
		t.Errorf("at the door at shutdown: %v, want sent away with its place", err)
	}
	if in, err := r.enter(context.Background(), 1, "u:after", "", "", nil, time.Now(), nil, full); in || !errors.As(err, &q) {
		t.Errorf("a buyer after the shutdown began: in %t, %v; want sent away at once", in, err)
	}
}
