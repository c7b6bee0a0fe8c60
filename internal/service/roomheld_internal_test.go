package service

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// A buyer who comes back without its place (no cookie) gets the place it
// holds, not a new one ahead of later buyers: the same arrival, counted
// once. Before, 300 such requests of one buyer made 300 places, and later
// buyers heard sold out while pieces were left (#75 item 2).
func TestABuyerWithoutItsCookieKeepsItsOnePlace(t *testing.T) {
	r, _ := newTestRoom(t, RoomConfig{})
	full := func() bool { return false }
	now := time.Now()
	r.enter(context.Background(), 1, "u:first", "10.0.0.1", "", nil, now, nil, func() bool { return true }) // opens nothing: straight in
	var first *QueuedError
	for i := range 300 {
		_, err := r.enter(context.Background(), 1, "u:mallory", "10.0.0.1", "", nil, now.Add(time.Duration(i+1)*time.Millisecond), nil, full)
		var q *QueuedError
		if !errors.As(err, &q) {
			t.Fatalf("request %d: %v, want its place", i, err)
		}
		pl, ok := r.signer.read(q.Token, 1, "u:mallory", now)
		if !ok {
			t.Fatalf("request %d: a place that does not read", i)
		}
		if first == nil {
			first = q
		} else if fp, _ := r.signer.read(first.Token, 1, "u:mallory", now); !pl.At.Equal(fp.At) {
			t.Fatalf("request %d: a place at %v, the first at %v: want the one place", i, pl.At, fp.At)
		}
	}
	r.mu.Lock()
	var given int32
	for _, n := range r.queues[1].hist {
		given += n
	}
	r.mu.Unlock()
	if given != 1 {
		t.Errorf("%d places counted after 300 requests of one buyer, want 1", given)
	}
	_, err := r.enter(context.Background(), 1, "u:alice", "10.0.0.2", "", nil, now.Add(time.Second), nil, full)
	var q *QueuedError
	if !errors.As(err, &q) || q.Ahead > 1 {
		t.Errorf("a later buyer: %v, want a place behind one buyer", err)
	}
}

// One client address holds at most room.placesPerClient places of a goods:
// the next made-up buyer of it hears busy, without a place, and a buyer of
// another address still gets one; every place lapsed, nothing is left.
func TestOneAddressHoldsItsShareOfPlaces(t *testing.T) {
	const share = 16
	r, _ := newTestRoom(t, RoomConfig{PlacesPerClient: share})
	full := func() bool { return false }
	now := time.Now()
	var q *QueuedError
	for i := range share {
		if _, err := r.enter(context.Background(), 1, fmt.Sprintf("u:made-up-%d", i), "10.0.0.9", "", nil, now, nil, full); !errors.As(err, &q) {
			t.Fatalf("made-up buyer %d: %v, want a place", i, err)
		}
	}
	if _, err := r.enter(context.Background(), 1, "u:one-more", "10.0.0.9", "", nil, now, nil, full); !errors.Is(err, ErrBusy) {
		t.Errorf("buyer %d of one address: %v, want ErrBusy", share+1, err)
	}
	if _, err := r.enter(context.Background(), 1, "u:alice", "10.0.0.2", "", nil, now, nil, full); !errors.As(err, &q) {
		t.Errorf("a buyer of another address: %v, want a place", err)
	}
	r.held.forget(now.Add(time.Hour))
	if len(r.held.byWho) != 0 || len(r.held.byClient) != 0 {
		t.Errorf("after every place lapsed: %d held, %d addresses counted; want none", len(r.held.byWho), len(r.held.byClient))
	}
}
