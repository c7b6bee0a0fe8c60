package service

import (
	"context"
	"time"
)

// Unlocked is the seed's purchase without a lock (lock.enabled=false): a
// plain read of the stock, the demo's sleep, and a write of the value read
// minus one with an order row. Concurrent buyers read the same stock and
// oversell; that is what the lock switch shows, and the order rows count
// it.
type Unlocked struct {
	store Store
	cfg   Config
}

// NewUnlocked returns the purchase without a lock.
func NewUnlocked(store Store, cfg Config) *Unlocked {
	cfg.setDefaults()
	return &Unlocked{store: store, cfg: cfg}
}

// Purchase reads, sleeps, checks and writes the value read minus one.
func (p *Unlocked) Purchase(ctx context.Context, order *Order) error {
	g, err := p.store.Goods(ctx, order.GoodsNo)
	if err != nil {
		return err
	}
	if err := p.cfg.pause(ctx, nil); err != nil {
		return err
	}
	if err := g.OpenAt(time.Now()); err != nil {
		return err
	}
	if g.Stock < 1 {
		return ErrSoldOut
	}
	return p.store.Sell(ctx, g, g.Stock-1, order)
}
