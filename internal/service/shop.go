// Package service holds the shop's business rules: the seckill purchase of
// the Spring seed (read the stock, check it, write it back minus one), an order
// row per sale, and the distributed lock that makes the read-modify-write safe
// across instances.
package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
)

// Goods is a goods_stock row.
type Goods struct {
	ID       uint32
	GoodsNo  int32
	Stock    int32 // a NULL stock reads as 0
	IsActive int16
}

// StockInfo is a goods' row with the number of order rows it has: the
// load tester's measure of overselling (orders - stock sold).
type StockInfo struct {
	Goods
	Orders int64
}

// Order is an order_info row: one per successful purchase.
type Order struct {
	ID        uint64
	GoodsNo   int32
	RequestID string
	CreatedAt time.Time
}

// Store is the persistence the shop needs.
type Store interface {
	// Goods reads the row of goodsNo, or returns ErrNotFound.
	Goods(ctx context.Context, goodsNo int32) (Goods, error)
	// Sell, in one transaction, sets the stock of row g.ID to stock and
	// inserts order: the unlocked purchase. It returns ErrPurchaseFailed when
	// the update matched no row, ErrDuplicateRequest when the request id was
	// used before, ErrCommitUnknown when the commit was cut off.
	Sell(ctx context.Context, g Goods, stock int32, order *Order) error
	// SellFenced is the purchase under a lock with fencing token fence, in
	// one transaction: claim the goods' row with the token (waiting for an
	// earlier holder's transaction; ErrFenced when a newer holder has
	// written), read it, call decide for the new stock, write the stock and
	// order, call guard, commit. ErrNotFound when there is no row; an error
	// from decide or guard rolls back and is returned.
	SellFenced(ctx context.Context, goodsNo int32, fence int64, order *Order, decide func(Goods) (int32, error), guard func() error) error
	// CountOrders counts the order rows of goodsNo.
	CountOrders(ctx context.Context, goodsNo int32) (int64, error)
	// OrderByRequestID reads the order of a request id, if there is one.
	OrderByRequestID(ctx context.Context, requestID string) (order Order, found bool, err error)
}

// Locker hands out the distributed lock that serialises purchases of one
// goods number across all instances.
type Locker interface {
	Lock(ctx context.Context, goodsNo int32) (Lease, error)
}

// Lease is a held lock.
type Lease interface {
	// Lost is closed when the lock can no longer be trusted to be held.
	Lost() <-chan struct{}
	// Token is the hold's fencing token: it grows from holder to holder.
	Token(ctx context.Context) (int64, error)
	// Unlock releases the lock.
	Unlock(ctx context.Context) error
}

// Config tunes the purchase.
type Config struct {
	// MaxSleep: each purchase sleeps a random duration in [0, MaxSleep)
	// between reading and writing the stock, the seed's race amplifier.
	MaxSleep time.Duration
	// AcquireTimeout bounds the wait for the lock. Default 10s.
	AcquireTimeout time.Duration
	// UnlockTimeout bounds the release of the lock. Default 10s.
	UnlockTimeout time.Duration
	// OutcomeTimeout bounds how long a purchase whose commit was cut off
	// keeps asking the database whether its order exists. Default 10s.
	OutcomeTimeout time.Duration
}

// Shop sells goods.
type Shop struct {
	store  Store
	locker Locker // nil: no lock, the seed's overselling version
	cfg    Config
	log    *slog.Logger
}

// New returns a Shop. A nil locker runs purchases without a lock, which
// oversells under concurrency: that is the switch the demo flips.
func New(store Store, locker Locker, cfg Config, log *slog.Logger) *Shop {
	if cfg.AcquireTimeout <= 0 {
		cfg.AcquireTimeout = 10 * time.Second
	}
	if cfg.UnlockTimeout <= 0 {
		cfg.UnlockTimeout = 10 * time.Second
	}
	if cfg.OutcomeTimeout <= 0 {
		cfg.OutcomeTimeout = 10 * time.Second
	}
	return &Shop{store: store, locker: locker, cfg: cfg, log: log}
}

// Stock returns the current row of goodsNo and its number of orders.
func (s *Shop) Stock(ctx context.Context, goodsNo int32) (StockInfo, error) {
	if goodsNo <= 0 {
		return StockInfo{}, ErrInvalidGoodsNo
	}
	g, err := s.store.Goods(ctx, goodsNo)
	if err != nil {
		return StockInfo{}, err
	}
	n, err := s.store.CountOrders(ctx, goodsNo)
	if err != nil {
		return StockInfo{}, err
	}
	return StockInfo{Goods: g, Orders: n}, nil
}

// Purchase buys one piece of goodsNo for the request requestID: it reads
// the stock, sleeps up to MaxSleep, checks it, and writes back the value read
// minus one together with an order row. Nothing is written unless it returns
// the order.
//
// Without a lock that is the seed's overselling race. Under the lock the
// read, the sleep and the write happen in one transaction that first claims
// the row with the lock's fencing token, so a holder whose lock passed on
// while it was paused can neither write after a newer holder nor have its
// late commit overwritten by one.
func (s *Shop) Purchase(ctx context.Context, goodsNo int32, requestID string) (*Order, error) {
	if goodsNo <= 0 {
		return nil, ErrInvalidGoodsNo
	}
	order := &Order{GoodsNo: goodsNo, RequestID: requestID}
	var err error
	if s.locker == nil {
		err = s.sellUnlocked(ctx, order)
	} else {
		err = s.sellLocked(ctx, order)
	}
	if errors.Is(err, ErrCommitUnknown) {
		return s.outcome(ctx, order, err)
	}
	if err != nil {
		return nil, err
	}
	return order, nil
}

// sellLocked is the purchase under the lock, fenced by its token.
func (s *Shop) sellLocked(ctx context.Context, order *Order) error {
	goodsNo := order.GoodsNo
	lease, err := s.lock(ctx, goodsNo)
	if err != nil {
		return err
	}
	defer s.unlock(ctx, lease, goodsNo)
	lost := lease.Lost()
	token, err := lease.Token(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w: no fencing token: %w", ErrLockLost, err)
	}
	decide := func(g Goods) (int32, error) {
		if err := s.pause(ctx, lost); err != nil {
			return 0, err
		}
		if g.Stock < 1 {
			return 0, ErrSoldOut
		}
		return g.Stock - 1, nil
	}
	guard := func() error {
		select {
		case <-lost:
			return ErrLockLost
		default:
			return nil
		}
	}
	err = s.store.SellFenced(ctx, goodsNo, token, order, decide, guard)
	if errors.Is(err, ErrFenced) {
		s.log.Warn("purchase fenced off: a newer lock holder wrote first", "goodsNo", goodsNo, "err", err)
	}
	return err
}

// outcome finds out whether a purchase whose commit was cut off happened,
// by looking for its order (request ids are unique), until OutcomeTimeout.
// The buyer then hears the truth: 200 with the order, or the purchase's
// failure; ErrCommitUnknown only if the database stays away.
func (s *Shop) outcome(ctx context.Context, order *Order, commitErr error) (*Order, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.OutcomeTimeout)
	defer cancel()
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		o, found, err := s.store.OrderByRequestID(ctx, order.RequestID)
		switch {
		case err == nil && found:
			s.log.Warn("commit was cut off but went through", "requestId", order.RequestID, "orderId", o.ID)
			return &o, nil
		case err == nil:
			return nil, fmt.Errorf("%w: the commit was cut off and did not happen (%v)", ErrUnavailable, commitErr)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			s.log.Error("purchase outcome unknown", "requestId", order.RequestID, "err", commitErr)
			return nil, commitErr
		}
	}
}

// sellUnlocked is the seed's purchase without a lock: a plain read, the
// sleep, and a write of the value read minus one. Concurrent buyers read the
// same stock and oversell; that is what the lock switch shows.
func (s *Shop) sellUnlocked(ctx context.Context, order *Order) error {
	g, err := s.store.Goods(ctx, order.GoodsNo)
	if err != nil {
		return err
	}
	if err := s.pause(ctx, nil); err != nil {
		return err
	}
	if g.Stock < 1 {
		return ErrSoldOut
	}
	return s.store.Sell(ctx, g, g.Stock-1, order)
}

func (s *Shop) lock(ctx context.Context, goodsNo int32) (Lease, error) {
	lctx, cancel := context.WithTimeout(ctx, s.cfg.AcquireTimeout)
	defer cancel()
	lease, err := s.locker.Lock(lctx, goodsNo)
	switch {
	case err == nil:
		return lease, nil
	case ctx.Err() != nil:
		return nil, ctx.Err() // the caller gave up
	case errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("%w after %v", ErrLockTimeout, s.cfg.AcquireTimeout)
	default:
		return nil, fmt.Errorf("%w: lock: %w", ErrUnavailable, err)
	}
}

// unlock releases the lease even when the request's context has ended: a
// held lock must never outlive the purchase.
func (s *Shop) unlock(ctx context.Context, lease Lease, goodsNo int32) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.UnlockTimeout)
	defer cancel()
	if err := lease.Unlock(uctx); err != nil {
		s.log.Error("unlock failed", "goodsNo", goodsNo, "err", err)
	}
}

// pause is the seed's random sleep "so the race shows more often". It ends
// early when the request ends or the lock is lost.
func (s *Shop) pause(ctx context.Context, lost <-chan struct{}) error {
	if s.cfg.MaxSleep <= 0 {
		return nil
	}
	t := time.NewTimer(rand.N(s.cfg.MaxSleep))
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-lost:
		return ErrLockLost
	case <-ctx.Done():
		return ctx.Err()
	}
}
