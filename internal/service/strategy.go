package service

import (
	"fmt"
	"log/slog"
	"reflect"
)

// Strategy is an entry of the strategy registry (Strategies): a purchase
// strategy by the name purchase.strategy gives it, what it needs started
// before it is built, and its constructor. The Shop is built from one (New)
// and never asks its Purchaser what it can do.
//
// A strategy is one file of this package: its type, its constructor, the
// store interface it needs (as narrow as that) and its entry. Adding one is
// that file and a line in Strategies.
type Strategy struct {
	Name string
	// Summary is a line for purchase.strategy's documentation.
	Summary string
	Needs   Needs
	// ReadsRowsPerBatch: the strategy reads the row of every goods it
	// sells before it sells, once for all of the goods' buyers it is about
	// to serve, checks the sale window on that row and refreshes the Shop's
	// cache of it (batch: its claim of the batch's rows; allot: its grants
	// and its reads of the held goods' rows). The Shop then lets in a buyer
	// of a goods whose stale window admits without reading it: that read
	// would only repeat the strategy's. A goods whose window it has not read
	// is read first all the same (once per goods and instance): a made-up
	// goods number must hear 404 before the lock. A stale window that
	// refuses is read again before the buyer is refused. Not seed: it
	// sells one buyer per lock hold, so every buyer of a closed goods would
	// hold the lock to hear it.
	ReadsRowsPerBatch bool
	// BatchesAcrossGoods: under a lock that several goods share, one hold
	// sells the waiting buyers of all of them in one transaction (batch).
	// Such a strategy wants a shared lock path for a sale of many goods,
	// one without it a lock per goods; and on a cluster its transaction
	// goes to the writer node of the batch's lowest goods, not each goods'.
	BatchesAcrossGoods bool
	// New builds the strategy from d, in which what Needs names is set.
	New func(d Deps) (Purchaser, error)
}

// Needs is what a strategy needs started before it is built.
type Needs struct {
	Lock   bool // the ZooKeeper lock: Deps.Locker
	Leases bool // ZooKeeper nodes whose lives are leases': Deps.Leases
}

// Deps is what a strategy is built from.
type Deps struct {
	// Store is the shop's store; it must also be the strategy's own store
	// (SeedStore, BatchStore, AtomicStore, UnlockedStore, AllotStore).
	Store  Store
	Locker Locker     // when Needs.Lock
	Leases LeaseNodes // when Needs.Leases
	// A strategy's own settings, beside the ones every strategy shares
	// (Env.Config).
	Allot AllotConfig
	// Room is the waiting room (NewRoom); nil: none, a buyer past the
	// admission hears 503 busy.
	Room *Room
	Env
}

// Env is what every strategy is built with.
type Env struct {
	// Marks are the shop's sold-out marks: a strategy's queued buyers of
	// a goods leave the queue at its mark. Nil: none.
	Marks  *SoldOutMarks
	Config Config
	Log    *slog.Logger
	// windows is the Shop's cache of sale windows (New sets it): a
	// strategy that reads a goods' row tells it the window read. Nil:
	// none.
	windows *saleWindows
}

// Strategies is the registry: the strategies purchase.strategy names.
func Strategies() []Strategy {
	return []Strategy{seedStrategy, batchStrategy, atomicStrategy, allotStrategy}
}

// StrategyNamed is the registry's entry of name.
func StrategyNamed(name string) (Strategy, bool) {
	for _, s := range Strategies() {
		if s.Name == name {
			return s, true
		}
	}
	return Strategy{}, false
}

// UnlockedStrategy is the seed's purchase without its lock
// (lock.enabled=false): the switch that shows overselling, not a strategy
// to choose.
func UnlockedStrategy() Strategy { return unlockedStrategy }

// build is an entry's New for a strategy that sells through a store S:
// make builds it from d's store as an S, or New says the store is none.
func build[S any](make func(store S, d Deps) Purchaser) func(Deps) (Purchaser, error) {
	return func(d Deps) (Purchaser, error) {
		store, ok := d.Store.(S)
		if !ok {
			return nil, fmt.Errorf("service: the store (%T) is no %s", d.Store, reflect.TypeFor[S]())
		}
		return make(store, d), nil
	}
}

// withDefaults is e with Config's defaults and a log.
func (e Env) withDefaults() Env {
	e.Config.setDefaults()
	if e.Log == nil {
		e.Log = slog.New(slog.DiscardHandler)
	}
	return e
}
