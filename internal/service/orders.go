package service

import (
	"context"
	"log/slog"
	"time"
)

// OrderStore is the persistence the order life cycle needs.
type OrderStore interface {
	// Order reads an order of owner ("" : of anyone), or returns
	// ErrOrderNotFound, for another buyer's order too.
	Order(ctx context.Context, id uint64, owner string) (Order, error)
	// PayOrder marks an unpaid order placed at or after placedSince paid, in
	// one conditional step (exactly one of a payment and an expiry wins).
	// A paid order is returned as it is; an expired one, or one placed
	// before placedSince, is ErrOrderExpired; none, or another buyer's
	// than owner ("" : anyone's), ErrOrderNotFound.
	PayOrder(ctx context.Context, id uint64, owner string, now, placedSince time.Time) (Order, error)
	// ExpireOrders expires up to limit unpaid orders placed before
	// placedBefore and returns their pieces to the stock, each order at
	// most once however many sweepers run, and returns them.
	ExpireOrders(ctx context.Context, placedBefore, now time.Time, limit int) ([]Order, error)
}

// OrdersConfig tunes the order life cycle.
type OrdersConfig struct {
	// PayTimeout is how long an order may stay unpaid before it expires and
	// its piece goes back to the stock. Default DefaultPayTimeout;
	// negative: orders never expire.
	PayTimeout time.Duration
	// SweepInterval is the pause between two sweeps. Default
	// DefaultSweepInterval.
	SweepInterval time.Duration
	// SweepBatch bounds the orders one sweep transaction expires. Default
	// DefaultSweepBatch.
	SweepBatch int
	// Clock is the time payments and the sweeper judge an order's deadline
	// by (nil: this machine's); the shop's follows the database's, which
	// the order's placing time is read from too (see Clock).
	Clock *Clock
}

// Orders is the order life cycle: placed unpaid by a purchase, then paid by
// the buyer or, after PayTimeout, expired by the sweeper, which returns the
// piece to the stock (the seed's "deduct at order time, give back what is
// not paid for").
type Orders struct {
	store OrderStore
	cfg   OrdersConfig
	log   *slog.Logger
	now   func() time.Time
}

// OrdersConfig's defaults.
const (
	// DefaultPayTimeout: an order unpaid this long expires
	// (orders.payTimeout).
	DefaultPayTimeout = 15 * time.Minute
	// DefaultSweepInterval is how often the elected instance sweeps
	// (orders.sweepInterval).
	DefaultSweepInterval = time.Second
	DefaultSweepBatch    = 500
)

// WithDefaults is cfg with each field left zero at its default: what
// NewOrders makes of it.
func (cfg OrdersConfig) WithDefaults() OrdersConfig {
	if cfg.PayTimeout == 0 {
		cfg.PayTimeout = DefaultPayTimeout
	}
	if cfg.SweepInterval <= 0 {
		cfg.SweepInterval = DefaultSweepInterval
	}
	if cfg.SweepBatch <= 0 {
		cfg.SweepBatch = DefaultSweepBatch
	}
	return cfg
}

// NewOrders returns the order life cycle on store.
func NewOrders(store OrderStore, cfg OrdersConfig, log *slog.Logger) *Orders {
	cfg = cfg.WithDefaults()
	return &Orders{store: store, cfg: cfg, log: log, now: func() time.Time { return cfg.Clock.Now().UTC() }}
}

// Get returns order id if it is owner's. An owner of "" reads any order:
// the anonymous demo (auth.mode none), where orders are open to anyone.
// Another buyer's order is ErrOrderNotFound, as a missing one: its
// existence is not revealed.
func (o *Orders) Get(ctx context.Context, id uint64, owner string) (Order, error) {
	if id == 0 {
		return Order{}, ErrInvalidOrderID
	}
	ctx, cancel := boundRead(ctx)
	defer cancel()
	order, err := o.store.Order(ctx, id, owner)
	return order, readErr(ctx, err)
}

// Pay pays order id. Paying a paid order again succeeds (a retried payment
// is not an error); an order past its pay timeout is ErrOrderExpired even
// before the sweeper gets to it. Only owner pays ("" : anyone, as Get).
func (o *Orders) Pay(ctx context.Context, id uint64, owner string) (Order, error) {
	if id == 0 {
		return Order{}, ErrInvalidOrderID
	}
	now := o.now()
	var placedSince time.Time
	if o.cfg.PayTimeout > 0 {
		placedSince = now.Add(-o.cfg.PayTimeout)
	}
	return o.store.PayOrder(ctx, id, owner, now, placedSince)
}

// Sweep runs sweeps every SweepInterval until ctx ends: the work of the
// elected instance, named sweeper in the logs. Each sweep expires the unpaid
// orders older than PayTimeout, a batch per transaction. ctx ending stops a
// sweep at once (its transaction rolls back), which is what a leader that
// loses its leadership must do. Every sweep is logged at debug level with
// its start and end (Unix nanoseconds), so that who swept when can be
// checked: two sweepers never at once.
func (o *Orders) Sweep(ctx context.Context, sweeper string) error {
	if o.cfg.PayTimeout <= 0 {
		<-ctx.Done() // nothing expires: lead without work
		return ctx.Err()
	}
	o.log.Info("sweeping expired orders", "sweeper", sweeper, "payTimeout", o.cfg.PayTimeout.String(), "interval", o.cfg.SweepInterval.String())
	t := time.NewTicker(o.cfg.SweepInterval)
	defer t.Stop()
	for {
		start := time.Now()
		n, err := o.sweepOnce(ctx)
		o.log.Debug("sweep", "sweeper", sweeper, "start", start.UnixNano(), "end", time.Now().UnixNano(), "expired", n)
		switch {
		case ctx.Err() != nil:
			o.log.Info("stopped sweeping", "sweeper", sweeper)
			return ctx.Err()
		case err != nil:
			o.log.Warn("sweep failed", "sweeper", sweeper, "err", err)
		case n > 0:
			o.log.Info("expired unpaid orders", "sweeper", sweeper, "orders", n)
		}
		select {
		case <-t.C:
		case <-ctx.Done():
			o.log.Info("stopped sweeping", "sweeper", sweeper)
			return ctx.Err()
		}
	}
}

// sweepOnce expires what is due, a batch at a time, and returns how many.
func (o *Orders) sweepOnce(ctx context.Context) (int, error) {
	total := 0
	for {
		now := o.now()
		expired, err := o.store.ExpireOrders(ctx, now.Add(-o.cfg.PayTimeout), now, o.cfg.SweepBatch)
		total += len(expired)
		if err != nil || len(expired) < o.cfg.SweepBatch {
			return total, err
		}
	}
}
