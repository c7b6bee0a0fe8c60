package service

import (
	"testing"
	"time"
)

// drive runs the admission for d: a buyer arrives every `every`, and the
// instance completes one purchase every `serve` while any is in progress
// (a queue served at 1/serve a second). It returns how many were refused.
func drive(a *admission, now *time.Time, d, every, serve time.Duration) (refused int) {
	end := now.Add(d)
	nextArrival, nextDone := *now, now.Add(serve)
	for now.Before(end) {
		if nextArrival.Before(nextDone) {
			*now = nextArrival
			if !a.admit(*now) {
				refused++
			}
			nextArrival = nextArrival.Add(every)
			continue
		}
		*now = nextDone
		if a.inflight > 0 {
			a.done(*now)
		}
		nextDone = nextDone.Add(serve)
	}
	return refused
}

func TestAdmissionFollowsTheServiceRate(t *testing.T) {
	for _, tc := range []struct {
		name      string
		serve     time.Duration // per purchase
		wantLimit int           // rate × 300 ms
	}{
		{"1000 purchases/s", time.Millisecond, 300},
		{"150 purchases/s", time.Second / 150, 45},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(0, 0)
			a := newAdmission(300*time.Millisecond, 1000, now)
			// Four times the rate it serves, for five seconds.
			refused := drive(a, &now, 5*time.Second, tc.serve/4, tc.serve)
			s := a.stats()
			if s.Limit < tc.wantLimit*8/10 || s.Limit > tc.wantLimit*12/10 {
				t.Errorf("limit %d at %.0f purchases/s, want ~%d (what it serves in 300 ms)", s.Limit, s.Rate, tc.wantLimit)
			}
			if refused == 0 || s.Refused != uint64(refused) {
				t.Errorf("%d refused, stats say %d: want the excess refused", refused, s.Refused)
			}
			// Those let in wait about the target: the queue is the limit.
			if wait := time.Duration(float64(s.InFlight) * float64(tc.serve)); wait > 400*time.Millisecond {
				t.Errorf("%d in progress: the last one in waits %v, past the 300 ms target", s.InFlight, wait)
			}
		})
	}
}

func TestAdmissionBelowCapacityKeepsTheLimit(t *testing.T) {
	now := time.Unix(0, 0)
	a := newAdmission(300*time.Millisecond, 1000, now)
	drive(a, &now, 3*time.Second, time.Millisecond/4, time.Millisecond) // learns ~300
	high := a.stats().Limit
	// Then buyers come at a tenth of what it serves: it completes what
	// arrives, which says nothing of what it could.
	if refused := drive(a, &now, 3*time.Second, 10*time.Millisecond, time.Millisecond); refused != 0 {
		t.Errorf("%d refused below capacity", refused)
	}
	if low := a.stats().Limit; low < high {
		t.Errorf("the limit fell from %d to %d while the shop was below capacity", high, low)
	}
}

func TestAdmissionWithoutATargetIsMaxWaiting(t *testing.T) {
	now := time.Unix(0, 0)
	a := newAdmission(0, 50, now)
	drive(a, &now, 2*time.Second, time.Millisecond/4, time.Millisecond)
	if s := a.stats(); s.Limit != 50 {
		t.Errorf("limit %d with no target, want maxWaiting's 50", s.Limit)
	}
	if a := newAdmission(0, 0, now); !a.admit(now) {
		t.Error("no target and no maxWaiting refused a buyer")
	}
}
