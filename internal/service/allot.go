package service

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// AllotStore is what the allot strategy needs of the store: leases, the
// stock granted to them, and sales from it (see repo/allot.go).
type AllotStore interface {
	OpenLease(ctx context.Context, node string) (int64, error)
	OpenLeases(ctx context.Context) (map[int64]string, error)
	LeaseState(ctx context.Context, lease int64) (held map[int32]Allotment, open bool, err error)
	// BeginGrant begins a grant of stock of goodsNos (sorted, distinct)
	// into the lease, the goods' rows read and locked (GrantSale).
	BeginGrant(ctx context.Context, lease int64, goodsNos []int32) (GrantSale, error)
	ReturnAllotted(ctx context.Context, lease int64, held map[int32]Allotment, back map[int32]int32) error
	CloseLease(ctx context.Context, lease int64) (putBack int64, closed bool, err error)
	// BeginAllotted begins a batch's sale (see RunBatch) of goodsNos from
	// what the lease holds (held, of goods): its Goods are the goods' rows
	// with the stock the lease holds unsold, and its writes are the
	// lease's row and the orders' rows, in one packet; the goods' rows are
	// not touched. Nothing is read before the writes. The lease's row
	// also says who waits in the instance's queue (waiting), for the other
	// leases' grants (GrantSale.Waiting).
	BeginAllotted(ctx context.Context, lease int64, held map[int32]Allotment, goods map[int32]Goods, goodsNos []int32,
		waiting map[int32]Waiting) (BatchSale, error)
	GoodsOf(ctx context.Context, goodsNos []int32) (map[int32]Goods, error)
	// WantBack asks other leases for goods they hold (Grant.Holders);
	// Wanted reads, and clears, what others asked the lease for.
	WantBack(ctx context.Context, want map[int64][]Ask) error
	Wanted(ctx context.Context, lease int64) ([]Ask, error)
}

// Ask is one lease's ask of another for a goods' stock: its earliest buyer
// of the goods who waits for it arrived at Arrived (zero: not said, an
// older shop's ask). The owner sells the goods then only to its buyers who
// arrived before that, and gives the rest back (see Allot.yield).
type Ask struct {
	GoodsNo int32
	Arrived time.Time
}

// LeaseNodes are the ZooKeeper nodes whose lives are the leases': one per
// lease, ephemeral, in the instance's session.
type LeaseNodes interface {
	// Create creates a node for a new lease; lost is closed when the
	// session that holds it ends.
	Create(ctx context.Context) (node string, lost <-chan struct{}, err error)
	Exists(ctx context.Context, node string) (bool, error)
	Delete(ctx context.Context, node string) error
}

// Allot timings and sizes.
const (
	allotIdle       = 100 * time.Millisecond // a goods' stock another lease asked for goes back once this long without buyers (any other after AllotConfig.Keep)
	allotRetry      = 20 * time.Millisecond  // a buyer of a goods whose stock other leases hold tries again after this
	allotReapEvery  = time.Second            // how often the open leases are checked for a dead owner
	allotOpTimeout  = 10 * time.Second       // a lease operation without a buyer's deadline
	allotGrantShare = 8                      // a grant takes what a batch needs, or an eighth of the goods' row if more,
	allotGrantMax   = 1024                   // up to this much
)

// Allot sells from stock allotted to the instance. The instance opens a
// lease (a row of the store named by an ephemeral ZooKeeper node of its
// session), takes stock of a goods into it when its buyers need some (a
// grant: one transaction on the goods' rows, a batch's goods at once, of
// each what the batch needs or, if more, an eighth of the row: grantSize),
// and sells to its buyers in batches from what it holds: one transaction per batch that writes the lease's row and
// the orders, and touches no goods row and no lock. One batch is in flight
// at a time: the buyers who come meanwhile form the next. A goods is sold
// out when its row has no stock and no lease holds any unsold; while
// another lease holds some, its buyers wait for it to come back, and their
// instance asks that lease for it (WantBack). Stock held unsold goes back
// to the goods' row once no buyer of the instance asked for it in allotIdle
// if another lease asked for it, in AllotConfig.Keep if not.
//
// The lease lives as long as the instance's ZooKeeper session: once its
// node is gone, any instance closes the lease and puts back what it held
// unsold, under the lease row's lock, so that a batch the owner committed
// before is counted and one after writes nothing (ErrFenced).
type Allot struct {
	store   AllotStore
	nodes   LeaseNodes
	soldOut *SoldOutMarks
	cfg     Config
	keep    time.Duration // AllotConfig.Keep
	log     *slog.Logger

	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	windows *saleWindows // the Shop's (see Env); nil: none
	asking  atomic.Bool  // an ask (see ask) is on its way
	asks    sync.WaitGroup

	mu      sync.Mutex
	closed  bool
	waiting buyerQueue

	// The worker's own.
	lease  int64
	node   string
	lost   <-chan struct{}
	held   map[int32]Allotment
	goods  map[int32]Goods
	used   map[int32]time.Time
	wanted map[int32]time.Time // when another lease last asked for the goods
	// waitsSince is, per goods, the earliest arrival another lease said
	// its buyers wait since, and when it said so (see yield).
	waitsSince map[int32]askedAt
	yielded    map[int32]time.Time // when a batch last left buyers to another lease's earlier ones
	lastReap   time.Time
	lastRead   time.Time // of the held goods' windows
	lastAsks   time.Time // of the lease's wanted list
	// lastHousekeep is the last housekeep.
	lastHousekeep time.Time
}

// AllotConfig is the allot strategy's own settings (Deps.Allot).
type AllotConfig struct {
	// Keep is how long an instance keeps unsold stock of a goods none of
	// its buyers asked for lately, unless another instance asks for it.
	// Default DefaultAllotKeep.
	Keep time.Duration
}

// DefaultAllotKeep is AllotConfig.Keep's default.
const DefaultAllotKeep = time.Second

var allotStrategy = Strategy{
	Name:              "allot",
	Summary:           "each instance sells in batches from stock allotted to its lease: no lock per batch",
	Needs:             Needs{Leases: true},
	ReadsRowsPerBatch: true,
	New:               build(func(s AllotStore, d Deps) Purchaser { return NewAllot(s, d.Leases, d.Allot, d.Env) }),
}

// NewAllot returns the allot strategy and starts its worker. Close it
// after the last Purchase.
func NewAllot(store AllotStore, nodes LeaseNodes, cfg AllotConfig, env Env) *Allot {
	env = env.withDefaults()
	if cfg.Keep <= 0 {
		cfg.Keep = DefaultAllotKeep
	}
	a := &Allot{store: store, nodes: nodes, soldOut: env.Marks, cfg: env.Config, keep: cfg.Keep, log: env.Log, windows: env.windows,
		waiting: buyerQueue{marks: env.Marks},
		wake:    make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
		held: map[int32]Allotment{}, goods: map[int32]Goods{}, used: map[int32]time.Time{}, wanted: map[int32]time.Time{},
		waitsSince: map[int32]askedAt{}, yielded: map[int32]time.Time{}}
	go a.run()
	return a
}

// Purchase queues the buyer for the next batch and waits for the answer.
func (a *Allot) Purchase(ctx context.Context, order *Order) error {
	x := newWaiter(ctx, order)
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return fmt.Errorf("%w: shutting down", ErrUnavailable)
	}
	a.waiting.push(x)
	a.mu.Unlock()
	a.signal()
	return <-x.done
}

func (a *Allot) signal() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Close refuses new buyers, sells to those queued, puts back the stock the
// lease holds and closes it.
func (a *Allot) Close() {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		<-a.done
		return
	}
	a.closed = true
	a.mu.Unlock()
	close(a.stop)
	<-a.done
	a.asks.Wait()
}

func (a *Allot) run() {
	defer close(a.done)
	timer := time.NewTimer(allotRetry)
	defer timer.Stop()
	for {
		stopping := false
		select {
		case <-a.stop:
			stopping = true
		case <-a.wake:
		case <-timer.C:
		}
		for {
			batch := a.take(time.Now())
			if len(batch) == 0 {
				break
			}
			a.sell(batch)
			a.housekeep(time.Now()) // also while buyers keep coming
		}
		if stopping {
			a.mu.Lock()
			a.waiting.failAll(fmt.Errorf("%w: shutting down", ErrUnavailable)) // waiting for stock other leases hold
			a.mu.Unlock()
			a.closeLease()
			return
		}
		a.housekeep(time.Now())
		timer.Reset(a.idleFor())
	}
}

// idleFor is how long the worker may sleep when no buyer comes: allotRetry
// while buyers wait for stock other leases hold or the lease holds some (its
// housekeeping is due in steps of it), else until the next reap. An idle
// instance woke every allotRetry for nothing: 6-8 ms of CPU a second.
func (a *Allot) idleFor() time.Duration {
	a.mu.Lock()
	waiting := a.waiting.len() > 0
	a.mu.Unlock()
	if waiting || len(a.held) > 0 || len(a.goods) > 0 {
		return allotRetry
	}
	return max(allotRetry, allotReapEvery-time.Since(a.lastReap))
}

// housekeep, at most every allotRetry: gives back the stock nobody asked
// for lately, reads the held goods' windows again, and closes the leases of
// dead owners, each when it is due.
func (a *Allot) housekeep(now time.Time) {
	if now.Sub(a.lastHousekeep) < allotRetry {
		return
	}
	a.lastHousekeep = now
	a.readWanted(now)
	a.returnIdle(now)
	a.readWindows(now)
	a.reap(now)
}

// take forms a batch of the buyers who may be sold to now, at most
// BatchMax (see buyerQueue.take).
func (a *Allot) take(now time.Time) []*waiter {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.waiting.take(a.cfg.BatchMax, now, time.Time{})
}

// requeue puts buyers who wait for stock other leases hold back at the
// head of the queue, to be tried again at after; one who waited
// AcquireTimeout hears so (503: the stock may still come back).
func (a *Allot) requeue(xs []*waiter, now, after time.Time) {
	var back []*waiter
	for _, x := range xs {
		if x.waitSince.IsZero() {
			x.waitSince = now
		}
		if now.Sub(x.waitSince) >= a.cfg.AcquireTimeout {
			x.done <- fmt.Errorf("%w: for %v: another instance holds the goods' stock", ErrLockTimeout, a.cfg.AcquireTimeout)
			continue
		}
		x.notBefore = after
		back = append(back, x)
	}
	if len(back) == 0 {
		return
	}
	a.mu.Lock()
	a.waiting.pushFront(back)
	a.mu.Unlock()
}

func (a *Allot) opContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), allotOpTimeout)
}

func (a *Allot) left(goodsNo int32) int32 {
	h := a.held[goodsNo]
	return h.Granted - h.Sold
}

// sell sells one batch and answers every buyer in it, or puts back in the
// queue those who wait for stock other leases hold.
func (a *Allot) sell(batch []*waiter) {
	since := time.Now() // before anything of the batch is read
	ctx, cancel := a.opContext()
	defer cancel()
	answer := func(xs []*waiter, err error) {
		for _, x := range xs {
			x.done <- err
		}
	}
	if err := a.ensureLease(ctx); err != nil {
		answer(batch, err)
		return
	}
	batch = a.yield(batch, time.Now())
	if len(batch) == 0 {
		return
	}
	need := map[int32]int32{}
	for _, x := range batch {
		need[x.order.GoodsNo]++
	}
	want := map[int32]int32{}
	for no, n := range need {
		if short := n - a.left(no); short > 0 {
			want[no] = short
		}
	}
	pending := map[int32]bool{}
	var out []int32
	if len(want) > 0 {
		now := a.cfg.Clock.Now()
		g, kept, err := a.grant(ctx, want, batch, now)
		if err != nil {
			a.failed(ctx, err)
			answer(batch, err)
			return
		}
		if len(g.Holders) > 0 {
			a.ask(g.Holders, earliest(batch))
		}
		for no := range want {
			goods, ok := g.Goods[no]
			if !ok {
				delete(a.goods, no)
				continue
			}
			a.goods[no] = goods
			a.windows.observe(goods, time.Now())
			if n := g.Granted[no]; n > 0 {
				h := a.held[no]
				h.Granted += n
				a.held[no] = h
			}
			switch {
			case goods.Stock-g.Granted[no] > 0:
				pending[no] = kept[no] // kept back for other leases' earlier buyers
			case g.Pending[no] > 0 && goods.OpenAt(a.cfg.Clock.Now()) == nil: // a closed window refuses at once
				pending[no] = true
			case a.left(no) < need[no]:
				out = append(out, no) // the row and every lease are out: marked if this batch takes the rest
			}
		}
	}
	// Buyers of a goods this lease cannot serve now but other leases may:
	// they wait for that stock to come back, or be sold; the earliest
	// arrivals are served first.
	slices.SortStableFunc(batch, func(x, y *waiter) int { return x.order.Arrived.Compare(y.order.Arrived) })
	var sell, wait []*waiter
	room := map[int32]int32{}
	for _, x := range batch {
		no := x.order.GoodsNo
		if pending[no] && room[no] >= a.left(no) {
			wait = append(wait, x)
			continue
		}
		room[no]++
		sell = append(sell, x)
	}
	now := time.Now()
	a.requeue(wait, now, now.Add(allotRetry))
	if len(sell) == 0 {
		return
	}
	// The goods' windows are as the grant or readWindows read them: not
	// observed into the Shop's cache as fresh.
	sale, orders := newBatchSale(ctx, a.cfg, sell)
	waiting := a.queued()
	begin := func(ctx context.Context, goodsNos []int32, _ []*Order) (BatchSale, error) {
		return a.store.BeginAllotted(ctx, a.lease, a.held, a.goods, goodsNos, waiting)
	}
	err := RunBatch(ctx, BatchRun{Orders: orders, Begin: begin, Decide: sale.decide})
	if err != nil {
		a.failed(ctx, err)
		answer(sell, err)
		return
	}
	now = time.Now()
	for no, n := range sale.sold() {
		h := a.held[no]
		h.Sold += n
		if h.Granted == h.Sold {
			delete(a.held, no)
		} else {
			a.held[no] = h
		}
		a.used[no] = now
	}
	for _, no := range out {
		if a.left(no) <= 0 {
			a.soldOut.mark(no, since) // none left anywhere: the next buyers need not queue
		}
	}
	for _, x := range sell {
		sale.answer(x)
	}
}

// readWindows reads, every half WindowFor, the rows of the goods the lease
// holds, in one query: their sale windows (and isActive), which the
// batches check, stay at most that old without a read per goods, and the
// Shop's cache of them fresh. (A batch reads no goods row: a window that
// closes shows within WindowFor, as it does in the Shop's check.)
func (a *Allot) readWindows(now time.Time) {
	if len(a.goods) == 0 || now.Sub(a.lastRead) < a.cfg.WindowFor/2 {
		return
	}
	a.lastRead = now
	goodsNos := make([]int32, 0, len(a.goods))
	for no := range a.goods {
		goodsNos = append(goodsNos, no)
	}
	ctx, cancel := a.opContext()
	defer cancel()
	rows, err := a.store.GoodsOf(ctx, goodsNos)
	if err != nil {
		a.log.Warn("allot: the held goods' rows not read", "err", err)
		return
	}
	for _, no := range goodsNos {
		g, ok := rows[no]
		if !ok {
			continue
		}
		a.goods[no] = g
		a.windows.observe(g, now)
	}
}
