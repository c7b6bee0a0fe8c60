package loadgen

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestProfileSpreadsRequestsOverTheRun(t *testing.T) {
	constant := Profile{Rate: 100, Duration: 2 * time.Second}
	if n := constant.Requests(); n != 200 {
		t.Errorf("100/s for 2s schedules %d requests, want 200", n)
	}
	if at := constant.At(150); at != 1500*time.Millisecond {
		t.Errorf("request 150 of a constant 100/s is due at %v, want 1.5s", at)
	}
	spike := Profile{Rate: 1000, Duration: 3 * time.Second, RampUp: time.Second}
	// 500 arrive on the ramp (the area of the triangle), then 1000 a second.
	if n := spike.Requests(); n != 2500 {
		t.Errorf("a 1s ramp to 1000/s held to 3s schedules %d requests, want 2500", n)
	}
	if at := spike.At(500); at != time.Second {
		t.Errorf("the first request after the ramp is due at %v, want 1s", at)
	}
	if at := spike.At(125); at != 500*time.Millisecond {
		t.Errorf("a quarter of the ramp's requests have arrived at %v, want 0.5s (rate grows linearly)", at)
	}
	for i := 1; i < spike.Requests(); i++ {
		if spike.At(i) < spike.At(i-1) {
			t.Fatalf("request %d is due before request %d", i, i-1)
		}
	}
}

// A server that stalls for a second in the middle of the run: an open loop
// measured from each request's intended send time sees every request due
// during the stall wait (about half of them over 500 ms), where a tool
// that times from the actual send sees only the few its connections had
// in flight when the stall began: coordinated omission.
func TestOpenLoopCountsAStallAgainstEveryRequestDueDuringIt(t *testing.T) {
	var stallFrom, stallTo atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now().UnixNano()
		if from, to := stallFrom.Load(), stallTo.Load(); from != 0 && now >= from && now < to {
			time.Sleep(time.Duration(to - now))
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"code":"ok"}`))
	}))
	defer srv.Close()
	start := time.Now()
	stallFrom.Store(start.Add(time.Second).UnixNano())
	stallTo.Store(start.Add(2 * time.Second).UnixNano())
	r, err := Open(context.Background(), OpenOptions{
		Targets: []string{srv.URL}, Profile: Profile{Rate: 200, Duration: 3 * time.Second},
		Connections: 20, Timeout: 5 * time.Second, Record: true,
		Request: func(int) (string, []string) { return "/goods-stock/1", nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.OK != r.Scheduled {
		t.Fatalf("%d of %d answered ok: %+v", r.OK, r.Scheduled, r.ByCode)
	}
	var slow, slowService int
	for _, rec := range r.Records {
		if rec.Latency() > 500*time.Millisecond {
			slow++
		}
		if rec.End.Sub(rec.Sent) > 500*time.Millisecond {
			slowService++
		}
	}
	// ~200 requests are due during the stall, their waits spread over 0-1s.
	if slow < 70 || slow > 140 {
		t.Errorf("%d requests waited over 500 ms from their intended send time, want ~100", slow)
	}
	if slowService > 20 {
		t.Errorf("%d requests took over 500 ms from their actual send; at most the 20 connections' can", slowService)
	}
	if p99 := Ms(r.Latency, 99); p99 < 800 {
		t.Errorf("p99 from the intended send time is %.0f ms: the stall is hidden", p99)
	}
	if Ms(r.Service, 90) > 100 {
		t.Errorf("p90 from the actual send is %.0f ms: want it low, as a tool with coordinated omission reports", Ms(r.Service, 90))
	}
	if p99 := Ms(r.PoolWait, 99); p99 < 500 {
		t.Errorf("the connections were all busy during the stall, and requests waited for one %.0f ms at p99", p99)
	}
	if why := r.Behind(); why != "" {
		t.Errorf("every request was sent, and the run says it fell behind: %s", why)
	}
}

// A buyer who waits past its timeout closes its connection: the server
// sees the request's context end, and the run counts a client timeout.
func TestABuyerPastItsTimeoutLeaves(t *testing.T) {
	gone := make(chan struct{}, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Request-Timeout-Ms") == "" {
			t.Error("no X-Request-Timeout-Ms with SendTimeout")
		}
		select {
		case <-r.Context().Done():
			gone <- struct{}{}
		case <-time.After(5 * time.Second):
		}
	}))
	defer srv.Close()
	r, err := Open(context.Background(), OpenOptions{
		Targets: []string{srv.URL}, Profile: Profile{Rate: 20, Duration: 250 * time.Millisecond},
		Connections: 10, Timeout: 200 * time.Millisecond, SendTimeout: true,
		Request: func(int) (string, []string) { return "/goods-stock/1", nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.ClientTimeouts != r.Scheduled || r.Scheduled != 5 {
		t.Fatalf("%d client timeouts of %d scheduled, want all 5", r.ClientTimeouts, r.Scheduled)
	}
	for i := range r.Scheduled {
		select {
		case <-gone:
		case <-time.After(5 * time.Second):
			t.Fatalf("the server saw %d of %d buyers leave", i, r.Scheduled)
		}
	}
}

// With Target, each request goes where Target says when it is sent (a
// balancer that stops sending to a dead instance), and its record names
// that target.
func TestAnOpenLoopSendsWhereTargetSays(t *testing.T) {
	var served [2]atomic.Int64
	urls := make([]string, 2)
	for k := range urls {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			served[k].Add(1)
			w.Write([]byte(`{"code":"ok"}`))
		}))
		t.Cleanup(srv.Close)
		urls[k] = srv.URL
	}
	target := func(i int) string {
		if i < 10 {
			return urls[i%2]
		}
		return urls[0] // the second was dropped
	}
	var wrong atomic.Int64
	r, err := Open(context.Background(), OpenOptions{Profile: Profile{Rate: 200, Duration: 100 * time.Millisecond}, Connections: 4, Target: target,
		Request: func(int) (string, []string) { return "/goods-stock/1", nil },
		OnAnswer: func(rec Record) {
			if rec.Target != target(rec.Index) || rec.Err != nil {
				wrong.Add(1)
			}
		}})
	if err != nil || r.OK != 20 {
		t.Fatalf("%v, %d ok; want 20", err, r.OK)
	}
	if served[0].Load() != 15 || served[1].Load() != 5 || wrong.Load() != 0 {
		t.Errorf("served %d and %d (want 15 and 5), %d records with another target or an error", served[0].Load(), served[1].Load(), wrong.Load())
	}
}

// A patient buyer of an open loop that sends X-Request-Timeout-Ms comes
// back with one such header, its place and its own header pairs: as a
// standard client, after Retry-After with the place's cookie; with
// ShopHeaders, after X-Retry-After-Ms with X-Place.
func TestAPatientBuyerComesBackWithItsPlace(t *testing.T) {
	for _, shopHeaders := range []bool{false, true} {
		var mu sync.Mutex
		var seen [][]string
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			place := r.Header.Get("Cookie")
			if shopHeaders {
				place = r.Header.Get("X-Place")
			}
			seen = append(seen, []string{place, strconv.Itoa(len(r.Header.Values("X-Request-Timeout-Ms"))), r.Header.Get("X-User-ID")})
			n := len(seen)
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			if n < 3 {
				w.Header().Set("X-Place", "p"+strconv.Itoa(n))
				http.SetCookie(w, &http.Cookie{Name: "seckill_place_1", Value: "p" + strconv.Itoa(n), Path: "/goods-stock/1", HttpOnly: true})
				w.Header().Set("X-Retry-After-Ms", "10")
				w.Header().Set("Retry-After", "0") // a standard client comes back at once
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprint(w, `{"code":"queued","message":"wait"}`)
				return
			}
			fmt.Fprint(w, `{"code":"ok","message":"bought"}`)
		}))
		r, err := Open(context.Background(), OpenOptions{Targets: []string{srv.URL}, Profile: Profile{Rate: 10, Duration: 100 * time.Millisecond},
			SendTimeout: true, Patience: 10 * time.Second, Record: true, ShopHeaders: shopHeaders,
			Request: func(int) (string, []string) { return "/goods-stock/1", []string{"X-User-ID", "u1"} }})
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if r.OK != 1 || r.Retries != 2 || r.Records[0].Tries != 3 {
			t.Fatalf("shop headers %t: OK %d, retries %d, tries %d: want 1, 2, 3", shopHeaders, r.OK, r.Retries, r.Records[0].Tries)
		}
		want := [][]string{{"", "1", "u1"}, {"seckill_place_1=p1", "1", "u1"}, {"seckill_place_1=p2", "1", "u1"}}
		if shopHeaders {
			want = [][]string{{"", "1", "u1"}, {"p1", "1", "u1"}, {"p2", "1", "u1"}}
		}
		if fmt.Sprint(seen) != fmt.Sprint(want) {
			t.Errorf("shop headers %t: the requests sent (place, timeout headers, buyer): %v, want %v", shopHeaders, seen, want)
		}
	}
}
