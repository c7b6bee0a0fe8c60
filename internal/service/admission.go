package service

import (
	"sync"
	"time"
)

// admission decides, per instance, whether a buyer who passed the sold-out
// mark and the sale window may wait for a purchase, or is refused at once
// (ErrBusy). Its limit on the purchases in progress follows the instance's
// own service rate, so that a buyer it lets in waits about Target, whatever
// the strategy and machine:
//
//	limit = rate × Target, within [admissionFloor, Ceiling]
//
// where rate is the purchases per second the instance completed while it
// had purchases waiting throughout (its capacity as it is, not the arrival
// rate), smoothed over windows of admissionWindow (Little's law: a queue of
// rate × Target drains in Target). A window in which the purchases in
// progress never came near the limit only raises it: a shop served below
// capacity completes what arrives, which says nothing of what it could.
// Before the first such window the limit is admissionStart. With Target 0
// the limit is Ceiling (a fixed bound, purchase.maxWaiting).
//
// The admission also measures the purchases per second of work (workRate:
// completions over the time with purchases in progress, idle time left
// out), for the waiting room (room.go), which lets buyers in at that rate.
// The limit does not follow it: a trickle served one at a time says
// nothing of how many may wait, and the limit keeps the busy windows'
// rate. But the room must not follow the busy windows' rate: measured at a
// cold start (275 purchases/s for a batch instance that serves thousands),
// it let buyers in at that rate, the instance sold them in milliseconds and
// sat idle, no window was busy throughout, and it was never measured
// again: 1 000 pieces took 1.3 s to sell instead of a quarter of a second.
//
// A fixed bound is a latency bound for one service rate only: the same
// 1 000 waiting is a 0.2 s queue for the batch strategy and a 7 s one for
// the seed's, long past the time a buyer waits for an answer.
type admission struct {
	target  time.Duration
	ceiling int // 0: none

	mu       sync.Mutex
	inflight int
	limit    int
	rate     float64 // purchases per second while busy, smoothed; 0: not measured yet
	refused  uint64
	// workRate is the purchases per second of work, smoothed (0: not
	// measured yet); busySince is when the purchases in progress last went
	// from none to one (zero while none are).
	workRate  float64
	busySince time.Time
	// the current window
	winStart time.Time
	winDone  int           // purchases completed in it
	winBusy  bool          // purchases in progress throughout it
	winPeak  int           // the most in progress during it
	winWork  time.Duration // its time with purchases in progress
}

const (
	// admissionWindow is how often the rate is measured.
	admissionWindow = 100 * time.Millisecond
	// admissionFloor: the limit never goes below it, so that a slow
	// strategy (the seed's with the demo's sleep: a few purchases a
	// second) still queues enough buyers to be busy.
	admissionFloor = 8
	// admissionStart is the limit before the rate is known.
	admissionStart = 100
	// admissionSmoothing is the weight of a new window's rate.
	admissionSmoothing = 0.3
)

func newAdmission(target time.Duration, ceiling int, now time.Time) *admission {
	a := &admission{target: target, ceiling: ceiling, winStart: now}
	a.limit = a.clamp(admissionStart)
	if target <= 0 {
		a.limit = ceiling
	}
	return a
}

func (a *admission) clamp(n int) int {
	n = max(n, admissionFloor)
	if a.ceiling > 0 {
		n = min(n, a.ceiling)
	}
	return n
}

// admit takes a place for a purchase, or reports that there is none.
func (a *admission) admit(now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.roll(now)
	if a.limit > 0 && a.inflight >= a.limit {
		a.refused++
		return false
	}
	if a.inflight == 0 {
		a.busySince = now
	}
	a.inflight++
	a.winPeak = max(a.winPeak, a.inflight)
	return true
}

// done gives the place of a purchase back: it completed, whatever its
// answer.
func (a *admission) done(now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.roll(now)
	a.inflight--
	a.winDone++
	if a.inflight == 0 {
		a.winBusy = false
		a.winWork += now.Sub(laterTime(a.busySince, a.winStart))
		a.busySince = time.Time{}
	}
}

func laterTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// roll closes the window if it is over: a busy window's completions are a
// sample of the rate, and the limit follows; any window's completions over
// its time of work are a sample of the work rate.
func (a *admission) roll(now time.Time) {
	elapsed := now.Sub(a.winStart)
	if elapsed < admissionWindow {
		return
	}
	if a.inflight > 0 {
		a.winWork += now.Sub(laterTime(a.busySince, a.winStart))
	}
	if a.winDone > 0 && a.winWork > 0 {
		sample := float64(a.winDone) / a.winWork.Seconds()
		if a.workRate == 0 {
			a.workRate = sample
		} else {
			a.workRate += admissionSmoothing * (sample - a.workRate)
		}
	}
	if a.target > 0 && a.winBusy && a.winDone > 0 {
		sample := float64(a.winDone) / elapsed.Seconds()
		if a.rate == 0 {
			a.rate = sample
		} else {
			a.rate += admissionSmoothing * (sample - a.rate)
		}
		want := a.clamp(int(a.rate * a.target.Seconds()))
		// Below half the limit the queue did not press: the rate is the
		// arrivals', so it may raise the limit but not lower it.
		if pressed := 2*a.winPeak >= a.limit; pressed || want > a.limit {
			a.limit = want
		}
	}
	a.winStart, a.winDone, a.winPeak, a.winWork = now, 0, a.inflight, 0
	a.winBusy = a.inflight > 0
}

// AdmissionStats is what the admission shows of itself (the metrics').
type AdmissionStats struct {
	InFlight, Limit int
	// Rate is the purchases per second the instance completes while busy
	// (0 until measured).
	Rate float64
	// WorkRate is the purchases per second of work, idle time left out
	// (0 until measured): what the waiting room lets in.
	WorkRate float64
	Refused  uint64 // buyers refused busy since the start
}

func (a *admission) stats() AdmissionStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return AdmissionStats{InFlight: a.inflight, Limit: a.limit, Rate: a.rate, WorkRate: a.workRate, Refused: a.refused}
}
