package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Seed is the seed's purchase, one buyer at a time: read the stock, sleep
// for the demo's pause (Config.Pause), check it, write back the value read
// minus one with an order row.
//
// The read, the sleep and the write are one transaction that first claims
// the row against the lock's fencing token (and writes the token with the
// stock), so a holder whose lock passed on while it was paused can neither
// write after a newer holder nor have its late commit overwritten by one.
// Without the lock the same purchase is Unlocked (unlocked.go).
type Seed struct {
	store Store
	locking
	soldOut *SoldOutMarks
}

// NewSeed returns the seed strategy. The buyers queued for a goods' lock
// leave the queue when marks marks it sold out (the Shop's marks).
func NewSeed(store Store, locker Locker, marks *SoldOutMarks, cfg Config, log *slog.Logger) *Seed {
	if locker == nil {
		panic("service: NewSeed needs a Locker (NewUnlocked is the purchase without one)")
	}
	cfg.setDefaults()
	return &Seed{store: store, locking: locking{locker: locker, cfg: cfg, log: log}, soldOut: marks}
}

// Purchase sells one piece to one buyer, under the lock, fenced by its
// token.
func (p *Seed) Purchase(ctx context.Context, order *Order) error {
	goodsNo := order.GoodsNo
	lease, err := p.lockWhileInStock(ctx, goodsNo)
	if err != nil {
		return err
	}
	h := p.handOff(ctx, lease, goodsNo)
	defer h.done()
	if p.soldOut.seen(goodsNo) { // the buyer ahead in the queue found none left
		return ErrSoldOut
	}
	lost := h.lost
	token, err := lease.Token(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: no fencing token: %w", ErrLockLost, err)
	}
	var left int32
	decide := func(g Goods) (int32, error) {
		if err := p.cfg.pause(ctx, lost); err != nil {
			return 0, err
		}
		now := time.Now()
		p.windows.observe(g, now)
		if err := g.OpenAt(now); err != nil {
			return 0, err
		}
		if g.Stock < 1 {
			return 0, ErrSoldOut
		}
		left = g.Stock - 1
		return left, nil
	}
	since := time.Now() // before the claim reads the row
	err = p.store.SellFenced(ctx, goodsNo, token, order, decide, h.guard)
	if err == nil && left == 0 || errors.Is(err, ErrSoldOut) {
		// This buyer got the last piece, or found none left under the
		// lock: mark it before the release (deferred above), so that the
		// buyers queued behind leave the queue before the lock passes on.
		// The Shop would mark it too, but only once the release is done.
		p.soldOut.mark(goodsNo, since)
	}
	if errors.Is(err, ErrFenced) {
		p.log.Warn("purchase fenced off: a newer lock holder wrote first", "goodsNo", goodsNo, "err", err)
	}
	return err
}

// lockWhileInStock takes the lock of goodsNo, unless the goods is marked
// sold out meanwhile: then the buyer leaves the queue (its node is deleted)
// and hears ErrSoldOut at once, as a buyer who comes after the mark does.
func (p *Seed) lockWhileInStock(ctx context.Context, goodsNo int32) (Lease, error) {
	inStock, done := p.soldOut.whileInStock(goodsNo)
	defer done()
	if inStock == nil {
		return p.lock(ctx, goodsNo)
	}
	if p.soldOut.seen(goodsNo) {
		return nil, ErrSoldOut // marked since the shop checked
	}
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(inStock, func() { cancel(ErrSoldOut) })()
	lease, err := p.lock(lctx, goodsNo)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(lctx), ErrSoldOut) {
		return nil, ErrSoldOut
	}
	return lease, err
}
