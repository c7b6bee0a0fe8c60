package service

import "time"

// First come, first served across the leases. Each instance sells the
// stock its lease holds to its own buyers, in their order; at a sell-out,
// an instance whose lease ran out asks the others for theirs (WantBack),
// and its buyers wait. Without more, an owner sold what it held to its own
// later arrivals while the asker's earlier ones waited: make bench-shop (k)
// gave 80-91% of the pieces to the first arrivals. So an ask says since
// when the asker's buyers wait (Ask.Arrived), and the owner, while that
// ask is fresh, sells the goods only to its buyers who arrived before it;
// the later ones wait too, and the lease's stock of the goods goes back to
// the row at once, where the asker's next grant finds it. Both sides
// repeat it while buyers wait, so the pieces go, a grant at a time, to the
// earliest buyers of either instance.

// askFresh is how long an ask's arrival holds the owner's later buyers
// back: three readings of the wanted list (allotIdle/2 apart), the asker
// asking again at each retry (allotRetry) while its buyers wait.
const askFresh = 3 * allotIdle / 2

// askedAt is the earliest arrival other leases said their buyers of a
// goods wait since, and when they last said it.
type askedAt struct {
	arrived, at time.Time
}

// earliest is, per goods, the earliest arrival of the batch's buyers.
func earliest(batch []*waiter) map[int32]time.Time {
	first := map[int32]time.Time{}
	for _, x := range batch {
		no, t := x.order.GoodsNo, x.order.Arrived
		if f, ok := first[no]; t.IsZero() || ok && !t.Before(f) {
			continue
		}
		first[no] = t
	}
	return first
}

// noteAsk records an ask another lease made of goods the lease holds.
func (a *Allot) noteAsk(ask Ask, now time.Time) {
	a.wanted[ask.GoodsNo] = now
	if ask.Arrived.IsZero() {
		return
	}
	w, ok := a.waitsSince[ask.GoodsNo]
	if !ok || now.Sub(w.at) >= askFresh || ask.Arrived.Before(w.arrived) {
		w.arrived = ask.Arrived
	}
	w.at = now
	a.waitsSince[ask.GoodsNo] = w
}

// yield takes out of batch the buyers who arrived after another lease's
// buyers of the same goods began to wait (a fresh ask), puts them back in
// the queue to try again after allotRetry, and returns the others. The
// goods' stock then goes back (yieldedLately).
func (a *Allot) yield(batch []*waiter, now time.Time) []*waiter {
	if len(a.waitsSince) == 0 {
		return batch
	}
	var keep, wait []*waiter
	for _, x := range batch {
		w, ok := a.waitsSince[x.order.GoodsNo]
		if ok && now.Sub(w.at) < askFresh && x.order.Arrived.After(w.arrived) {
			wait = append(wait, x)
			a.yielded[x.order.GoodsNo] = now
			continue
		}
		keep = append(keep, x)
	}
	a.requeue(wait, now, now.Add(allotRetry))
	return keep
}

// yieldedLately reports whether a batch left buyers of goodsNo to another
// lease's earlier ones within askFresh: the lease's stock of it goes back.
func (a *Allot) yieldedLately(goodsNo int32, now time.Time) bool {
	t, ok := a.yielded[goodsNo]
	return ok && now.Sub(t) < askFresh
}

// forgetAsks forgets what was asked of goodsNo.
func (a *Allot) forgetAsks(goodsNo int32) {
	delete(a.wanted, goodsNo)
	delete(a.waitsSince, goodsNo)
	delete(a.yielded, goodsNo)
}
