package service

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// readTimeout bounds a read of the database: one that buyers share (a
// goods' row for its sale window), which runs detached from the buyer who
// started it, so that one buyer hanging up does not fail the others; and a
// client's read (readbound.go).
const readTimeout = 5 * time.Second

// saleWindows remembers each goods' sale window for a while, so that the
// window is checked before the lock without a query per buyer. Times are
// compared per request; only a change of the window takes up to ttl (and
// one read) to show. The cache may refuse a buyer early, never admit one the
// row would refuse: every strategy checks the window again on the row it
// claims (Goods.OpenAt).
//
// One read per goods is in flight at a time: the buyers who find no window
// yet wait for it and share its answer. A buyer who finds a stale window
// that admits goes on while it is read again (the claim checks anyway); one
// whose stale window refuses waits for the fresh read, so that a reopened
// window shows at once. Without the shared read, a crowd would send a query
// per buyer every ttl, and a fresh instance would open a connection per
// buyer of its first crowd.
type saleWindows struct {
	ttl   time.Duration
	reads singleflight.Group
	// admitUnread: a goods with a stale window that admits is admitted
	// without a read (see Strategy.ReadsRowsPerBatch). A goods without a
	// window is read first, whatever the strategy: a made-up goods number
	// never reaches the lock (with a lock per goods, a ZooKeeper node each).
	admitUnread bool

	mu sync.Mutex
	m  map[int32]saleWindow
}

type saleWindow struct {
	start, end *time.Time
	read       time.Time
	missing    bool // no such goods: its buyers hear ErrNotFound
}

// at is the window's answer at now: ErrNotFound for a goods that does not
// exist, a WindowError when its sale is not open.
func (sw saleWindow) at(now time.Time) error {
	if sw.missing {
		return ErrNotFound
	}
	return windowAt(sw.start, sw.end, now)
}

// maxWindows bounds the windows an instance remembers: a sale of more goods
// forgets the stale ones first, then any (a forgotten window costs its next
// buyer one read).
const maxWindows = 4096

func newSaleWindows(ttl time.Duration) *saleWindows {
	return &saleWindows{ttl: ttl, m: map[int32]saleWindow{}}
}

// check returns a WindowError when goodsNo's sale is not open at now (the
// Clock's time; how fresh a window is goes by this machine's), and
// ErrNotFound for a goods the store has no row of: a made-up goods number
// costs its buyers no admission, place, lock or claim, only one read per
// ttl. A goods the store cannot read (the database away) passes: the
// purchase itself then answers for it.
func (w *saleWindows) check(ctx context.Context, store Store, goodsNo int32, now time.Time) error {
	w.mu.Lock()
	sw, ok := w.m[goodsNo]
	w.mu.Unlock()
	if ok && time.Since(sw.read) < w.ttl {
		return sw.at(now)
	}
	if w.admitUnread && ok && sw.at(now) == nil {
		return nil
	}
	ch := w.reads.DoChan(strconv.Itoa(int(goodsNo)), func() (any, error) {
		w.mu.Lock()
		last, ok := w.m[goodsNo]
		w.mu.Unlock()
		if ok && time.Since(last.read) < w.ttl {
			return last, nil // read by a flight that ended as this one began
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
		defer cancel()
		g, err := store.Goods(rctx, goodsNo)
		fresh := saleWindow{start: g.SaleStart, end: g.SaleEnd, read: time.Now()}
		switch {
		case errors.Is(err, ErrNotFound):
			fresh = saleWindow{missing: true, read: fresh.read}
		case err != nil:
			return nil, err
		}
		w.put(goodsNo, fresh)
		return fresh, nil
	})
	if ok && sw.at(now) == nil {
		return nil // stale but admitting: the claim has the last word
	}
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil
		}
		sw = r.Val.(saleWindow)
	case <-ctx.Done():
		return ctx.Err()
	}
	return sw.at(now)
}

// put remembers goodsNo's window, forgetting a stale one first (or any) when
// maxWindows are remembered.
func (w *saleWindows) put(goodsNo int32, sw saleWindow) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.m[goodsNo]; !ok && len(w.m) >= maxWindows {
		forgetOne(w.m, func(old saleWindow) bool { return sw.read.Sub(old.read) >= w.ttl })
	}
	w.m[goodsNo] = sw
}

// observe records goods g's window as read at: a claim's read, fresher than
// the cache's own. A nil w observes nothing.
func (w *saleWindows) observe(g Goods, at time.Time) {
	if w != nil {
		w.put(g.GoodsNo, saleWindow{start: g.SaleStart, end: g.SaleEnd, read: at})
	}
}

// observeMissing records that a purchase of goodsNo, begun at at, found no
// row: its next buyers within ttl hear ErrNotFound at once. A nil w
// observes nothing.
func (w *saleWindows) observeMissing(goodsNo int32, at time.Time) {
	if w != nil {
		w.put(goodsNo, saleWindow{missing: true, read: at})
	}
}

// OpenAt returns a WindowError when g's sale is not open at now: before
// SaleStart, or at or after SaleEnd. It is the authoritative check, made on
// the row the purchase claimed; saleWindows is only its cache.
func (g Goods) OpenAt(now time.Time) error { return windowAt(g.SaleStart, g.SaleEnd, now) }

func windowAt(start, end *time.Time, now time.Time) error {
	switch {
	case start != nil && now.Before(*start):
		return &WindowError{Err: ErrNotStarted, At: *start}
	case end != nil && !now.Before(*end):
		return &WindowError{Err: ErrEnded, At: *end}
	}
	return nil
}
