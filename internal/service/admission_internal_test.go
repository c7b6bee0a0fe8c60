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

// coldThenTrickle is a batch instance's sale as the waiting room fed it:
// a cold start served at 275 purchases/s with a queue, then 8 buyers let
// in every 50 ms, each served in 0.2 ms (5 000 purchases per second of
// work), the instance idle in between, for 2 s.
func coldThenTrickle(t *testing.T, a *admission, now *time.Time) {
	t.Helper()
	slow := time.Second / 275
	drive(a, now, 300*time.Millisecond, slow/4, slow)
	if r := a.stats().Rate; r < 200 || r > 350 {
		t.Fatalf("the cold start measured %.0f purchases/s, want ~275", r)
	}
	for a.inflight > 0 { // its queue served
		*now = now.Add(slow)
		a.done(*now)
	}
	for end := now.Add(2 * time.Second); now.Before(end); {
		tick := *now
		for range 8 {
			if !a.admit(*now) {
				t.Fatal("a trickle refused")
			}
		}
		for range 8 {
			*now = now.Add(200 * time.Microsecond)
			a.done(*now)
		}
		*now = tick.Add(50 * time.Millisecond)
	}
}

// The rate per second of work learns from a trickle served fast what the
// busy windows' rate cannot (no window is busy throughout), and the limit
// keeps the busy windows' rate: a trickle says nothing of how many may
// wait.
func TestAdmissionLearnsTheRateOfWorkFromATrickle(t *testing.T) {
	now := time.Unix(0, 0)
	a := newAdmission(300*time.Millisecond, 1000, now)
	coldThenTrickle(t, a, &now)
	s := a.stats()
	if s.WorkRate < 2500 {
		t.Errorf("work rate %.0f purchases/s after 2 s of a trickle served at 5000 a second of work: want it learnt", s.WorkRate)
	}
	if s.Rate > 350 || s.Limit > 120 {
		t.Errorf("rate %.0f/s, limit %d: the trickle moved the busy windows' rate (want ~275/s, limit ~82)", s.Rate, s.Limit)
	}
}
