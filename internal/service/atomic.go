package service

import "context"

// Atomic lets the database be the lock: one conditional decrement per buyer
// (stock = stock - 1 where stock > 0) and its order row, in one
// transaction. No ZooKeeper. It is exact because the decrement reads and
// writes the row under its row lock; it is the baseline the locking
// strategies are measured against, and a sound choice without ZooKeeper.
type Atomic struct {
	store AtomicStore
}

// AtomicStore is what the atomic strategy needs of the store.
type AtomicStore interface {
	// SellAtomic, in one transaction, decrements the stock of
	// order.GoodsNo if it is above zero and inserts order. ErrSoldOut when
	// it is not, ErrNotFound when there is no row, ErrDuplicateRequest,
	// ErrCommitUnknown.
	SellAtomic(ctx context.Context, order *Order) error
}

var atomicStrategy = Strategy{
	Name:    "atomic",
	Summary: "no lock: a conditional UPDATE per buyer",
	New:     build(func(s AtomicStore, d Deps) Purchaser { return NewAtomic(s) }),
}

// NewAtomic returns the atomic strategy.
func NewAtomic(store AtomicStore) *Atomic { return &Atomic{store: store} }

// Purchase sells one piece to one buyer.
func (p *Atomic) Purchase(ctx context.Context, order *Order) error {
	return p.store.SellAtomic(ctx, order)
}

// Close does nothing: the strategy holds nothing between purchases.
func (p *Atomic) Close() {}
