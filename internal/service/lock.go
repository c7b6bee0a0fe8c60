package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"
)

// locking is what the strategies that take the lock share: taking it within
// the acquire timeout, releasing it whatever the request did, and the demo's
// sleep.
type locking struct {
	locker Locker
	cfg    Config
	log    *slog.Logger
}

func (l locking) lock(ctx context.Context, goodsNo int32) (Lease, error) {
	lctx, cancel := context.WithTimeout(ctx, l.cfg.AcquireTimeout)
	defer cancel()
	lease, err := l.locker.Lock(lctx, goodsNo)
	switch {
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

// unlock releases the lease even when the request's context has ended: a
// held lock must never outlive the purchase.
func (l locking) unlock(ctx context.Context, lease Lease, goodsNo int32) {
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.UnlockTimeout)
	defer cancel()
	if err := lease.Unlock(uctx); err != nil {
		l.log.Error("unlock failed", "goodsNo", goodsNo, "err", err)
	}
}

// pause is the seed's random sleep "so the race shows more often". It ends
// early when the request ends or the lock is lost.
func (l locking) pause(ctx context.Context, lost <-chan struct{}) error {
	if l.cfg.MaxSleep <= 0 {
		return nil
	}
	t := time.NewTimer(rand.N(l.cfg.MaxSleep))
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
