package service

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// noGoodsStore has no goods: Goods is ErrNotFound, counted.
type noGoodsStore struct {
	Store // the rest panics: nil
	reads atomic.Int64
}

func (n *noGoodsStore) Goods(context.Context, int32) (Goods, error) {
	n.reads.Add(1)
	return Goods{}, ErrNotFound
}

// A goods that does not exist is answered ErrNotFound from the window's
// cache: a crowd asking for a made-up goods costs one read, and none of it
// goes on to the admission, a place, the lock or a claim (before, the
// window let it through and each buyer took the lock to hear 404).
func TestAGoodsThatDoesNotExistIsAnsweredFromOneRead(t *testing.T) {
	store := &noGoodsStore{}
	windows := newSaleWindows(time.Minute)
	var notFound atomic.Int64
	crowd(100, func() {
		if err := windows.check(context.Background(), store, 999999, time.Now()); errors.Is(err, ErrNotFound) {
			notFound.Add(1)
		}
	})
	if n := store.reads.Load(); n != 1 {
		t.Errorf("%d reads for 100 buyers of a goods that does not exist, want 1", n)
	}
	if notFound.Load() != 100 {
		t.Errorf("%d of 100 buyers heard ErrNotFound, want all", notFound.Load())
	}
}

// A strategy that reads the rows in its sale (admitUnread) still reads an
// unknown goods before its first buyer goes on: ErrNotFound, before the
// lock. Once a purchase found no row, the next buyers hear ErrNotFound at
// once, until the cache's time is up and the goods is read again (a goods
// made meanwhile shows then).
func TestAPurchaseThatFoundNoGoodsIsRemembered(t *testing.T) {
	store := &noGoodsStore{}
	windows := newSaleWindows(time.Minute)
	windows.admitUnread = true
	if err := windows.check(context.Background(), store, 7, time.Now()); !errors.Is(err, ErrNotFound) || store.reads.Load() != 1 {
		t.Fatalf("the first buyer: %v after %d reads, want ErrNotFound after 1", err, store.reads.Load())
	}
	windows.observeMissing(7, time.Now())
	if err := windows.check(context.Background(), store, 7, time.Now()); !errors.Is(err, ErrNotFound) {
		t.Errorf("after a purchase found no goods 7: %v, want ErrNotFound", err)
	}
	if n := store.reads.Load(); n != 1 {
		t.Errorf("%d reads, want the first one alone", n)
	}
	windows.observeMissing(7, time.Now().Add(-2*time.Minute)) // stale
	if err := windows.check(context.Background(), store, 7, time.Now()); !errors.Is(err, ErrNotFound) || store.reads.Load() != 2 {
		t.Errorf("a stale missing goods: %v after %d reads, want ErrNotFound after 2", err, store.reads.Load())
	}
}
