package service

import (
	"container/heap"
	"context"
	"time"
)

// The door: buyers who found the admission full and whose turn is due
// within the room's hold (or has come: their place at or before the
// horizon) wait in their request for a place there, the earliest place
// first: each purchase that ends hands its place to the earliest waiter
// (Room.freed). Waiting costs a goroutine, not a request sent again and
// answered: past capacity most of the sale's buyers are at the door, and
// sent away to come back they would leave the shop idle while they are
// away, or take the CPU the sale needs to answer them again.
//
// What it keeps, at each instance: no buyer goes into the admission while
// an earlier place of the same goods waits at the door, and a buyer whose
// turn comes within the hold is not sent away. What it does not: the
// order across instances is each door's own, so a slower instance's
// buyers may be sold to after a faster one's later arrivals; the sold-out
// forecast counts this instance's places alone, so that such an instance
// never refuses its early arrivals on an estimate of the others'.

// enter decides whether buyer who (with the place token it sent, if any)
// of goodsNo goes into the admission now: admit takes a place there, and
// true means the buyer went in (the caller gives the place back). Else the
// answer is a QueuedError, or a SoldOutAheadError for a place beyond what
// is left, or ErrSoldOut when inStock ends (the goods was marked sold out)
// while the buyer waited. startsAt is the goods' sale start when it is
// ahead; now is the buyer's arrival.
//
// A buyer who cannot go in at once waits at the door (turn.go), the
// earliest place first, in its own request, when its turn is due within
// holdFor (the room's hold, within the request's deadline): its place's
// buyers ahead at this door, and of its places sent away, at the rate this
// instance serves. Only a buyer whose turn is further off is sent away to
// come back. So the instance never idles while a place waits at its door,
// and a client that comes back a whole second later (Retry-After) loses
// nothing to the return.
func (r *Room) enter(ctx context.Context, goodsNo int32, who, client, token string, startsAt *time.Time, now time.Time, inStock <-chan struct{}, admit func() bool) (bool, error) {
	hold := holdFor(ctx, r.cfg.Hold, time.Now())
	select {
	case <-r.draining:
		hold = 0
	default:
	}
	r.mu.Lock()
	in, turn, err := r.decideLocked(goodsNo, who, client, token, startsAt, now, hold, admit)
	r.mu.Unlock()
	if turn == nil {
		return in, err
	}
	switch r.awaitTurn(ctx, goodsNo, turn.eff, max(hold, turn.wait), inStock, admit) {
	case turnIn:
		return true, nil
	case turnSoldOut:
		return false, ErrSoldOut
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.queueLocked(goodsNo, time.Now())
	q.blocked.add(1)
	return false, r.queuedLocked(q, turn.place, who, client, turn.eff, time.Now(), true)
}

// turnTicket is a buyer whose turn has come and who found the admission
// full.
type turnTicket struct {
	place Place
	eff   int64
	wait  time.Duration // the least it waits: roomTurnWait for one whose turn has come
}

// decideLocked is enter's decision under r.mu: in, a refusal, or a ticket
// to wait for the admission with.
func (r *Room) decideLocked(goodsNo int32, who, client, token string, startsAt *time.Time, now time.Time, hold time.Duration, admit func() bool) (bool, *turnTicket, error) {
	pl, ok := r.signer.read(token, goodsNo, who, now)
	if !ok {
		pl, ok = r.held.of(goodsNo, who, now) // came without the place it holds
	}
	started := startsAt == nil || !now.Before(*startsAt)
	if !ok && started && r.queues[goodsNo] == nil && admit() {
		// No queue of this goods here, nor at any instance as last read
		// (a tick learns of the others' open queues): straight in, and the
		// room keeps nothing of it (a sale of many goods below capacity
		// costs the room no memory).
		return true, nil, nil
	}
	q := r.queueLocked(goodsNo, now)
	q.startsAt, q.asked = startsAt, true
	if !ok {
		if started && r.emptyLocked(q) && admit() {
			return true, nil, nil // nobody waits: straight in
		}
		if r.held.full(goodsNo, client, r.cfg.PlacesPerClient) {
			return false, nil, ErrBusy // the address holds its share of places
		}
		pl = Place{GoodsNo: goodsNo, At: now}
		eff := r.effective(pl, who, startsAt)
		if r.emptyLocked(q) {
			if started {
				// The first place of a new queue: the horizon moves up to
				// it, passing nobody (every earlier place has gone in).
				q.horizon = max(q.horizon, eff-1)
			}
			// The others are to learn of it now, not a tick later: until
			// they do, they let their new buyers straight in, ahead of it.
			select {
			case r.poke <- struct{}{}:
			default:
			}
		}
		q.given = max(q.given, eff)
		if started {
			if err := r.soldOutAheadLocked(q, eff, now); err != nil {
				return false, nil, err
			}
			if r.holdsLocked(q, eff, hold) {
				r.held.give(who, client, pl, now.Add(hold+r.cfg.Keep))
				return false, &turnTicket{place: pl, eff: eff}, nil
			}
		}
		bucket := eff / roomBucket.Microseconds()
		if q.horizon > 0 {
			bucket = min(bucket, q.horizon/roomBucket.Microseconds()+roomMaxBuckets)
		}
		q.hist[bucket]++
		return false, nil, r.queuedLocked(q, pl, who, client, eff, now, false)
	}
	eff := r.effective(pl, who, startsAt)
	if started && eff <= q.horizon {
		if r.turnsOfLocked(goodsNo) == 0 && admit() { // nobody before it at the door
			return true, nil, nil
		}
		return false, &turnTicket{place: pl, eff: eff, wait: roomTurnWait}, nil
	}
	if started && r.holdsLocked(q, eff, hold) {
		return false, &turnTicket{place: pl, eff: eff}, nil
	}
	return false, nil, r.queuedLocked(q, pl, who, client, eff, now, false)
}

// turnWaiter is a buyer waiting for the admission.
type turnWaiter struct {
	goodsNo int32
	eff     int64
	ready   chan struct{} // closed when a place may be free
	index   int
}

// turnWaiters is a min-heap of waiters by place (container/heap).
type turnWaiters []*turnWaiter

func (h turnWaiters) Len() int           { return len(h) }
func (h turnWaiters) Less(i, j int) bool { return h[i].eff < h[j].eff }
func (h turnWaiters) Swap(i, j int)      { h[i], h[j] = h[j], h[i]; h[i].index = i; h[j].index = j }
func (h *turnWaiters) Push(x any)        { w := x.(*turnWaiter); w.index = len(*h); *h = append(*h, w) }
func (h *turnWaiters) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	w.index = -1
	return w
}

// turnEnd is how a wait at the door ended.
type turnEnd int

const (
	turnIn      turnEnd = iota // the buyer went into the admission
	turnOut                    // the wait, or the request, ended first
	turnSoldOut                // the goods was marked sold out meanwhile
)

// awaitTurn waits, at most hold and while ctx lasts, for a place in the
// admission (admit), woken in place order; inStock (nil: none) ends when
// the goods is marked sold out, and so does the wait.
func (r *Room) awaitTurn(ctx context.Context, goodsNo int32, eff int64, hold time.Duration, inStock <-chan struct{}, admit func() bool) turnEnd {
	t := time.NewTimer(hold)
	defer t.Stop()
	for {
		w := &turnWaiter{goodsNo: goodsNo, eff: eff, ready: make(chan struct{})}
		r.mu.Lock()
		heap.Push(&r.turns, w)
		r.countTurn(goodsNo, 1)
		if r.doorLatest == nil {
			r.doorLatest = map[int32]int64{}
		}
		r.doorLatest[goodsNo] = max(r.doorLatest[goodsNo], eff)
		first := r.turns[0] == w // the earliest waiter at the door, of any goods
		r.mu.Unlock()
		if first && admit() { // a place freed before the wait began
			r.leaveTurns(w)
			return turnIn
		}
		select {
		case <-w.ready:
			if admit() {
				return turnIn
			}
		case <-inStock:
			r.leaveTurns(w)
			return turnSoldOut
		case <-r.draining:
			r.leaveTurns(w)
			return turnOut
		case <-t.C:
			r.leaveTurns(w)
			return turnOut
		case <-ctx.Done():
			r.leaveTurns(w)
			return turnOut
		}
	}
}

// leaveTurns takes w out of the waiters. If a freed place had woken it
// already, the wake goes to the next waiter: the place must not stay
// free while someone waits.
func (r *Room) leaveTurns(w *turnWaiter) {
	r.mu.Lock()
	if w.index >= 0 && w.index < len(r.turns) && r.turns[w.index] == w {
		heap.Remove(&r.turns, w.index)
		r.countTurn(w.goodsNo, -1)
		r.mu.Unlock()
		return
	}
	r.mu.Unlock()
	select {
	case <-w.ready:
		r.freed()
	default:
	}
}

// freed tells the earliest waiter that a place in the admission may be
// free (a purchase ended).
func (r *Room) freed() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.turns) > 0 {
		w := heap.Pop(&r.turns).(*turnWaiter)
		r.countTurn(w.goodsNo, -1)
		close(w.ready)
	}
}

// doorAheadLocked counts the waiters of goodsNo at the door whose place is
// before eff: all of them for a new arrival (no place at the door is
// later than the latest ever put there), else by a look at each.
func (r *Room) doorAheadLocked(goodsNo int32, eff int64) int64 {
	if eff > r.doorLatest[goodsNo] {
		return r.turnsOfLocked(goodsNo)
	}
	var n int64
	for _, w := range r.turns {
		if w.goodsNo == goodsNo && w.eff < eff {
			n++
		}
	}
	return n
}

// turnsOfLocked counts the waiters of goodsNo.
func (r *Room) turnsOfLocked(goodsNo int32) int64 { return r.turnsOf[goodsNo] }

// countTurn adds d to the waiters of goodsNo (under r.mu).
func (r *Room) countTurn(goodsNo int32, d int64) {
	if r.turnsOf == nil {
		r.turnsOf = map[int32]int64{}
	}
	if r.turnsOf[goodsNo] += d; r.turnsOf[goodsNo] == 0 {
		delete(r.turnsOf, goodsNo)
		delete(r.doorLatest, goodsNo)
	}
}

// holdFor is how long a buyer may wait at the door in its request: hold
// (RoomConfig.Hold), and three quarters of what is left of the request's
// deadline (the purchase needs the rest); 0: not at all.
func holdFor(ctx context.Context, hold time.Duration, now time.Time) time.Duration {
	if dl, ok := ctx.Deadline(); ok {
		hold = min(hold, dl.Sub(now)*3/4)
	}
	return max(hold, 0)
}

// holdsLocked: a buyer whose place is at eff, at q's door now, is served
// within hold at the rate this instance serves: the earlier places at the
// door and this instance's places beyond the horizon go first. A place's
// order is its own: one that comes back finds fewer ahead of it than the
// new arrivals at the door behind it.
func (r *Room) holdsLocked(q *roomQueue, eff int64, hold time.Duration) bool {
	if hold <= 0 {
		return false
	}
	ahead := float64(r.doorAheadLocked(q.goodsNo, eff) + q.snap.before(eff/roomBucket.Microseconds()))
	return ahead < r.rateLocked()*hold.Seconds()
}

// soldOutAheadLocked is a SoldOutAheadError when the buyers ahead of a
// place at eff at this instance alone (at its door, and its places sent
// away) are beyond what is left, as freshly read. This instance's count
// is a part of every instance's, so a place refused is truly beyond what
// is left while those ahead stay; the other instances' share, which an
// instance can only estimate, is not counted: an estimate too high (the
// instance's door is the slower one) would refuse earlier arrivals than a
// faster instance sells to. The buyers it does not refuse wait and hear
// sold out as the last piece goes.
func (r *Room) soldOutAheadLocked(q *roomQueue, eff int64, now time.Time) error {
	ahead := q.snap.before(eff/roomBucket.Microseconds()) + r.doorAheadLocked(q.goodsNo, eff)
	fresh := now.Sub(q.leftRead) <= roomLeftTrust
	if q.left >= 0 && fresh && float64(ahead) > roomSoldOutMargin*float64(q.left)+1 {
		return &SoldOutAheadError{Ahead: int(ahead) * max(1, r.members)}
	}
	return nil
}
