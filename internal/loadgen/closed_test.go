package loadgen

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// A closed loop sends every request once, round-robin over its targets,
// at most Concurrency at a time: a slow server slows its buyers.
func TestAClosedLoopIsPacedByItsAnswers(t *testing.T) {
	var inFlight, most, served [2]atomic.Int64
	servers := make([]string, 2)
	for k := range servers {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			n := inFlight[k].Add(1)
			defer inFlight[k].Add(-1)
			for m := most[k].Load(); n > m && !most[k].CompareAndSwap(m, n); m = most[k].Load() {
			}
			served[k].Add(1)
			time.Sleep(5 * time.Millisecond)
			fmt.Fprintf(w, `{"code":"ok","path":%q}`, r.URL.Path)
		}))
		t.Cleanup(srv.Close)
		servers[k] = srv.URL
	}
	var answered atomic.Int64
	r := Closed(context.Background(), ClosedOptions{Targets: servers, Requests: 40, Concurrency: 4,
		Request:  func(i int) (string, string, []string) { return http.MethodGet, fmt.Sprint("/r/", i), nil },
		OnAnswer: func(int, Answer) bool { answered.Add(1); return false }})
	if r.Sent != 40 || answered.Load() != 40 {
		t.Fatalf("sent %d, told of %d answers; want 40", r.Sent, answered.Load())
	}
	for i, a := range r.Answers {
		if a.Err != nil || a.Code != "ok" || !bytes.Contains(a.Body, []byte(fmt.Sprintf(`"/r/%d"`, i))) {
			t.Errorf("request %d: %+v", i, a)
		}
	}
	for k := range servers {
		if served[k].Load() != 20 || most[k].Load() > 4 {
			t.Errorf("server %d served %d (want 20), at most %d at once (want at most 4)", k, served[k].Load(), most[k].Load())
		}
	}
	if r.Elapsed < 10*5*time.Millisecond {
		t.Errorf("40 requests of 5 ms, 4 at a time, took %v: not a closed loop", r.Elapsed)
	}
}

// On a ramp the requests are spread out, until OnAnswer says the run is
// over: those still due are then sent at once.
func TestAClosedLoopsRampEndsWhenTheRunIsOver(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"code":"sold_out"}`) }))
	t.Cleanup(srv.Close)
	start := time.Now()
	r := Closed(context.Background(), ClosedOptions{Targets: []string{srv.URL}, Requests: 20, Concurrency: 2, Ramp: time.Hour,
		OnAnswer: func(_ int, a Answer) bool { return a.Code == "sold_out" }})
	if r.Sent != 20 || time.Since(start) > time.Minute {
		t.Errorf("sent %d in %v; want all 20 at once once the run was over", r.Sent, time.Since(start))
	}
}

// Fairness goes by arrival, not by the buyers' numbering: bought in the
// order of when each buyer arrived, a buyer with no arrival (never sent)
// last; by the shop's X-Arrived-At where it said, else by when the request
// was written.
func TestFairnessGoesByArrival(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := []time.Time{t0.Add(3 * time.Millisecond), {}, t0.Add(time.Millisecond), t0.Add(2 * time.Millisecond)}
	bought := []bool{false, true, true, true}
	got := InArrivalOrder(bought, at)
	if fmt.Sprint(got) != fmt.Sprint([]bool{true, true, false, true}) {
		t.Errorf("in arrival order: %v, want [true true false true]", got)
	}
	if f := FairnessOf(got); f.Sold != 3 || f.ToFirst != 2 {
		t.Errorf("fairness %+v, want 2 of 3 to the first 3 arrivals", f)
	}
	written := Answer{Written: t0}
	if ArrivalOf(written) != t0 || ArrivalOf(Answer{Written: t0, Arrived: t0.Add(time.Second)}) != t0.Add(time.Second) {
		t.Error("ArrivalOf: the shop's arrival first, the write's without it")
	}
}
