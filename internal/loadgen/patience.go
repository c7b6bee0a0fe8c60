package loadgen

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/api"
)

// A patient buyer comes back when the shop says when: an answer of 503
// queued (its place in the waiting room) or busy, or 429, with Retry-After
// (X-Retry-After-Ms to the millisecond when the shop sends it). It comes
// back with the same request, its place (X-Place, from the last answer)
// and its own ids, until another answer or until its patience is spent.

// comeBack reports whether a asks its buyer to come back, and after how
// long.
func comeBack(a Answer) (time.Duration, bool) {
	if a.Err != nil {
		return 0, false
	}
	switch {
	case a.Status == http.StatusServiceUnavailable && (a.Code == api.Queued || a.Code == api.Busy):
	case a.Status == http.StatusTooManyRequests:
	default:
		return 0, false
	}
	if ms, err := strconv.ParseInt(a.Header.Get("X-Retry-After-Ms"), 10, 64); err == nil && ms > 0 {
		return time.Duration(ms) * time.Millisecond, true
	}
	if s, err := strconv.ParseInt(a.Header.Get("Retry-After"), 10, 64); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	return time.Second, true
}

// jitter spreads a crowd told the same wait over ±10% of it.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return d - d/10 + rand.N(d/5+1)
}

// withPlace is header with the place a gave (X-Place) in place of any
// earlier one.
func withPlace(header []string, a Answer) []string {
	place := a.Header.Get("X-Place")
	out := make([]string, 0, len(header)+2)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] != "X-Place" {
			out = append(out, header[i], header[i+1])
		}
	}
	if place != "" {
		out = append(out, "X-Place", place)
	}
	return out
}

// Fairness is how first come, first served a sale was: of the pieces sold
// (Sold, the 200s), how many went to the first Sold arrivals.
type Fairness struct {
	Sold, ToFirst int
}

// Share is ToFirst / Sold (1 when nothing was sold).
func (f Fairness) Share() float64 {
	if f.Sold == 0 {
		return 1
	}
	return float64(f.ToFirst) / float64(f.Sold)
}

// FairnessOf is the fairness of a sale whose buyers arrived in the order of
// ok's indices (ok[i]: arrival i bought).
func FairnessOf(ok []bool) Fairness {
	var f Fairness
	for _, b := range ok {
		if b {
			f.Sold++
		}
	}
	for i := 0; i < f.Sold && i < len(ok); i++ {
		if ok[i] {
			f.ToFirst++
		}
	}
	return f
}

// patiently comes back as a says until another answer, ctx's end or until:
// again sends try number try (from 1) with the header given. The answer is
// the last, its Start the first's and Tries their number.
func patiently(ctx interface{ Done() <-chan struct{} }, a Answer, until time.Time, again func(try int, header []string) Answer, header []string) Answer {
	first := a.Start
	tries := 1
	for {
		wait, ok := comeBack(a)
		wait = jitter(wait)
		if !ok || time.Now().Add(wait).After(until) {
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			a.Start, a.Tries = first, tries
			return a
		}
		header = withPlace(header, a)
		a = again(tries, header)
		tries++
	}
	a.Start, a.Tries = first, tries
	return a
}
