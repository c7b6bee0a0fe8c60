package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// locking is what the strategies that take the lock share: taking it within
// the acquire timeout, releasing it whatever the request did, and the demo's
// sleep.
type locking struct {
	locker Locker
	cfg    Config
	log    *slog.Logger
	// windows are the Shop's sale windows (nil: none): a claim reads the
	// goods' row under the lock, window included, and refreshes the cache
	// with it, so that during a sale the Shop's check before the lock needs
	// no read of its own.
	windows *saleWindows
	gate    *dbGate     // shut while the database does not answer
	reach   unreachable // the locker's, if it tells; nil: it does not
}

func newLocking(locker Locker, env Env, store any) locking {
	reach, _ := locker.(unreachable)
	return locking{locker: locker, cfg: env.Config, log: env.Log, windows: env.windows, gate: newDBGate(store, env.Config.SaleTimeout), reach: reach}
}

// unreachable is what a Locker may also tell: that it cannot take a lock
// now (a ZooKeeper session lost, not made again), so that a buyer is told
// at once rather than after the acquire timeout.
type unreachable interface {
	Unreachable() error
}

func (l locking) lock(ctx context.Context, goodsNo int32, arrived time.Time) (Lease, error) {
	if l.reach != nil {
		if err := l.reach.Unreachable(); err != nil {
			return nil, fmt.Errorf("%w: lock: %w", ErrUnavailable, err)
		}
	}
	if err := l.gate.pass(ctx); err != nil {
		return nil, err
	}
	lctx, cancel := context.WithTimeout(ctx, l.cfg.AcquireTimeout)
	defer cancel()
	lease, err := l.locker.Lock(lctx, goodsNo, arrived)
	switch {
	case err == nil && l.gate.shut.Load():
		// Shut while this buyer waited in the lock's queue: hand the lock
		// on at once rather than hold it for a database that does not answer.
		l.unlock(ctx, lease, goodsNo)
		return nil, fmt.Errorf("%w: the database stopped answering while this purchase waited for the lock", ErrUnavailable)
	case err == nil:
		return lease, nil
	case ctx.Err() != nil:
		return nil, ctx.Err() // the caller gave up
	case errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("%w after %v", ErrLockTimeout, l.cfg.AcquireTimeout)
	default:
		return nil, fmt.Errorf("%w: lock: %w", ErrUnavailable, err)
	}
}

// errSaleTimeout is the cause of a sale cut off by Config.SaleTimeout.
var errSaleTimeout = errors.New("sale timeout")

// selling is ctx bounded by SaleTimeout, for a sale under the lock; the
// returned func ends it and turns the error of a sale the bound cut off into
// ErrUnavailable (the request's own deadline stays a timeout).
func (l locking) selling(ctx context.Context) (context.Context, func(error) error) {
	sctx, cancel := context.WithTimeoutCause(ctx, l.cfg.SaleTimeout, errSaleTimeout)
	return sctx, func(err error) error {
		cut := context.Cause(sctx) == errSaleTimeout
		cancel()
		if err != nil && cut && errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("%w: the database did not finish the sale within %v (purchase.saleTimeout): %w", ErrUnavailable, l.cfg.SaleTimeout, err)
		}
		if ctx.Err() == nil || cut {
			// A sale the buyer's own deadline cut off says nothing of the
			// database: shut on it, the gate refused every buyer of the
			// instance while its ping ran (make bench-shop (k), seed with
			// a busy loop: ~3 000 buyers 503 unavailable at once).
			l.gate.saw(err)
		}
		return err
	}
}

// unlock releases the lease even when the request's context has ended: a
// held lock must never outlive the purchase.
func (l locking) unlock(ctx context.Context, lease Lease, goodsNo int32) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.UnlockTimeout)
	defer cancel()
	if err := lease.Unlock(uctx); err != nil {
		l.log.Error("unlock failed", "goodsNo", goodsNo, "err", err)
	}
}

// pause is the seed's sleep "so the race shows more often" (Config.Pause).
// It ends early when the request ends or the lock is lost (lost may be nil:
// no lock).
func (c Config) pause(ctx context.Context, lost <-chan struct{}) error {
	if c.Pause == nil {
		return nil
	}
	d := c.Pause()
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
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

// handOff ends a purchase under a lease. Its guard, the transaction's step
// before its writes (a batch's) or before its commit, checks that the lock
// is still held and then starts releasing it, so that the hand-off to the
// next holder (a delete, a watch firing, perhaps a listing) overlaps the
// writes and the commit instead of following them.
//
// That is safe because of the claim: the next holder's first statement is a
// locking read of the same row, which waits for this transaction's row lock
// and then reads its commit (or, had it rolled back, the row as it was). The
// fence still orders the two: the next holder's token is the larger. The
// ZooKeeper lock decides who is next; the row lock keeps the two
// transactions apart for the round trips they may overlap. Where row
// locks do not span the store (a Galera cluster: Config.HandOffAfterCommit)
// the guard only checks the lock, and the release follows the commit.
type handOff struct {
	l       locking
	ctx     context.Context
	lease   Lease
	goodsNo int32
	lost    <-chan struct{}
	// onRelease, if set, is called once the release has begun, in the
	// goroutine that began it.
	onRelease func()

	mu       sync.Mutex
	guarded  bool // the guard passed once
	started  bool
	released chan struct{}
}

func (l locking) handOff(ctx context.Context, lease Lease, goodsNo int32) *handOff {
	return &handOff{l: l, ctx: ctx, lease: lease, goodsNo: goodsNo, lost: lease.Lost(), released: make(chan struct{})}
}

// start begins the release, once; it reports whether this call began it.
func (h *handOff) start() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.started {
		return false
	}
	h.started = true
	go func() {
		defer close(h.released)
		h.l.unlock(h.ctx, h.lease, h.goodsNo)
	}()
	if h.onRelease != nil {
		h.onRelease()
	}
	return true
}

// guard is the check before the commit: ErrLockLost when the lock is lost
// (or was already let go), else the release begins and the commit may go.
func (h *handOff) guard() error {
	select {
	case <-h.lost:
		return ErrLockLost
	default:
	}
	h.mu.Lock()
	again := h.guarded || h.started
	h.guarded = true
	h.mu.Unlock()
	if again {
		return ErrLockLost // a second commit under one hold: never
	}
	if !h.l.cfg.HandOffAfterCommit {
		h.start()
	}
	return nil
}

// done releases the lock if the guard did not, and waits for the release.
func (h *handOff) done() {
	h.start()
	<-h.released
}
