package repo_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// A lease's row says who waits at its instance (schema version 13): a
// grant reads the other open leases' lists, only the fresh ones, summed
// per goods with the earliest and the latest arrival kept; a later write replaces the
// list, and a closed lease's list is not read.
func TestALeaseSaysWhoWaitsAtItsInstance(t *testing.T) {
	ctx := context.Background()
	s := newStore(t) // goods 1, stock 100
	at := func(ms int) time.Time { return time.UnixMicro(1_800_000_000_000_000 + int64(ms)*1000) }
	open := func(node string) int64 {
		id, err := s.OpenLease(ctx, node)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	say := func(lease int64, w map[int32]service.Waiting) {
		gs, err := s.BeginGrant(ctx, lease, []int32{1})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := gs.Take(ctx, nil, nil, false, w); err != nil {
			t.Fatal(err)
		}
	}
	read := func(lease int64, fresh time.Duration) map[int32]service.Waiting {
		gs, err := s.BeginGrant(ctx, lease, []int32{1, 2})
		if err != nil {
			t.Fatal(err)
		}
		w, err := gs.Waiting(ctx, fresh)
		if err != nil {
			t.Fatal(err)
		}
		_ = gs.Abort(ctx, nil)
		return w
	}
	a, b, c := open("/a"), open("/b"), open("/c")
	say(b, map[int32]service.Waiting{1: {First: at(20), Last: at(40), N: 4}, 3: {First: at(1), Last: at(1), N: 1}})
	say(c, map[int32]service.Waiting{1: {First: at(10), Last: at(30), N: 2}, 2: {First: at(30), Last: at(35), N: 5}})
	want := map[int32]service.Waiting{1: {First: at(10), Last: at(40), N: 6}, 2: {First: at(30), Last: at(35), N: 5}}
	if got := read(a, time.Minute); !maps.Equal(got, want) {
		t.Errorf("a reads %v; want %v (goods 3 is not the grant's)", got, want)
	}
	if got := read(b, time.Minute); !maps.Equal(got, map[int32]service.Waiting{1: {First: at(10), Last: at(30), N: 2}, 2: {First: at(30), Last: at(35), N: 5}}) {
		t.Errorf("b reads %v; want c's list alone", got)
	}
	time.Sleep(20 * time.Millisecond)
	if got := read(a, 5*time.Millisecond); len(got) != 0 {
		t.Errorf("a reads %v of lists written 20ms ago, fresh within 5ms; want none", got)
	}
	say(b, nil) // b's queue emptied
	if _, _, err := s.CloseLease(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got := read(a, time.Minute); len(got) != 0 {
		t.Errorf("a reads %v once b's list is empty and c is closed; want none", got)
	}
}
