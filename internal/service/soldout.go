package service

import (
	"context"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// SoldOutMarks remembers, per goods, that this instance saw it sold out, so
// that later buyers are answered at once instead of queueing for the lock
// to hear the same. During a sale the stock only goes down, so the answer
// stays right until a restock; a mark is trusted for `ttl`, after which the
// stock is read again, without the lock. That is how a restock reaches every
// instance: nobody needs to tell them, each finds out within ttl and a read.
type SoldOutMarks struct {
	ttl    time.Duration // <0: never mark
	probes singleflight.Group

	mu     sync.Mutex
	until  map[int32]time.Time     // at most maxMarks (see mark)
	queued map[int32]*queuedBuyers // per goods, the buyers waiting for its lock; gone with the last
}

// maxMarks bounds the goods an instance remembers as sold out: a sale of
// more goods forgets the expired marks first, then any. A forgotten mark
// costs the next buyer of its goods one trip to the lock, which marks it
// again.
const maxMarks = 4096

// queuedBuyers ends, when a goods is marked sold out, the context of the
// buyers that were waiting for its lock then.
type queuedBuyers struct {
	ctx     context.Context
	cancel  context.CancelFunc
	waiters int
}

// NewSoldOutMarks returns the marks of one instance, each trusted for ttl
// (0: DefaultSoldOutFor; negative: never marked). The Shop and the locking
// strategies share them: the Shop answers later buyers from them, and the
// buyers queued for a goods' lock leave the queue when it is marked. A nil
// *SoldOutMarks marks nothing.
func NewSoldOutMarks(ttl time.Duration) *SoldOutMarks {
	if ttl == 0 {
		ttl = DefaultSoldOutFor
	}
	return &SoldOutMarks{ttl: ttl, until: map[int32]time.Time{}}
}

// mark records that goodsNo was seen sold out now.
func (m *SoldOutMarks) mark(goodsNo int32) {
	if m == nil || m.ttl < 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if _, ok := m.until[goodsNo]; !ok && len(m.until) >= maxMarks {
		forgetOne(m.until, func(until time.Time) bool { return now.After(until) })
	}
	m.until[goodsNo] = now.Add(m.ttl)
	if q, ok := m.queued[goodsNo]; ok {
		q.cancel()
		delete(m.queued, goodsNo) // whoever queues from now on waits on a fresh one
	}
}

// forgetOne deletes an entry of m that stale says is stale, or else any.
func forgetOne[V any](m map[int32]V, stale func(V) bool) {
	var some int32
	for k, v := range m {
		if stale(v) {
			delete(m, k)
			return
		}
		some = k
	}
	delete(m, some)
}

// whileInStock returns a context that ends when goodsNo is next marked sold
// out: the buyers waiting for its lock then leave the queue at once,
// instead of each taking the lock in turn to hear "sold out" (with a
// thousand in the queue, seconds of hand-offs after the last piece). The
// buyer calls done when it no longer waits; the goods' entry goes with its
// last waiter. nil when m is nil.
func (m *SoldOutMarks) whileInStock(goodsNo int32) (ctx context.Context, done func()) {
	if m == nil {
		return nil, func() {}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	q, ok := m.queued[goodsNo]
	if !ok {
		ctx, cancel := context.WithCancel(context.Background())
		q = &queuedBuyers{ctx: ctx, cancel: cancel}
		if m.queued == nil {
			m.queued = map[int32]*queuedBuyers{}
		}
		m.queued[goodsNo] = q
	}
	q.waiters++
	return q.ctx, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if q.waiters--; q.waiters == 0 {
			q.cancel()
			if m.queued[goodsNo] == q {
				delete(m.queued, goodsNo)
			}
		}
	}
}

// remembered is how many goods m holds anything of (tests).
func (m *SoldOutMarks) remembered() (marks, queues int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.until), len(m.queued)
}

// state says whether goodsNo has a mark, and whether it has expired.
func (m *SoldOutMarks) state(goodsNo int32) (marked, expired bool) {
	if m == nil {
		return false, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	until, ok := m.until[goodsNo]
	return ok, ok && time.Now().After(until)
}

// seen reports whether goodsNo was seen sold out within ttl.
func (m *SoldOutMarks) seen(goodsNo int32) bool {
	marked, expired := m.state(goodsNo)
	return marked && !expired
}

// check reports whether goodsNo is sold out as far as this instance knows:
// marked within ttl or, when its mark has expired, still without stock by a
// read of the row without the lock. One such read per goods is in flight at
// a time, its answer shared by the buyers who come meanwhile; it renews the
// mark or, after a restock, removes it. Without it, every buyer in flight
// when a mark expires would queue for the lock to hear "sold out" again.
func (m *SoldOutMarks) check(ctx context.Context, store Store, goodsNo int32) bool {
	marked, expired := m.state(goodsNo)
	if !marked || !expired {
		return marked
	}
	ch := m.probes.DoChan(strconv.Itoa(int(goodsNo)), func() (any, error) {
		if marked, expired := m.state(goodsNo); !marked || !expired {
			return marked, nil // settled by a read that ended as this one began
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
		defer cancel()
		g, err := store.Goods(rctx, goodsNo)
		if err != nil {
			return false, err // the purchase will find out for itself
		}
		if g.Stock < 1 {
			m.mark(goodsNo)
			return true, nil
		}
		m.mu.Lock()
		delete(m.until, goodsNo)
		m.mu.Unlock()
		return false, nil
	})
	select {
	case r := <-ch:
		return r.Err == nil && r.Val.(bool)
	case <-ctx.Done():
		return false // the purchase answers for the ended request
	}
}
