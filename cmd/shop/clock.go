package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/repo"
	"github.com/seckill-zk/seckill-zk/internal/service"
)

// clockEvery is how often an instance measures its offset to MySQL's
// clock: a machine's clock drifts by milliseconds a day, and NTP steps it
// rarely; a step shows within this long.
const clockEvery = 10 * time.Second

// clockWarnAt is an offset worth a warning: the instance still goes by
// MySQL's clock, but its machine's is off by more than the sold-out marks'
// allowance (service.ClockSkew), and the logs' times with it.
const clockWarnAt = service.ClockSkew

// followMySQLClock measures clock's offset to MySQL's once (clock.source
// mysql), then every clockEvery until ctx ends; the returned func waits for
// the measuring to stop once ctx has ended.
func followMySQLClock(ctx context.Context, clock *service.Clock, store *repo.Store, log *slog.Logger) (wait func(), err error) {
	measure := func() (offset, bound time.Duration, err error) {
		mctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		offset, bound, err = clock.Measure(mctx, store.DatabaseTime)
		if err == nil {
			log.Debug("clock: measured MySQL's", "offset", offset.Round(time.Microsecond).String(), "error", bound.Round(time.Microsecond).String())
		}
		if err == nil && (offset > clockWarnAt || offset < -clockWarnAt) {
			log.Warn("this machine's clock is off MySQL's: the shop goes by MySQL's; fix the machine's time (NTP)",
				"offset", offset.Round(time.Millisecond).String(), "error", bound.Round(time.Microsecond).String())
		}
		return offset, bound, err
	}
	offset, bound, err := measure()
	if err != nil {
		return nil, err
	}
	log.Info("clock: going by MySQL's", "offset", offset.Round(time.Millisecond).String(), "error", bound.Round(time.Microsecond).String(), "every", clockEvery.String())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(clockEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if _, _, err := measure(); err != nil && ctx.Err() == nil {
					log.Warn("could not read MySQL's clock: the last offset stays", "err", err)
				}
			}
		}
	}()
	return func() { <-done }, nil
}
