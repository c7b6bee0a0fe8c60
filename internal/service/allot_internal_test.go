package service

import (
	"context"
	"testing"
	"time"
)

// An allot worker with nothing to do sleeps until its next reap of dead
// owners' leases (once a second); while its lease holds stock, or buyers
// wait for stock other leases hold, it wakes every allotRetry, as its
// housekeeping and their retries need. It used to wake every allotRetry in
// every case: an idle instance spent 6-8 ms of CPU a second on it.
func TestAnIdleAllotWorkerSleepsUntilItsNextReap(t *testing.T) {
	newAllot := func() *Allot {
		return &Allot{held: map[int32]Allotment{}, goods: map[int32]Goods{}, used: map[int32]time.Time{},
			wanted: map[int32]time.Time{}, lastReap: time.Now()}
	}
	idle := newAllot()
	if d := idle.idleFor(); d < allotReapEvery/2 || d > allotReapEvery {
		t.Errorf("idle, reaped just now: sleeps %v, want about %v (until the next reap)", d, allotReapEvery)
	}
	idle.lastReap = time.Now().Add(-2 * allotReapEvery)
	if d := idle.idleFor(); d != allotRetry {
		t.Errorf("idle, a reap overdue: sleeps %v, want %v", d, allotRetry)
	}

	holding := newAllot()
	holding.held[1] = Allotment{Granted: 10, Sold: 3}
	holding.goods[1] = Goods{GoodsNo: 1, Stock: 90}
	if d := holding.idleFor(); d != allotRetry {
		t.Errorf("the lease holds stock: sleeps %v, want %v (its stock goes back after allot.keep without buyers)", d, allotRetry)
	}

	waiting := newAllot()
	waiting.waiting.push(newWaiter(context.Background(), &Order{GoodsNo: 1}))
	if d := waiting.idleFor(); d != allotRetry {
		t.Errorf("a buyer waits for stock another lease holds: sleeps %v, want %v (it is tried again after that)", d, allotRetry)
	}
}
