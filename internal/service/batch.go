package service

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"
)

// Batch is a coalescing lock: buyers queue in memory by the lock their
// goods is under (a goods' own lock, or one that several goods share: see
// LockKeyer), and one worker per lock takes the ZooKeeper lock once for as
// many of them as are waiting (up to BatchMax), reads the stock of their
// goods once, and sells to them in one fenced transaction (one UPDATE of
// the stocks, one multi-row INSERT of their orders), then answers each: its
// order, or sold out. Buyers who come while its claim waits for the rows
// join it where the store can take them (takeLate); those who come later
// form the next batch.
// Instances alternate batches on the shared lock; the demo's sleep is
// slept once per batch. A worker exists while its lock has buyers waiting:
// the workers, queues and lock holds of a sale of many goods end with it.
//
// A request id used before, or twice in one batch, fails only its buyer
// (ErrDuplicateRequest), as does a buyer who holds an order of the goods
// under the one-per-buyer rule (AlreadyBoughtError) and a buyer of a goods
// that does not exist (ErrNotFound) or whose sale window is closed; a
// buyer twice in the queue for one goods is put in different batches. A
// buyer whose request ends before its batch writes is not sold to. A failed
// transaction answers every buyer in it with its error and sells nothing.
type Batch struct {
	store BatchStore
	locking
	soldOut *SoldOutMarks
	keyOf   func(goodsNo int32) string

	mu     sync.Mutex
	closed bool
	queues map[string]*batchQueue // by lock key
	wg     sync.WaitGroup         // the workers
}

type batchQueue struct {
	buyerQueue
	running bool // a worker serves this lock
}

// BatchStore is what the batch strategy needs of the store.
type BatchStore interface {
	// BeginBatch begins a batch's sale (see BatchStart), which RunBatch
	// runs. The transaction goes to the writer node of the batch's lowest
	// goods number: on a cluster named by its nodes, a batch of several
	// goods may write a goods through another node than its own, so the
	// shop hands the lock on after the commit there (see OneWriter).
	BeginBatch(ctx context.Context, start BatchStart) (BatchSale, error)
}

var batchStrategy = Strategy{
	Name:               "batch",
	Summary:            "one lock hold and one transaction per batch of buyers",
	Needs:              Needs{Lock: true},
	ReadsRowsPerBatch:  true,
	BatchesAcrossGoods: true,
	New:                build(func(s BatchStore, d Deps) Purchaser { return NewBatch(s, d.Locker, d.Env) }),
}

// NewBatch returns the batch strategy under locker (not nil). A batch
// queued for a goods' lock sells nothing once env.Marks marks the goods
// sold out (the Shop's marks). Close it after the last Purchase.
func NewBatch(store BatchStore, locker Locker, env Env) *Batch {
	env = env.withDefaults()
	keyOf := func(goodsNo int32) string { return strconv.FormatInt(int64(goodsNo), 10) }
	if k, ok := locker.(LockKeyer); ok {
		keyOf = k.LockKey
	}
	return &Batch{store: store, locking: newLocking(locker, env, store), soldOut: env.Marks, keyOf: keyOf, queues: map[string]*batchQueue{}}
}

// Purchase queues the buyer for its lock's next batch and waits for the
// answer. A buyer that gives up before a batch took it leaves the queue at
// once; one that gives up in a batch still waits for the batch, which is
// short, so that it is never sold to without being told.
func (b *Batch) Purchase(ctx context.Context, order *Order) error {
	buyer := newWaiter(ctx, order)
	key := b.keyOf(order.GoodsNo)
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return fmt.Errorf("%w: shutting down", ErrUnavailable)
	}
	q := b.queues[key]
	if q == nil {
		q = &batchQueue{buyerQueue: buyerQueue{marks: b.soldOut}}
		b.queues[key] = q
	}
	q.push(buyer)
	if !q.running {
		q.running = true
		b.wg.Add(1)
		go b.work(key, q)
	}
	b.mu.Unlock()
	select {
	case err := <-buyer.done:
		return err
	case <-ctx.Done():
	}
	if b.leave(key, buyer) {
		return ctx.Err()
	}
	return <-buyer.done // in a batch already: its answer is near
}

// leave takes a buyer whose request ended out of its lock's queue, if no
// batch has taken it yet: it is then answered at once instead of when the
// lock comes (a client that said how long it waits, X-Request-Timeout-Ms,
// hears so at its deadline). A buyer a batch took waits for the batch.
func (b *Batch) leave(key string, buyer *waiter) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	q := b.queues[key]
	return q != nil && q.remove(buyer)
}

// Close refuses new buyers and waits for the batches under way.
func (b *Batch) Close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.wg.Wait()
}

// work sells batches under the lock of key until nobody waits. It asks for
// the lock as soon as a buyer waits and forms the batch once it holds it,
// so the buyers who came while it waited are in it; and it asks for the
// next hold as soon as the batch has begun to let the lock go, during the
// batch's commit: the next holder's claim waits for that commit (see
// handOff), while this instance's next batch is already in the lock's
// queue instead of joining it only after the commit, the answers and the
// release. At most two batches of a lock are under way in an instance:
// one committing, one waiting for the lock or holding it.
//
// A batch that may sell a goods' last piece lets the next one ask for the
// lock only once it has answered: the goods is then marked sold out, and
// the buyers queued behind it are answered from the mark, without a lock.
func (b *Batch) work(key string, q *batchQueue) {
	defer b.wg.Done()
	ctx := context.Background() // a batch outlives any one buyer's request
	for {
		head, waiting, ok := b.head(key, q)
		if !ok {
			return
		}
		goodsNo := head.GoodsNo
		lease, err := b.lock(ctx, goodsNo, head.Arrived) // every goods of the queue is under this lock
		if err != nil {
			// The buyers who waited for this lock hear why; those who came
			// while it was asked for wait for the next ask.
			b.fail(q, waiting, err)
			continue
		}
		cut := b.cut(ctx, lease)
		batch := b.take(q, cut)
		if len(batch) == 0 { // every buyer gave up or was answered from a mark meanwhile
			b.unlock(ctx, lease, goodsNo)
			continue
		}
		next := make(chan struct{})
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			b.sell(ctx, q, batch, lease, cut, next)
		}()
		<-next
	}
}

// head answers the buyers at the head of q who gave up or whose goods is
// marked sold out, and returns the goods of the first buyer left and how
// many wait; false when nobody is left, and then the worker of key ends.
func (b *Batch) head(key string, q *batchQueue) (head *Order, waiting int, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if x := q.head(); x != nil {
		return x.order, q.len(), true
	}
	q.running = false
	delete(b.queues, key)
	return nil, 0, false
}

// fail answers the first n buyers of q with err.
func (b *Batch) fail(q *batchQueue, n int, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	q.failFirst(n, err)
}

// take forms a batch of the buyers waiting in q who arrived no later than
// cut (zero: any), at most BatchMax (see buyerQueue.take).
func (b *Batch) take(q *batchQueue, cut time.Time) []*waiter {
	b.mu.Lock()
	defer b.mu.Unlock()
	return q.take(b.cfg.BatchMax, time.Now(), cut)
}

// batchCutSlack is how long after the next participant's arrival a batch
// still takes buyers: a hand-off of the lock costs about a millisecond
// here, and a cut finer than a few would pass the lock back and forth for
// a buyer or two at a time while both instances' buyers come.
const batchCutSlack = 5 * time.Millisecond

// cut is the latest arrival a batch under lease may sell to: that of the
// earliest participant waiting behind it, and batchCutSlack; zero when the
// lock does not serve by arrival, nobody waits, or the listing failed (the
// batch then takes whoever waits, as before).
func (b *Batch) cut(ctx context.Context, lease Lease) time.Time {
	c, ok := lease.(ArrivalCutter)
	if !ok {
		return time.Time{}
	}
	lctx, cancel := context.WithTimeout(ctx, b.cfg.AcquireTimeout)
	defer cancel()
	next, ok, err := c.NextArrival(lctx)
	if err != nil || !ok {
		return time.Time{}
	}
	return next.Add(batchCutSlack)
}

// takeLate takes out of q, for a batch under way, at most n of the buyers
// waiting whose orders accept takes (see buyerQueue.takeIf). A buyer under
// the one-per-buyer rule is never one a store accepts (its INSERT could
// collide).
func (b *Batch) takeLate(q *batchQueue, accept func(*Order) bool, n int) []*waiter {
	b.mu.Lock()
	defer b.mu.Unlock()
	return q.takeIf(n, accept)
}

// sell sells one batch under lease and answers every buyer in it. It
// closes next when the next batch may ask for the lock: when the release of
// this one has begun, or, if this batch may sell a goods' last piece, when
// it has answered.
func (b *Batch) sell(ctx context.Context, q *batchQueue, batch []*waiter, lease Lease, cut time.Time, next chan<- struct{}) {
	var nextOnce sync.Once
	letNextGo := func() { nextOnce.Do(func() { close(next) }) }
	defer letNextGo()
	answerAll := func(err error) {
		for _, x := range batch {
			x.done <- err
		}
	}
	h := b.handOff(ctx, lease, batch[0].order.GoodsNo)
	defer h.done()
	sale, orders := newBatchSale(ctx, b.cfg, batch)
	sale.underLock(h.lost, b.windows)
	h.onRelease = func() {
		if !sale.lastPiece { // a goods may sell out: the next batch waits for the mark
			letNextGo()
		}
	}
	token, err := lease.Token(ctx)
	if err != nil {
		answerAll(fmt.Errorf("%w: no fencing token: %w", ErrLockLost, err))
		return
	}
	// Buyers who come once the rows are claimed join the batch, where
	// RunBatch takes them: the batch's answers below are theirs too.
	join := func(accept func(*Order) bool) []*Order {
		inTime := func(o *Order) bool { return !after(o, cut) && accept(o) }
		late := b.takeLate(q, inTime, b.cfg.BatchMax-len(batch))
		batch = append(batch, late...)
		return sale.take(late)
	}
	begin := func(ctx context.Context, goods []int32, first []*Order) (BatchSale, error) {
		return b.store.BeginBatch(ctx, BatchStart{Goods: goods, Fence: token, First: first})
	}
	since := time.Now() // before the claim reads the rows
	sctx, sold := b.selling(ctx)
	err = sold(RunBatch(sctx, BatchRun{Orders: orders, Begin: begin, Decide: sale.decide, Guard: h.guard, Join: join}))
	if err != nil {
		if errors.Is(err, ErrFenced) {
			b.log.Warn("batch fenced off: a newer lock holder wrote first", "goodsNo", batch[0].order.GoodsNo, "err", err)
		}
		answerAll(err)
		return
	}
	for goodsNo, n := range sale.left {
		if n <= 0 {
			b.soldOut.mark(goodsNo, since) // none left: the next buyers need not queue
		}
	}
	for _, x := range batch {
		sale.answer(x)
	}
}
