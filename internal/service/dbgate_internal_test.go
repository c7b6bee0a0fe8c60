package service

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

type pingStore struct {
	err     error
	started chan struct{} // a ping began (nil: not told)
	finish  chan struct{} // a ping returns when closed (nil: at once)
}

func (p *pingStore) Ping(ctx context.Context) error {
	if p.started != nil {
		p.started <- struct{}{}
	}
	if p.finish != nil {
		<-p.finish
	}
	return p.err
}

// The gate shuts on a sale that failed for the database, and only then:
// while shut, one purchase pings and the others hear ErrUnavailable at
// once; the first answered ping opens it. A store without Ping has no gate.
func TestTheDatabaseGate(t *testing.T) {
	ctx := context.Background()
	none := newDBGate(struct{}{}, time.Second)
	none.saw(ErrConnectionLost)
	if err := none.pass(ctx); err != nil || none.shut.Load() {
		t.Fatalf("a store without Ping: %v, shut %v", err, none.shut.Load())
	}
	store := &pingStore{err: errors.New("i/o timeout")}
	g := newDBGate(store, 4*time.Second)
	if g.pingTimeout != time.Second {
		t.Errorf("ping timeout %v, want 1s (the least of 1s and the sale timeout)", g.pingTimeout)
	}
	for _, err := range []error{nil, ErrSoldOut, ErrConflict, ErrLockLost, context.DeadlineExceeded} {
		g.saw(err)
		if g.shut.Load() {
			t.Fatalf("shut by %v: not the database's failure", err)
		}
	}
	if err := g.pass(ctx); err != nil {
		t.Fatalf("open gate: %v", err)
	}
	g.saw(fmt.Errorf("%w: the database did not finish the sale within 4s: %w", ErrUnavailable, context.DeadlineExceeded))
	if err := g.pass(ctx); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("shut gate, the ping failing: %v, want ErrUnavailable", err)
	}
	// One probe at a time: a purchase that comes while one pings is
	// answered at once.
	store.err, store.started, store.finish = nil, make(chan struct{}), make(chan struct{})
	probe := make(chan error, 1)
	go func() { probe <- g.pass(ctx) }()
	<-store.started
	if err := g.pass(ctx); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("while another purchase pings: %v, want ErrUnavailable at once", err)
	}
	close(store.finish)
	if err := <-probe; err != nil {
		t.Fatalf("the ping answered: %v, want the gate open", err)
	}
	store.started = nil
	if err := g.pass(ctx); err != nil || g.shut.Load() {
		t.Fatalf("after an answered ping: %v, shut %v", err, g.shut.Load())
	}
	for _, err := range []error{ErrConnectionLost, ErrCommitUnknown} {
		g.shut.Store(false)
		g.saw(err)
		if !g.shut.Load() {
			t.Errorf("not shut by %v", err)
		}
	}
}

// A sale cut off by its buyer's own deadline (a commit whose outcome is
// unknown because the request ended) does not shut the gate; the same
// failure while the request lives, or a sale cut by purchase.saleTimeout,
// does.
func TestTheBuyersOwnDeadlineDoesNotShutTheGate(t *testing.T) {
	l := locking{cfg: Config{SaleTimeout: time.Minute}, gate: newDBGate(&pingStore{}, time.Minute)}
	ctx, cancel := context.WithCancel(context.Background())
	_, done := l.selling(ctx)
	cancel() // the buyer's request ended mid-commit
	done(fmt.Errorf("%w: the commit was cut off", ErrCommitUnknown))
	if l.gate.shut.Load() {
		t.Fatal("shut by a sale its buyer's own deadline cut off")
	}
	_, done = l.selling(context.Background())
	done(fmt.Errorf("%w: the connection broke", ErrCommitUnknown))
	if !l.gate.shut.Load() {
		t.Fatal("not shut by a commit cut off while its request lived")
	}
}
