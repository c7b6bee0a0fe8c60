package service

import (
	"context"
)

// Unlocked is the seed's purchase without a lock (lock.enabled=false): a
// plain read of the stock, the demo's sleep, and a write of the value read
// minus one with an order row. Concurrent buyers read the same stock and
// oversell; that is what the lock switch shows, and the order rows count
// it.
type Unlocked struct {
	store UnlockedStore
	cfg   Config
}

// UnlockedStore is what the purchase without a lock needs of the store.
type UnlockedStore interface {
	// Goods reads the row of goodsNo, or returns ErrNotFound.
	Goods(ctx context.Context, goodsNo int32) (Goods, error)
	// Sell, in one transaction, sets the stock of row g.ID to stock and
	// inserts order. It returns ErrPurchaseFailed when the update matched
	// no row, ErrDuplicateRequest when the request id was used before,
	// ErrCommitUnknown when the commit was cut off.
	Sell(ctx context.Context, g Goods, stock int32, order *Order) error
}

var unlockedStrategy = Strategy{
	Name:    "unlocked",
	Summary: "the seed's purchase without its lock: oversells under load",
	New:     build(func(s UnlockedStore, d Deps) Purchaser { return NewUnlocked(s, d.Env) }),
}

// NewUnlocked returns the purchase without a lock.
func NewUnlocked(store UnlockedStore, env Env) *Unlocked {
	return &Unlocked{store: store, cfg: env.withDefaults().Config}
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
	if err := g.OpenAt(p.cfg.Clock.Now()); err != nil {
		return err
	}
	if g.Stock < 1 {
		return ErrSoldOut
	}
	return p.store.Sell(ctx, g, g.Stock-1, order)
}

// Close does nothing: the strategy holds nothing between purchases.
func (p *Unlocked) Close() {}
