package service

import "context"

// Atomic lets the database be the lock: one conditional decrement per buyer
// (stock = stock - 1 where stock > 0) and its order row, in one
// transaction. No ZooKeeper. It is exact because the decrement reads and
// writes the row under its row lock; it is the baseline the locking
// strategies are measured against, and a sound choice without ZooKeeper.
type Atomic struct {
	store Store
}

// NewAtomic returns the atomic strategy.
func NewAtomic(store Store) *Atomic { return &Atomic{store: store} }

// Purchase sells one piece to one buyer.
func (p *Atomic) Purchase(ctx context.Context, order *Order) error {
	return p.store.SellAtomic(ctx, order)
}
