package service

import (
	"context"
	"time"
)

// waiter is a buyer waiting for a batch: its request's context, its order,
// and where its answer goes.
type waiter struct {
	ctx   context.Context
	order *Order
	done  chan error // the answer; buffered
	// notBefore: the buyer waits for stock other instances hold (allot)
	// and is not taken before then; waitSince is since when it waits.
	notBefore, waitSince time.Time
}

func newWaiter(ctx context.Context, order *Order) *waiter {
	return &waiter{ctx: ctx, order: order, done: make(chan error, 1)}
}

// buyerQueue is the buyers waiting for a batch, in the order they came:
// what batch keeps per lock and allot per instance. Batches are taken from
// its head; a buyer who gave up, or whose goods is marked sold out, is
// answered when a batch would take it instead of being sold to. Its owner's
// mutex guards it.
type buyerQueue struct {
	marks   *SoldOutMarks // nil: none
	waiting []*waiter
}

func (q *buyerQueue) push(x *waiter) { q.waiting = append(q.waiting, x) }

// pushFront puts xs back at the head of the queue, in their order.
func (q *buyerQueue) pushFront(xs []*waiter) {
	if len(xs) > 0 {
		q.waiting = append(xs, q.waiting...)
	}
}

func (q *buyerQueue) len() int { return len(q.waiting) }

// byGoods is, per goods, the buyers in the queue: how many, and the
// earliest and the latest arrival among them.
func (q *buyerQueue) byGoods() map[int32]Waiting {
	out := map[int32]Waiting{}
	for _, x := range q.waiting {
		countWaiting(out, x.order)
	}
	return out
}

// countWaiting counts o's buyer in w, as one more of its goods.
func countWaiting(w map[int32]Waiting, o *Order) {
	q := w[o.GoodsNo]
	if q.N == 0 || o.Arrived.Before(q.First) {
		q.First = o.Arrived
	}
	if q.N == 0 || o.Arrived.After(q.Last) {
		q.Last = o.Arrived
	}
	q.N++
	w[o.GoodsNo] = q
}

// remove takes x out of the queue; false when no batch left it there.
func (q *buyerQueue) remove(x *waiter) bool {
	for i, y := range q.waiting {
		if y == x {
			q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
			return true
		}
	}
	return false
}

// settled is the answer of a waiting buyer who is not to be in a batch:
// its request ended while it waited, or its goods is marked sold out. nil:
// the buyer is to be sold to.
func (q *buyerQueue) settled(x *waiter) error {
	if err := x.ctx.Err(); err != nil {
		return err
	}
	if q.marks.seen(x.order.GoodsNo) {
		return ErrSoldOut
	}
	return nil
}

// head answers the buyers at the head who are settled and returns the
// first one left, nil when nobody is.
func (q *buyerQueue) head() *waiter {
	for len(q.waiting) > 0 {
		x := q.waiting[0]
		err := q.settled(x)
		if err == nil {
			return x
		}
		x.done <- err
		q.waiting[0] = nil
		q.waiting = q.waiting[1:]
	}
	return nil
}

// failFirst answers the first n buyers with err.
func (q *buyerQueue) failFirst(n int, err error) {
	n = min(n, len(q.waiting))
	for _, x := range q.waiting[:n] {
		x.done <- err
	}
	clear(q.waiting[:n])
	q.waiting = q.waiting[n:]
}

// failAll answers every buyer with err.
func (q *buyerQueue) failAll(err error) { q.failFirst(len(q.waiting), err) }

// take forms a batch of at most n buyers from the head, of those who may
// be taken at now and arrived no later than cut (zero: any), answering
// those it finds settled. A buyer under the
// one-per-buyer rule who is twice in the queue for one goods buys once per
// batch: the second stays for the next batch, which finds the first's
// order. The buyers not taken keep their order.
func (q *buyerQueue) take(n int, now, cut time.Time) []*waiter {
	var batch []*waiter
	kept := q.waiting[:0]
	buyers := onePerBuyer{}
	for _, x := range q.waiting {
		if len(batch) >= n || now.Before(x.notBefore) || after(x.order, cut) {
			kept = append(kept, x)
			continue
		}
		if err := q.settled(x); err != nil {
			x.done <- err
			continue
		}
		if !buyers.admit(x.order) {
			kept = append(kept, x)
			continue
		}
		batch = append(batch, x)
	}
	clear(q.waiting[len(kept):])
	q.waiting = kept
	return batch
}

// after reports whether o arrived after cut (zero: never).
func after(o *Order, cut time.Time) bool { return !cut.IsZero() && o.Arrived.After(cut) }

// takeIf takes, for a batch under way, at most n of the buyers whose
// orders accept takes, in their order, leaving the others where they were;
// those found settled are answered (as take does).
func (q *buyerQueue) takeIf(n int, accept func(*Order) bool) []*waiter {
	var late []*waiter
	kept := q.waiting[:0]
	for _, x := range q.waiting {
		if len(late) >= n {
			kept = append(kept, x)
			continue
		}
		if err := q.settled(x); err != nil {
			x.done <- err
			continue
		}
		if accept(x.order) {
			late = append(late, x)
		} else {
			kept = append(kept, x)
		}
	}
	clear(q.waiting[len(kept):])
	q.waiting = kept
	return late
}

// onePerBuyer keeps a batch to one order of a goods per buyer under the
// one-per-buyer rule: the second waits for the next batch, which finds the
// first's order.
type onePerBuyer map[struct {
	goodsNo int32
	userID  string
}]bool

// admit reports whether the order may join the batch, and counts it.
func (b onePerBuyer) admit(o *Order) bool {
	if o.UserID == "" || !o.OnePerBuyer {
		return true
	}
	k := struct {
		goodsNo int32
		userID  string
	}{o.GoodsNo, o.UserID}
	if b[k] {
		return false
	}
	b[k] = true
	return true
}
