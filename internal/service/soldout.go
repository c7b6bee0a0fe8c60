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
// to hear the same. During a sale the stock only goes down, except when an
// unpaid order expires and its piece goes back (orders.payTimeout): a mark
// is trusted for `ttl`, and never past the moment the first piece could
// come back (the expiry horizon, below), after which the stock is read
// again, without the lock. That is how a restock reaches every instance:
// nobody needs to tell them, each finds out within ttl and a read.
//
// The expiry horizon: a piece comes back only when an order unpaid at the
// mark's observation expires, at the earliest payTimeout after the oldest
// of them was placed. The marks read the oldest unpaid order of any goods
// (one index lookup) now and then; a reading made before the observation
// is a safe bound, since the oldest unpaid order only gets younger. A
// sold_out answered from a mark is then one the buyer could have heard
// from the database at that moment: the history checker's model
// (tests/framework/history) holds the shop to that.
type SoldOutMarks struct {
	ttl    time.Duration // <0: never mark
	probes singleflight.Group

	mu     sync.Mutex
	until  map[int32]time.Time    // at most maxMarks (see mark)
	queued map[int32]queuedBuyers // per goods, the buyers waiting for its lock; gone with the last

	expiry   expiryHorizon
	horizons singleflight.Group
	renewing map[int32]bool // the goods whose mark a read renews ahead of its end (stateRenewing)
}

// expiryHorizon is what the marks know of when a piece may come back.
type expiryHorizon struct {
	payTimeout   time.Duration                                                    // 0: orders never expire, the horizon is infinite
	oldestUnpaid func(ctx context.Context) (placed time.Time, ok bool, err error) // the oldest unpaid order's placing time, of any goods
	readings     []horizonReading                                                 // the latest few, oldest first
	clock        *Clock                                                           // the clock an order's placing time is on (nil: this machine's)
}

// horizonReading is one reading of the expiry horizon: no piece comes back
// before at, as read by a query that began at start.
type horizonReading struct {
	start, at time.Time
}

// ClockSkew is how far apart the instances' clocks may be: an order's
// placing time is its buying instance's Clock, its expiry the sweeper's.
// Those follow the database's, each within its measurement's error; a mark
// ends this much before the expiry horizon.
const ClockSkew = time.Second

// horizonEvery is how often a busy instance reads the expiry horizon.
const horizonEvery = 250 * time.Millisecond

// maxMarks bounds the goods an instance remembers as sold out: a sale of
// more goods forgets the expired marks first, then any. A forgotten mark
// costs the next buyer of its goods one trip to the lock, which marks it
// again.
const maxMarks = 4096

// queuedBuyers are the buyers waiting for a goods' lock, each with the
// time it began to wait: a mark tells those who waited across the
// observation (see mark).
type queuedBuyers map[*queuedBuyer]struct{}

type queuedBuyer struct {
	since  time.Time
	cancel context.CancelFunc
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
	return &SoldOutMarks{ttl: ttl, until: map[int32]time.Time{}, renewing: map[int32]bool{}}
}

// Following tells the marks the Clock orders are placed by (the shop's
// follows the database's); call it before Expiring. Without it the
// placing times are taken as this machine's.
func (m *SoldOutMarks) Following(c *Clock) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.expiry.clock = c
	m.mu.Unlock()
}

// Expiring tells the marks that orders expire payTimeout after they are
// placed (0: never), and how to read the oldest unpaid order's placing
// time. Call it before the sale starts.
func (m *SoldOutMarks) Expiring(payTimeout time.Duration, oldestUnpaid func(ctx context.Context) (time.Time, bool, error)) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.expiry = expiryHorizon{payTimeout: payTimeout, oldestUnpaid: oldestUnpaid, clock: m.expiry.clock}
	m.mu.Unlock()
	if payTimeout > 0 && oldestUnpaid != nil {
		// A first reading now: the first goods to sell out is then marked
		// at once, instead of its next buyers queueing for the lock while
		// a reading made after the observation (no bound for it) comes.
		go m.readHorizon()
	}
}

// mark records that goodsNo was seen sold out by a read that began after
// since. The buyers queued for its lock since before then are told at
// once: they waited across the observation, sold out is their answer.
// Later buyers, those who queued since and those who come, are answered
// from the mark until ttl or the expiry horizon, and not at all when the
// horizon has passed: the read may have come back late (a packet lost on
// the way), after a piece came back and they came. The history checker
// caught that: a buyer told sold out 50 ms after a read of the stock
// showed 3, the read that told it having begun 200 ms before.
func (m *SoldOutMarks) mark(goodsNo int32, since time.Time) {
	if m == nil || m.ttl < 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	until, trusted := m.untilLocked(goodsNo, since)
	for b := range m.queued[goodsNo] {
		if trusted || !b.since.After(since) {
			b.cancel()
			delete(m.queued[goodsNo], b)
		}
	}
	if !trusted {
		return
	}
	now := time.Now()
	if _, ok := m.until[goodsNo]; !ok && len(m.until) >= maxMarks {
		forgetOne(m.until, func(until time.Time) bool { return now.After(until) })
	}
	m.until[goodsNo] = until
}

// untilLocked is how long an observation of goodsNo sold out by a read
// that began after since may be trusted: ttl, and not past the expiry
// horizon; trusted is false when that is not after now (goodsNo's mark is
// then deleted: a piece may be back by now) or no horizon is known.
func (m *SoldOutMarks) untilLocked(goodsNo int32, since time.Time) (until time.Time, trusted bool) {
	now := time.Now()
	until = now.Add(m.ttl)
	h, ok := m.horizonLocked(since)
	if !ok {
		return time.Time{}, false
	}
	if h.Before(until) {
		until = h
	}
	if !until.After(now) {
		delete(m.until, goodsNo)
		return time.Time{}, false
	}
	return until, true
}

// horizonLocked is the expiry horizon of the newest reading that began
// before since, less ClockSkew; ok is false when there is none (the marks
// then trust no observation). m.mu is held.
func (m *SoldOutMarks) horizonLocked(since time.Time) (time.Time, bool) {
	if m.expiry.payTimeout <= 0 || m.expiry.oldestUnpaid == nil {
		return time.Now().Add(m.ttl), true // nothing comes back
	}
	rs := m.expiry.readings
	if len(rs) == 0 || time.Since(rs[len(rs)-1].start) > horizonEvery {
		go m.readHorizon()
	}
	for i := len(rs) - 1; i >= 0; i-- {
		if !rs[i].start.After(since) {
			return rs[i].at.Add(-ClockSkew), true
		}
	}
	return time.Time{}, false
}

// readHorizon reads the expiry horizon once (one reading at a time).
func (m *SoldOutMarks) readHorizon() {
	_, _, _ = m.horizons.Do("", func() (any, error) {
		m.mu.Lock()
		e := m.expiry
		m.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
		defer cancel()
		start := time.Now()
		placed, ok, err := e.oldestUnpaid(ctx)
		if err != nil {
			return nil, err
		}
		if ok {
			offset, _ := e.clock.Offset()
			placed = placed.Add(-offset) // on this machine's clock, as the marks are
		} else {
			placed = start // every unpaid order is placed after the read began
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		r := horizonReading{start: start, at: placed.Add(e.payTimeout)}
		m.expiry.readings = append(m.expiry.readings, r)
		if n := len(m.expiry.readings); n > 8 {
			m.expiry.readings = append([]horizonReading(nil), m.expiry.readings[n-8:]...)
		}
		return nil, nil
	})
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
// out by a read that began after now: the buyers waiting for its lock then
// leave the queue at once, instead of each taking the lock in turn to hear
// "sold out" (with a thousand in the queue, seconds of hand-offs after the
// last piece). The buyer calls done when it no longer waits; the goods'
// entry goes with its last waiter. nil when m is nil.
func (m *SoldOutMarks) whileInStock(goodsNo int32) (ctx context.Context, done func()) {
	if m == nil {
		return nil, func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &queuedBuyer{since: time.Now(), cancel: cancel}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.queued == nil {
		m.queued = map[int32]queuedBuyers{}
	}
	if m.queued[goodsNo] == nil {
		m.queued[goodsNo] = queuedBuyers{}
	}
	m.queued[goodsNo][b] = struct{}{}
	return ctx, func() {
		cancel()
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.queued[goodsNo], b)
		if len(m.queued[goodsNo]) == 0 {
			delete(m.queued, goodsNo)
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
// marked and the mark still trusted or, when its mark has ended, still
// without stock by a read of the row without the lock. One such read per
// goods is in flight at a time, its answer shared by the buyers who came
// before it began (a read that began before a buyer came may have missed a
// piece that came back meanwhile: that buyer waits for the next); it
// renews the mark or, after a restock, removes it. Without it, every buyer
// in flight when a mark ends would queue for the lock to hear "sold out"
// again.
func (m *SoldOutMarks) check(ctx context.Context, store Store, goodsNo int32) bool {
	called := time.Now()
	for range 2 { // the read in flight, if it began too early, then one of its own
		marked, expired := m.stateRenewing(store, goodsNo)
		if !marked || !expired {
			return marked
		}
		soldOut, began, ok := m.probe(ctx, store, goodsNo)
		if !ok {
			return false // the purchase answers for the ended request, or finds out for itself
		}
		if !began.Before(called) {
			return soldOut
		}
	}
	return false // the purchase finds out for itself
}

// stateRenewing is state and, under the same lock, for a mark still
// trusted with less than half of it left and no renewal running, starts
// the read that renews it (probe) in the background: the buyers who come
// when it ends find it renewed, instead of all waiting for the read. That read opened a connection to MariaDB when it came: make
// bench-shop (k), allot with a busy loop on the shops' CPU, measured 520-540
// ms of a 560 ms read getting the connection, and the buyers who came as
// the mark ended heard sold_out 1.1-1.8 s late. A renewed mark says what an
// ended one followed by its read says: sold out as of the read's start.
func (m *SoldOutMarks) stateRenewing(store Store, goodsNo int32) (marked, expired bool) {
	if m == nil {
		return false, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	until, ok := m.until[goodsNo]
	left := time.Until(until)
	if !ok || left < 0 || m.renewing[goodsNo] || left > m.ttl/2 {
		return ok, ok && left < 0
	}
	m.renewing[goodsNo] = true
	go func() {
		m.probe(context.Background(), store, goodsNo)
		m.mu.Lock()
		delete(m.renewing, goodsNo)
		m.mu.Unlock()
	}()
	return true, false
}

// probeResult is a probe's answer: sold out or not, by a read that began
// at began.
type probeResult struct {
	soldOut bool
	began   time.Time
}

// probe joins or starts the read of goodsNo's stock; ok is false when it
// failed or ctx ended first.
func (m *SoldOutMarks) probe(ctx context.Context, store Store, goodsNo int32) (soldOut bool, began time.Time, ok bool) {
	ch := m.probes.DoChan(strconv.Itoa(int(goodsNo)), func() (any, error) {
		start := time.Now()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
		defer cancel()
		g, err := store.Goods(rctx, goodsNo)
		if err != nil {
			return nil, err // the purchase will find out for itself
		}
		if g.Stock < 1 {
			m.mark(goodsNo, start)
			return probeResult{true, start}, nil
		}
		m.mu.Lock()
		delete(m.until, goodsNo)
		m.mu.Unlock()
		return probeResult{false, start}, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return false, time.Time{}, false
		}
		res := r.Val.(probeResult)
		return res.soldOut, res.began, true
	case <-ctx.Done():
		return false, time.Time{}, false
	}
}
