package service

import (
	"context"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// readTimeout bounds a read of a goods' row that buyers share: it runs
// detached from the buyer who started it, so that one buyer hanging up does
// not fail the others.
const readTimeout = 5 * time.Second

// saleWindows remembers each goods' sale window for a while, so that the
// window is checked before the lock without a query per buyer. Times are
// compared per request; only a change of the window takes up to ttl (and
// one read) to show.
//
// One read per goods is in flight at a time: the buyers who find no window
// yet wait for it and share its answer, and those who find it stale keep
// using the stale one while it is read again. Without that, a crowd would
// send a query per buyer every ttl, and a fresh instance would open a
// connection per buyer of its first crowd.
type saleWindows struct {
	ttl   time.Duration
	reads singleflight.Group

	mu sync.Mutex
	m  map[int32]saleWindow
}

type saleWindow struct {
	start, end *time.Time
	read       time.Time
}

func newSaleWindows(ttl time.Duration) *saleWindows {
	return &saleWindows{ttl: ttl, m: map[int32]saleWindow{}}
}

// check returns a WindowError when goodsNo's sale is not open at now. A
// goods the store cannot read (missing, or the database away) passes: the
// purchase itself then answers for it.
func (w *saleWindows) check(ctx context.Context, store Store, goodsNo int32, now time.Time) error {
	w.mu.Lock()
	sw, ok := w.m[goodsNo]
	w.mu.Unlock()
	if !ok || now.Sub(sw.read) >= w.ttl {
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
			if err != nil {
				return nil, err
			}
			fresh := saleWindow{start: g.SaleStart, end: g.SaleEnd, read: time.Now()}
			w.mu.Lock()
			w.m[goodsNo] = fresh
			w.mu.Unlock()
			return fresh, nil
		})
		if !ok {
			select {
			case r := <-ch:
				if r.Err != nil {
					return nil
				}
				sw = r.Val.(saleWindow)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	switch {
	case sw.start != nil && now.Before(*sw.start):
		return &WindowError{Err: ErrNotStarted, At: *sw.start}
	case sw.end != nil && !now.Before(*sw.end):
		return &WindowError{Err: ErrEnded, At: *sw.end}
	}
	return nil
}
