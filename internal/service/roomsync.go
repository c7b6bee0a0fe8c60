package service

import (
	"context"
	"slices"
	"time"
)

// The waiting room kept in step with the other instances' (room.go): each
// tick an instance reads the horizons of the goods asked for, moves them
// as far as it can serve, and now and then counts the instances and reads
// what is left of each goods with buyers waiting.

// Run keeps the room in step until ctx ends, as the instance member (its
// participant id): each tick it reads the horizons of the goods asked for,
// moves them as this instance can serve, and now and then counts the
// instances and reads what is left of each goods with buyers waiting.
func (r *Room) Run(ctx context.Context, member string) error {
	t := time.NewTicker(roomTick)
	defer t.Stop()
	var lastMembers time.Time
	lastForget, lastHeld := time.Now(), time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.poke:
			r.publish(ctx)
		case now := <-t.C:
			if now.Sub(lastForget) >= roomForgetEvery {
				lastForget = now
				r.forget(ctx, now)
			}
			if now.Sub(lastHeld) >= time.Second {
				lastHeld = now
				r.mu.Lock()
				r.held.forget(now)
				r.mu.Unlock()
			}
			if now.Sub(lastMembers) >= time.Second {
				lastMembers = now
				if n, err := r.store.RoomMembers(ctx, member, 3*time.Second); err == nil {
					r.mu.Lock()
					r.members = max(1, n)
					r.mu.Unlock()
				} else {
					r.log.Debug("room: counting the instances", "err", err)
				}
			}
			r.tick(ctx, now)
		}
	}
}

// forget deletes the shared rooms closed for roomForget.
func (r *Room) forget(ctx context.Context, now time.Time) {
	if n, err := r.store.ForgetRooms(ctx, now.Add(-roomForget).UnixMicro()); err != nil {
		r.log.Debug("room: forgetting closed rooms", "err", err)
	} else if n > 0 {
		r.log.Debug("room: forgot closed rooms", "rooms", n)
	}
}

// tick is one step of Run.
func (r *Room) tick(ctx context.Context, now time.Time) {
	r.mu.Lock()
	var goods []int32
	for g, q := range r.queues {
		if now.Sub(q.lastAsk) > roomIdle && r.waitingLocked(q) == 0 {
			delete(r.queues, g)
			continue
		}
		goods = append(goods, g)
	}
	r.mu.Unlock()
	hs, err := r.store.Horizons(ctx, goods)
	if err != nil {
		r.log.Debug("room: reading the horizons", "err", err)
		return
	}
	proposals := map[int32]RoomMark{}
	var readLeft []int32
	r.mu.Lock()
	for g, m := range hs {
		if r.queues[g] == nil && m.Latest > m.Horizon {
			// Another instance's open queue: this one gives places too
			// rather than letting new buyers straight in ahead of it.
			r.queueLocked(g, now)
			goods = append(goods, g)
		}
	}
	for _, g := range goods {
		q := r.queues[g]
		if q == nil {
			continue
		}
		q.blocked.next()
		q.passed.next()
		r.moveLocked(q, hs[g].Horizon)
		q.latest = max(q.latest, hs[g].Latest)
		p, moved := r.proposeLocked(q, now)
		if end := max(q.latest, q.given); q.left == 0 && now.Sub(q.leftRead) <= roomLeftTrust && end > q.horizon && (!moved || p < end) {
			// Nothing left, as freshly read: every place given so far
			// hears sold out, and none may stand before a later arrival
			// (a restock's crowd was told sold out behind the places of
			// the crowd that had emptied the stock).
			p, moved = end, true
		}
		if moved {
			r.moveLocked(q, p)
		}
		if moved || q.given > q.latest {
			proposals[g] = RoomMark{Horizon: q.horizon, Latest: q.given}
			q.latest = max(q.latest, q.given)
		}
		q.snap = q.snapshot()
		if (len(q.snap.keys) > 0 || r.turnsOfLocked(g) > 0) && now.Sub(q.leftAsked) >= roomLeftEvery {
			q.leftAsked = now
			readLeft = append(readLeft, g)
		}
	}
	shop := r.shop
	wake := len(r.turns) > 0 && r.roomInAdmissionLocked()
	r.mu.Unlock()
	if wake {
		// A place is free and a buyer waits at the door: a wake lost to
		// a waiter that left at that moment must not leave it free.
		r.freed()
	}
	r.advance(ctx, proposals)
	if shop != nil && len(readLeft) > 0 {
		r.readLeft(ctx, shop, readLeft)
	}
}

// publish stores the latest place this instance gave of each goods where
// the store's is earlier: a queue opened here, told to the other instances
// at once (their next tick reads it) rather than at this one's next tick.
func (r *Room) publish(ctx context.Context) {
	proposals := map[int32]RoomMark{}
	r.mu.Lock()
	for g, q := range r.queues {
		if q.given > q.latest {
			proposals[g] = RoomMark{Horizon: q.horizon, Latest: q.given}
			q.latest = q.given
		}
	}
	r.mu.Unlock()
	r.advance(ctx, proposals)
}

// advance stores the proposed marks, each goods' only where later.
func (r *Room) advance(ctx context.Context, proposals map[int32]RoomMark) {
	for g, p := range proposals {
		if err := r.store.AdvanceRoom(ctx, g, p); err != nil {
			r.log.Debug("room: moving a horizon", "goodsNo", g, "err", err)
		}
	}
}

// moveLocked takes the horizon to h if it is later, counting the places
// it passes and forgetting them.
func (r *Room) moveLocked(q *roomQueue, h int64) {
	if h <= q.horizon {
		return
	}
	q.horizon = h
	hb := h / roomBucket.Microseconds()
	for k, c := range q.hist {
		if k <= hb {
			q.passed.add(int64(c))
			delete(q.hist, k)
		}
	}
}

// proposeLocked is where this instance moves the horizon of q now: past
// the places it can serve in the pipeline, less those let in and not yet
// served; to now when none of its places wait (nobody is queued, new
// buyers go straight in). None before the sale's start.
func (r *Room) proposeLocked(q *roomQueue, now time.Time) (int64, bool) {
	if !q.asked || q.startsAt != nil && now.Before(*q.startsAt) {
		// Learnt from the store and never asked here: this instance does
		// not know the sale's start, and nobody waits at its door.
		return 0, false
	}
	if len(q.hist) == 0 {
		// None of this instance's places waits, but others' may (another
		// instance gave them, or went away): while its admission has room,
		// it lets time through, two ticks a tick, up to the latest place.
		if q.horizon >= q.latest || q.blocked.sum() > 0 || r.turnsOfLocked(q.goodsNo) > 0 || !r.roomInAdmissionLocked() {
			return 0, false
		}
		return min(q.horizon+2*roomTick.Microseconds(), q.latest), true
	}
	want := int64(r.rateLocked() * roomLetIn.Seconds())
	k := want - q.blocked.sum() - q.passed.sum() - r.turnsOfLocked(q.goodsNo)
	if k <= 0 {
		return 0, false
	}
	keys := make([]int64, 0, len(q.hist))
	for b := range q.hist {
		keys = append(keys, b)
	}
	slices.Sort(keys)
	var n int64
	for _, b := range keys {
		n += int64(q.hist[b])
		if n >= k {
			return (b+1)*roomBucket.Microseconds() - 1, true
		}
	}
	return (keys[len(keys)-1]+1)*roomBucket.Microseconds() - 1, true
}

// roomInAdmissionLocked: the admission has places free.
func (r *Room) roomInAdmissionLocked() bool {
	if r.admission == nil {
		return true
	}
	st := r.admission.stats()
	return st.Limit <= 0 || st.InFlight < st.Limit
}

// snapshot is q's places beyond the horizon as a roomSnapshot.
func (q *roomQueue) snapshot() roomSnapshot {
	keys := make([]int64, 0, len(q.hist))
	for b := range q.hist {
		keys = append(keys, b)
	}
	slices.Sort(keys)
	cum := make([]int64, len(keys))
	var n int64
	for i, b := range keys {
		n += int64(q.hist[b])
		cum[i] = n
	}
	return roomSnapshot{keys: keys, cum: cum}
}

// readLeft reads, of goods, the stock and the unpaid orders (which may
// expire and come back): what is left to sell.
func (r *Room) readLeft(ctx context.Context, shop Store, goods []int32) {
	began := time.Now() // the reading's time: what it says held then, not before
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	rows, err := shop.GoodsOf(rctx, goods)
	if err != nil {
		return
	}
	counts, err := shop.OrderCounts(rctx, goods)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, g := range goods {
		q := r.queues[g]
		row, ok := rows[g]
		if q == nil || !ok {
			continue
		}
		q.stock = int64(max(row.Stock, 0))
		q.left = q.stock + counts[g][OrderUnpaid]
		q.leftRead = began
	}
}

// RoomStats is what the room shows of itself (the metrics', the dashboard's).
type RoomStats struct {
	// Waiting: places this instance gave that are beyond their horizon.
	Waiting int64
	// LetIn: places the horizons passed in the last pipeline, a second's worth.
	LetInPerSec float64
	// Wait: the expected wait of a place given now (the longest goods').
	Wait time.Duration
}

// Stats is the room's now.
func (r *Room) Stats() RoomStats {
	if r == nil {
		return RoomStats{}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var st RoomStats
	rate := r.rateLocked() * float64(max(1, r.members))
	for _, q := range r.queues {
		w := r.waitingLocked(q)
		st.Waiting += w
		st.LetInPerSec += float64(q.passed.sum()) / RoomPipeline.Seconds()
		st.Wait = max(st.Wait, time.Duration(float64(w*int64(max(1, r.members)))/rate*float64(time.Second)))
	}
	return st
}
