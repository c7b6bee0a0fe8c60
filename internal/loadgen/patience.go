package loadgen

import (
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A patient buyer comes back when the shop says when: any 503 or 429 with
// Retry-After, as RFC 9110 has a client read it. 503 queued is its place in
// the waiting room, busy the admission's bound; unavailable, lock_timeout,
// lock_lost, timeout and outcome_unknown sold it nothing or are told again
// (a request id that bought is replayed), so it keeps its place in line by
// coming back rather than giving up.
// It comes back with the same request, its own ids and its place, until
// another answer or until its patience is spent. By default it is a
// standard client, as a browser or any HTTP library's retry is: it waits
// Retry-After (whole seconds) and brings its place back in the cookie the
// shop set. With ShopHeaders it reads the shop's own headers instead:
// X-Retry-After-Ms (to the millisecond) and X-Place.

// comeBack reports whether a asks its buyer to come back, and after how
// long: Retry-After, or X-Retry-After-Ms with shopHeaders.
func comeBack(a Answer, shopHeaders bool) (time.Duration, bool) {
	if a.Err != nil {
		return 0, false
	}
	if a.Status != http.StatusServiceUnavailable && a.Status != http.StatusTooManyRequests {
		return 0, false
	}
	if shopHeaders {
		if ms, err := strconv.ParseInt(a.Header.Get("X-Retry-After-Ms"), 10, 64); err == nil && ms > 0 {
			return time.Duration(ms) * time.Millisecond, true
		}
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

// withPlace is header with the place a gave in place of any earlier one:
// X-Place with shopHeaders, else the cookies a set (a cookie jar of one
// answer: the place's cookie is the only one the shop sets).
func withPlace(header []string, a Answer, shopHeaders bool) []string {
	name, value := "Cookie", cookiesOf(a)
	if shopHeaders {
		name, value = "X-Place", a.Header.Get("X-Place")
	}
	out := make([]string, 0, len(header)+2)
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] != name {
			out = append(out, header[i], header[i+1])
		}
	}
	if value != "" {
		out = append(out, name, value)
	}
	return out
}

// cookiesOf is the Cookie header that sends back the cookies a set.
func cookiesOf(a Answer) string {
	var b strings.Builder
	for _, line := range a.Header.Values("Set-Cookie") {
		c, err := http.ParseSetCookie(line)
		if err != nil || c.MaxAge < 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("; ")
		}
		b.WriteString(c.Name + "=" + c.Value)
	}
	return b.String()
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

// ArrivalOf is when a's buyer arrived: when the shop read its first
// request (Answer.Arrived), or, where the shop did not say, when that
// request was written (Answer.Written); zero if it was never sent.
//
// The buyers' own numbering is not their arrival: 1 500 goroutines started
// at once send in the order the Go scheduler runs them (often the newest
// first), and 1 500 requests written within ~100 ms over two shared CPUs
// reach the shop's handler up to 160 ms later, in the order the kernel and
// the shop's runtime pick their sockets up. The shop can serve no earlier
// order than the one it reads.
func ArrivalOf(a Answer) time.Time {
	if !a.Arrived.IsZero() {
		return a.Arrived
	}
	return a.Written
}

// InArrivalOrder is bought (bought[i]: buyer i bought) in the order of the
// buyers' arrivals at (ArrivalOf); a buyer with none comes last, and ties
// keep the buyers' order.
func InArrivalOrder(bought []bool, at []time.Time) []bool {
	idx := make([]int, len(bought))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(x, y int) int {
		tx, ty := at[x], at[y]
		if tx.IsZero() != ty.IsZero() {
			if tx.IsZero() {
				return 1
			}
			return -1
		}
		return tx.Compare(ty)
	})
	out := make([]bool, len(bought))
	for k, i := range idx {
		out[k] = bought[i]
	}
	return out
}

// patiently comes back as a says until another answer, ctx's end or until:
// again sends try number try (from 1) with the header given. The answer is
// the last, its Start the first's and Tries their number.
func patiently(ctx interface{ Done() <-chan struct{} }, a Answer, until time.Time, shopHeaders bool, again func(try int, header []string) Answer, header []string) Answer {
	first := a
	tries := 1
	for {
		wait, ok := comeBack(a, shopHeaders)
		wait = jitter(wait)
		if !ok || time.Now().Add(wait).After(until) {
			break
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			a.Start, a.Written, a.Arrived, a.Tries = first.Start, first.Written, first.Arrived, tries
			return a
		}
		header = withPlace(header, a, shopHeaders)
		a = again(tries, header)
		tries++
	}
	a.Start, a.Written, a.Arrived, a.Tries = first.Start, first.Written, first.Arrived, tries
	return a
}
