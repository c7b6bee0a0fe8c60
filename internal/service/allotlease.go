package service

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The allot strategy's lease: opened on first need, its stock asked back by
// other instances and given back when idle, closed when its owner's
// ZooKeeper node is gone (reap), dropped on a failure.

// ensureLease opens a lease if the instance has none, or a new one if its
// session ended (the old one is closed by whoever reaps it).
func (a *Allot) ensureLease(ctx context.Context) error {
	if a.lease != 0 {
		select {
		case <-a.lost:
			a.log.Warn("allot: the ZooKeeper session of the lease ended: a new lease", "lease", a.lease)
			a.dropLease(ctx)
		default:
			return nil
		}
	}
	node, lost, err := a.nodes.Create(ctx)
	if err != nil {
		return fmt.Errorf("%w: lease node: %w", ErrUnavailable, err)
	}
	lease, err := a.store.OpenLease(ctx, node)
	if err != nil {
		_ = a.nodes.Delete(ctx, node)
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	a.lease, a.node, a.lost = lease, node, lost
	return nil
}

// dropLease forgets the lease: its node is deleted if it is still there,
// and the lease is closed by whoever reaps it.
func (a *Allot) dropLease(ctx context.Context) {
	if a.node != "" {
		_ = a.nodes.Delete(ctx, a.node)
	}
	a.lease, a.node, a.lost = 0, "", nil
	clear(a.held)
	clear(a.goods)
	clear(a.used)
	clear(a.wanted)
	clear(a.waitsSince)
	clear(a.yielded)
}

// failed brings the worker's view of the lease in line with the store
// after a transaction failed: a closed lease is dropped; after any other
// failure (a commit whose outcome is unknown, say) the lease's counts are
// read again.
func (a *Allot) failed(ctx context.Context, err error) {
	if errors.Is(err, ErrFenced) {
		a.log.Warn("allot: the lease was closed under us", "lease", a.lease, "err", err)
		a.dropLease(ctx)
		return
	}
	held, open, rerr := a.store.LeaseState(ctx, a.lease)
	switch {
	case rerr != nil:
		a.log.Warn("allot: the lease's counts could not be read again: a new lease", "lease", a.lease, "err", rerr)
		a.dropLease(ctx)
	case !open:
		a.dropLease(ctx)
	default:
		clear(a.held)
		for no, h := range held {
			a.held[no] = h
		}
	}
}

// ask asks other leases for the goods of want, which they hold: they give
// them back once their own buyers leave them (readWanted). The ask is sent
// aside, at most one at a time: a holder's row may be locked by its batch
// in flight, or by a transaction of a stalled owner, and the worker does
// not wait for it. An ask not sent is sent with the next retry.
func (a *Allot) ask(holders map[int64][]int32, first map[int32]time.Time) {
	if !a.asking.CompareAndSwap(false, true) {
		return
	}
	want := map[int64][]Ask{}
	for lease, goodsNos := range holders {
		for _, no := range goodsNos {
			want[lease] = append(want[lease], Ask{GoodsNo: no, Arrived: first[no]})
		}
	}
	a.asks.Add(1)
	go func() {
		defer a.asks.Done()
		defer a.asking.Store(false)
		ctx, cancel := a.opContext()
		defer cancel()
		if err := a.store.WantBack(ctx, want); err != nil {
			a.log.Warn("allot: other leases not asked for their stock", "err", err)
		}
	}()
}

// readWanted notes, every half allotIdle, the goods other leases asked
// the lease for.
func (a *Allot) readWanted(now time.Time) {
	if a.lease == 0 || len(a.held) == 0 || now.Sub(a.lastAsks) < allotIdle/2 {
		return
	}
	a.lastAsks = now
	ctx, cancel := a.opContext()
	defer cancel()
	asks, err := a.store.Wanted(ctx, a.lease)
	if err != nil {
		a.log.Warn("allot: the lease's wanted list not read", "lease", a.lease, "err", err)
		return
	}
	for _, ask := range asks {
		if a.left(ask.GoodsNo) > 0 {
			a.noteAsk(ask, now)
		}
	}
}

// returnIdle puts back the stock of goods nobody here asked for lately:
// after allotIdle of a goods another lease asked for (its buyers wait for
// it), after AllotConfig.Keep of any other (holding it costs nothing, taking it
// again a grant).
func (a *Allot) returnIdle(now time.Time) {
	if a.lease == 0 {
		return
	}
	back := map[int32]int32{}
	for no := range a.held {
		idle := now.Sub(a.used[no])
		asked, ok := a.wanted[no]
		wanted := ok && now.Sub(asked) < a.keep
		if n := a.left(no); n > 0 && (idle >= a.keep || wanted && idle >= allotIdle || a.yieldedLately(no, now)) {
			back[no] = n
		}
	}
	for no := range a.goods {
		if a.left(no) <= 0 && now.Sub(a.used[no]) >= allotIdle {
			delete(a.goods, no) // nothing held: the next grant reads the row again
			delete(a.used, no)
			a.forgetAsks(no)
		}
	}
	if len(back) == 0 {
		return
	}
	ctx, cancel := a.opContext()
	defer cancel()
	if err := a.store.ReturnAllotted(ctx, a.lease, a.held, back); err != nil {
		a.log.Warn("allot: stock not put back", "lease", a.lease, "err", err)
		a.failed(ctx, err)
		return
	}
	for no, n := range back {
		h := a.held[no]
		h.Granted -= n
		if h.Granted == h.Sold {
			delete(a.held, no)
		} else {
			a.held[no] = h
		}
		delete(a.goods, no)
		delete(a.used, no)
		a.forgetAsks(no)
	}
}

// reap closes, now and then, the open leases whose node is gone: their
// owners' sessions ended, and what they held unsold goes back.
func (a *Allot) reap(now time.Time) {
	if now.Sub(a.lastReap) < allotReapEvery {
		return
	}
	a.lastReap = now
	ctx, cancel := a.opContext()
	defer cancel()
	leases, err := a.store.OpenLeases(ctx)
	if err != nil {
		a.log.Warn("allot: open leases not listed", "err", err)
		return
	}
	for id, node := range leases {
		if id == a.lease {
			continue
		}
		ok, err := a.nodes.Exists(ctx, node)
		if err != nil || ok {
			continue
		}
		putBack, closed, err := a.store.CloseLease(ctx, id)
		switch {
		case err != nil:
			a.log.Warn("allot: a dead owner's lease not closed", "lease", id, "err", err)
		case closed:
			a.log.Info("allot: closed the lease of a dead owner, its unsold stock put back", "lease", id, "putBack", putBack)
		}
	}
}

// closeLease puts back what the lease holds and closes it, at the end.
func (a *Allot) closeLease() {
	if a.lease == 0 {
		return
	}
	ctx, cancel := a.opContext()
	defer cancel()
	if putBack, _, err := a.store.CloseLease(ctx, a.lease); err != nil {
		a.log.Warn("allot: the lease not closed at the end (it is closed once its node is gone)", "lease", a.lease, "err", err)
	} else {
		a.log.Info("allot: lease closed", "lease", a.lease, "putBack", putBack)
	}
	a.dropLease(ctx)
}

// Allotment is the stock of a goods an instance's lease holds: granted to
// it from the goods' row, and sold of that (purchase.strategy=allot).
type Allotment struct {
	Granted, Sold int32
}

// GrantSale is a grant's transaction as the store hands it to the service
// (AllotStore.BeginGrant): begun with the goods' rows read and locked, then
// taken from and committed, or aborted.
type GrantSale interface {
	// Goods is each goods' row as the grant read it; a goods without a
	// row is missing.
	Goods() map[int32]Goods
	// Take takes take[no] of each goods' row into the lease, which holds
	// held, and commits; with pending it also reads what the other leases
	// hold unsold of each goods whose row it leaves empty (Grant.Pending).
	// The lease's row also says who waits at the instance (waiting, as
	// AllotStore.BeginAllotted). It ends the grant either way.
	Take(ctx context.Context, held map[int32]Allotment, take map[int32]int32, pending bool, waiting map[int32]Waiting) (Grant, error)
	// Waiting is who waits for the grant's goods at the other open
	// leases' instances, by what their batches wrote within fresh: of
	// each goods, the buyers summed and the earliest arrival.
	Waiting(ctx context.Context, fresh time.Duration) (map[int32]Waiting, error)
	// Abort ends the grant without its writes because of err, and returns
	// err as the store tells it.
	Abort(ctx context.Context, err error) error
}

// Grant is what a grant took (GrantSale.Take).
type Grant struct {
	Goods   map[int32]Goods // the goods' rows as the grant read them; a goods without one is missing
	Granted map[int32]int32 // what each goods gave the lease
	// Pending is, for a goods whose row ran out, what other leases hold
	// of it unsold: stock that may still come back.
	Pending map[int32]int32
	// Holders are the other leases that hold the pending goods: of each,
	// which goods (see AllotStore.WantBack).
	Holders map[int64][]int32
}
