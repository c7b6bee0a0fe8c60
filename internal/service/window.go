package service

import (
	"context"
	"sync"
	"time"
)

// saleWindows remembers each goods' sale window for a while, so that the
// window is checked before the lock without a query per buyer. Times are
// compared per request; only a change of the window takes up to ttl to show.
type saleWindows struct {
	ttl time.Duration

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
		g, err := store.Goods(ctx, goodsNo)
		if err != nil {
			return nil
		}
		sw = saleWindow{start: g.SaleStart, end: g.SaleEnd, read: now}
		w.mu.Lock()
		w.m[goodsNo] = sw
		w.mu.Unlock()
	}
	switch {
	case sw.start != nil && now.Before(*sw.start):
		return &WindowError{Err: ErrNotStarted, At: *sw.start}
	case sw.end != nil && !now.Before(*sw.end):
		return &WindowError{Err: ErrEnded, At: *sw.end}
	}
	return nil
}
