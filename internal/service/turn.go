package service

import (
	"container/heap"
	"context"
	"time"
)

// Buyers whose turn has come (their place at or before the horizon) and
// who found the admission full wait in their request for a place there,
// the earliest place first: each purchase that ends hands its place to the
// earliest waiter (Room.freed). Waiting costs a goroutine, not a request
// sent again and answered: past capacity most of the sale's buyers are at
// the door, and sent away to come back every quarter second they would
// take the CPU the sale needs.

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

// awaitTurn waits, at most roomTurnWait and while ctx lasts, for a place in
// the admission (admit), woken in place order; true once in.
func (r *Room) awaitTurn(ctx context.Context, goodsNo int32, eff int64, admit func() bool) bool {
	t := time.NewTimer(roomTurnWait)
	defer t.Stop()
	for {
		w := &turnWaiter{goodsNo: goodsNo, eff: eff, ready: make(chan struct{})}
		r.mu.Lock()
		heap.Push(&r.turns, w)
		r.countTurn(goodsNo, 1)
		r.mu.Unlock()
		if admit() { // a place freed before the wait began
			r.leaveTurns(w)
			return true
		}
		select {
		case <-w.ready:
			if admit() {
				return true
			}
		case <-t.C:
			r.leaveTurns(w)
			return false
		case <-ctx.Done():
			r.leaveTurns(w)
			return false
		}
	}
}

// leaveTurns takes w out of the waiters, if it is still there.
func (r *Room) leaveTurns(w *turnWaiter) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w.index >= 0 && w.index < len(r.turns) && r.turns[w.index] == w {
		heap.Remove(&r.turns, w.index)
		r.countTurn(w.goodsNo, -1)
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

// turnsOfLocked counts the waiters of goodsNo.
func (r *Room) turnsOfLocked(goodsNo int32) int64 { return r.turnsOf[goodsNo] }

// countTurn adds d to the waiters of goodsNo (under r.mu).
func (r *Room) countTurn(goodsNo int32, d int64) {
	if r.turnsOf == nil {
		r.turnsOf = map[int32]int64{}
	}
	if r.turnsOf[goodsNo] += d; r.turnsOf[goodsNo] == 0 {
		delete(r.turnsOf, goodsNo)
	}
}
