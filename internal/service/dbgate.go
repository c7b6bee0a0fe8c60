package service

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"
)

// pinger is what a store may offer the gate: one round trip to its
// database.
type pinger interface {
	Ping(ctx context.Context) error
}

// dbGate keeps an instance that cannot reach its database from taking the
// lock. Once a sale under the lock failed for the database (cut off by the
// sale timeout, its connection lost, its commit interrupted), the gate is
// shut: a purchase no longer asks for the lock until a ping of the database
// has answered. One purchase at a time runs the ping, bounded by
// pingTimeout; the others meanwhile hear ErrUnavailable at once.
//
// Without it an instance partitioned from MariaDB, but not from ZooKeeper,
// took the lock for each of its buyers in turn and held it for the whole
// sale timeout, while the instances that could sell waited for it: in the
// partition test (tests/e2e/partition_test.go), two sales in the 15 s of the
// partition against one every 100 ms before.
type dbGate struct {
	ping        func(context.Context) error // nil: no gate
	pingTimeout time.Duration
	shut        atomic.Bool
	probing     atomic.Bool
}

func newDBGate(store any, saleTimeout time.Duration) *dbGate {
	g := &dbGate{pingTimeout: min(time.Second, saleTimeout)}
	if p, ok := store.(pinger); ok {
		g.ping = p.Ping
	}
	return g
}

// pass returns nil when a purchase may ask for the lock.
func (g *dbGate) pass(ctx context.Context) error {
	if g.ping == nil || !g.shut.Load() {
		return nil
	}
	if !g.probing.CompareAndSwap(false, true) {
		return fmt.Errorf("%w: the database has not answered since a sale under the lock failed", ErrUnavailable)
	}
	defer g.probing.Store(false)
	pctx, cancel := context.WithTimeout(ctx, g.pingTimeout)
	defer cancel()
	if err := g.ping(pctx); err != nil {
		return fmt.Errorf("%w: the database did not answer a ping within %v since a sale under the lock failed: %w", ErrUnavailable, g.pingTimeout, err)
	}
	g.shut.Store(false)
	return nil
}

// saw shuts the gate when a sale's error says the database did not answer.
func (g *dbGate) saw(err error) {
	if g.ping == nil {
		return // no gate: nothing could open it again
	}
	if errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrConflict) || errors.Is(err, ErrCommitUnknown) {
		g.shut.Store(true)
	}
}
