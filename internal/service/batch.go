package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Batch is a coalescing lock: the buyers of one goods queue in memory, and
// one worker per goods takes the ZooKeeper lock once for as many of them as
// are waiting (up to BatchMax), reads the stock once, and sells to them in
// one fenced transaction (one UPDATE of the stock, one multi-row INSERT of
// their orders), then answers each: its order, or sold out. Buyers who come
// meanwhile form the next batch. Instances alternate batches on the shared
// lock; the demo's sleep is slept once per batch.
//
// A request id used before, or twice in one batch, fails only its buyer
// (ErrDuplicateRequest), as does a buyer who holds an order of the goods
// under the one-per-buyer rule (AlreadyBoughtError); a buyer twice in the
// queue is put in different batches. A buyer whose request ends before its batch writes
// is not sold to. A failed transaction answers every buyer in it with its
// error and sells nothing.
type Batch struct {
	store Store
	locking
	soldOut *SoldOutMarks

	mu     sync.Mutex
	closed bool
	queues map[int32]*batchQueue
	wg     sync.WaitGroup // the workers
}

type batchQueue struct {
	waiting []*batchBuyer
	running bool // a worker serves this goods
}

type batchBuyer struct {
	ctx   context.Context
	order *Order
	done  chan error // the answer; buffered
}

// NewBatch returns the batch strategy. A batch queued for a goods' lock
// sells nothing once marks marks the goods sold out (the Shop's marks).
// Close it after the last Purchase.
func NewBatch(store Store, locker Locker, marks *SoldOutMarks, cfg Config, log *slog.Logger) *Batch {
	if locker == nil {
		panic("service: NewBatch needs a Locker")
	}
	cfg.setDefaults()
	return &Batch{store: store, locking: locking{locker: locker, cfg: cfg, log: log}, soldOut: marks, queues: map[int32]*batchQueue{}}
}

// Purchase queues the buyer for its goods' next batch and waits for the
// answer. A buyer that gives up still waits for its batch, which is short,
// so that it is never sold to without being told.
func (b *Batch) Purchase(ctx context.Context, order *Order) error {
	buyer := &batchBuyer{ctx: ctx, order: order, done: make(chan error, 1)}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return fmt.Errorf("%w: shutting down", ErrUnavailable)
	}
	q := b.queues[order.GoodsNo]
	if q == nil {
		q = &batchQueue{}
		b.queues[order.GoodsNo] = q
	}
	q.waiting = append(q.waiting, buyer)
	if !q.running {
		q.running = true
		b.wg.Add(1)
		go b.work(order.GoodsNo, q)
	}
	b.mu.Unlock()
	return <-buyer.done
}

// Close refuses new buyers and waits for the batches under way.
func (b *Batch) Close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.wg.Wait()
}

// work sells batches of goodsNo until nobody waits.
func (b *Batch) work(goodsNo int32, q *batchQueue) {
	defer b.wg.Done()
	for {
		b.mu.Lock()
		var batch, later []*batchBuyer
		buyers := map[string]bool{}
		for len(q.waiting) > 0 && len(batch) < b.cfg.BatchMax {
			x := q.waiting[0]
			q.waiting[0] = nil
			q.waiting = q.waiting[1:]
			if err := x.ctx.Err(); err != nil {
				x.done <- err // gave up while waiting
				continue
			}
			if u := x.order.UserID; u != "" && x.order.OnePerBuyer {
				if buyers[u] {
					// One buyer twice in a batch buys once: the second waits
					// for the next batch, which finds the first's order.
					later = append(later, x)
					continue
				}
				buyers[u] = true
			}
			batch = append(batch, x)
		}
		q.waiting = append(later, q.waiting...)
		if len(batch) == 0 {
			q.running = false
			delete(b.queues, goodsNo)
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		b.sell(goodsNo, batch)
	}
}

// sell sells one batch and answers every buyer in it.
func (b *Batch) sell(goodsNo int32, batch []*batchBuyer) {
	answerAll := func(err error) {
		for _, x := range batch {
			x.done <- err
		}
	}
	if b.soldOut.seen(goodsNo) {
		answerAll(ErrSoldOut)
		return
	}
	// The batch outlives any one buyer's request: it works on its own.
	ctx := context.Background()
	lease, err := b.lock(ctx, goodsNo)
	if err != nil {
		answerAll(err)
		return
	}
	h := b.handOff(ctx, lease, goodsNo)
	defer h.done()
	lost := h.lost
	token, err := lease.Token(ctx)
	if err != nil {
		answerAll(fmt.Errorf("%w: no fencing token: %w", ErrLockLost, err))
		return
	}
	orders := make([]*Order, len(batch))
	buyerOf := make(map[*Order]*batchBuyer, len(batch))
	for i, x := range batch {
		orders[i] = x.order
		buyerOf[x.order] = x
	}
	sold := map[*Order]bool{}
	var left int32
	choose := func(g Goods, candidates []*Order) ([]*Order, error) {
		clear(sold)
		if err := b.cfg.pause(ctx, lost); err != nil {
			return nil, err
		}
		if err := g.OpenAt(time.Now()); err != nil {
			return nil, err // nobody in the batch is sold to
		}
		var chosen []*Order
		for _, o := range candidates {
			if len(chosen) >= int(max(g.Stock, 0)) {
				break
			}
			if buyerOf[o].ctx.Err() != nil {
				continue // gave up: not sold to
			}
			chosen = append(chosen, o)
			sold[o] = true
		}
		left = g.Stock - int32(len(chosen))
		return chosen, nil
	}
	refused, err := b.store.SellBatch(ctx, goodsNo, token, orders, choose, h.guard)
	if err != nil {
		if errors.Is(err, ErrFenced) {
			b.log.Warn("batch fenced off: a newer lock holder wrote first", "goodsNo", goodsNo, "err", err)
		}
		answerAll(err)
		return
	}
	if left <= 0 {
		b.soldOut.mark(goodsNo) // none left: the next buyers need not queue
	}
	for _, x := range batch {
		switch {
		case sold[x.order]:
			x.done <- nil
		case refused[x.order] != nil:
			x.done <- refused[x.order]
		case x.ctx.Err() != nil:
			x.done <- x.ctx.Err()
		default:
			x.done <- ErrSoldOut
		}
	}
}
