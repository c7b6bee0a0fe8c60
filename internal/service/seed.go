package service

import (
	"context"
	"errors"
	"fmt"
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
	store SeedStore
	locking
	soldOut *SoldOutMarks
}

// SeedStore is what the seed strategy needs of the store.
type SeedStore interface {
	// BeginSale begins a sale of goodsNo under a lock whose fencing token
	// is fence: a transaction whose first statement claims the goods' row
	// (a locking read that waits for an earlier holder's transaction).
	// ErrFenced when a newer holder has written the row, ErrNotFound when
	// there is none; either way nothing is left open.
	BeginSale(ctx context.Context, goodsNo int32, fence int64) (Sale, error)
}

var seedStrategy = Strategy{
	Name:    "seed",
	Summary: "one buyer per lock hold",
	Needs:   Needs{Lock: true},
	New:     build(func(s SeedStore, d Deps) Purchaser { return NewSeed(s, d.Locker, d.Env) }),
}

// NewSeed returns the seed strategy under locker (not nil: Unlocked is the
// purchase without one). The buyers queued for a goods' lock leave the
// queue when env.Marks marks it sold out (the Shop's marks).
func NewSeed(store SeedStore, locker Locker, env Env) *Seed {
	env = env.withDefaults()
	return &Seed{store: store, locking: newLocking(locker, env, store), soldOut: env.Marks}
}

// Close does nothing: a purchase under way holds the lock only until it
// answers.
func (p *Seed) Close() {}

// Purchase sells one piece to one buyer, under the lock, fenced by its
// token.
func (p *Seed) Purchase(ctx context.Context, order *Order) error {
	goodsNo := order.GoodsNo
	lease, err := p.lockWhileInStock(ctx, goodsNo, order.Arrived)
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
	since := time.Now() // before the claim reads the row
	sctx, sold := p.selling(ctx)
	left, err := p.sell(sctx, order, token, lost, h.guard)
	err = sold(err)
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

// sell is the seed's sale, in one transaction of the store's: claim the
// goods' row against the lock's token, sleep the demo's pause, check the
// window and the stock, write the stock less one and the order, check the
// lock (guard: the hand-off begins), commit. It returns the stock it left.
// A goods without a row is ErrNotFound, a newer holder's token on it
// ErrFenced; anything that fails after the claim rolls the sale back.
func (p *Seed) sell(ctx context.Context, order *Order, token int64, lost <-chan struct{}, guard func() error) (left int32, err error) {
	goodsNo := order.GoodsNo
	sale, err := p.store.BeginSale(ctx, goodsNo, token)
	if err != nil {
		return 0, err
	}
	g := sale.Goods()[goodsNo]
	err = p.cfg.pause(ctx, lost)
	if err == nil {
		p.windows.observe(g, time.Now())
		err = g.OpenAt(p.cfg.Clock.Now())
	}
	if err == nil && g.Stock < 1 {
		err = ErrSoldOut
	}
	if err == nil {
		err = sale.Sell(ctx, map[int32][]*Order{goodsNo: {order}})
	}
	if err == nil {
		err = guard()
	}
	if err != nil {
		return 0, sale.Abort(ctx, err)
	}
	return g.Stock - 1, sale.Commit(ctx)
}

// lockWhileInStock takes the lock of goodsNo, unless the goods is marked
// sold out meanwhile: then the buyer leaves the queue (its node is deleted)
// and hears ErrSoldOut at once, as a buyer who comes after the mark does.
func (p *Seed) lockWhileInStock(ctx context.Context, goodsNo int32, arrived time.Time) (Lease, error) {
	inStock, done := p.soldOut.whileInStock(goodsNo)
	defer done()
	if inStock == nil {
		return p.lock(ctx, goodsNo, arrived)
	}
	if p.soldOut.seen(goodsNo) {
		return nil, ErrSoldOut // marked since the shop checked
	}
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	defer context.AfterFunc(inStock, func() { cancel(ErrSoldOut) })()
	lease, err := p.lock(lctx, goodsNo, arrived)
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(lctx), ErrSoldOut) {
		return nil, ErrSoldOut
	}
	return lease, err
}
