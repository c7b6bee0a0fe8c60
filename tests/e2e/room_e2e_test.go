package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/loadgen"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// The waiting room (room.enabled): past capacity a buyer gets a place in
// arrival order across the instances and is let in in that order.

// roomEnv is a room in front of a slow sale: the seed's purchase with a
// sleep of 0-100 ms under one lock, about 20 a second, so that a few
// hundred buyers a second are ten times what it sells.
var roomEnv = []e2e.Option{e2e.WithSetting("room.enabled", "true"), e2e.WithStrategy("seed"), e2e.WithMaxSleep(100 * time.Millisecond),
	e2e.WithQueueTarget(300 * time.Millisecond), e2e.WithSetting("purchase.maxWaiting", "5"), e2e.WithLogLevel("info"), e2e.WithPayTimeout(0)}

// Patient buyers, each alternating between two instances every time it
// comes back (a round-robin balancer), arrive at several times what the
// sale serves: the pieces go to the first arrivals, every buyer hears a
// last answer (bought or sold out), nobody is sold twice, nothing is
// oversold. Without the room (503 busy, no place) the buyers who come
// back compete with those arriving then, and the first arrivals' share
// falls (make bench-shop (k) measures both).
func TestTheWaitingRoomLetsBuyersInInArrivalOrderAcrossInstances(t *testing.T) {
	e2e.Integration(t)
	const stock, buyers, rate = 60, 400, 200.0
	s := e2e.NewStack(t, roomEnv...)
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", strconv.Itoa(stock), "--clear-orders")
	a, b := s.Serve(t), s.Serve(t)
	bases := []string{a.URL, b.URL}
	queued := 0
	r, err := loadgen.Open(context.Background(), loadgen.OpenOptions{
		Target:   func(i int) string { return bases[i%2] }, // request i's try k goes to bases[(i+k)%2]
		Profile:  loadgen.Profile{Rate: rate, Duration: time.Duration(float64(buyers) / rate * float64(time.Second))},
		Timeout:  10 * time.Second,
		Patience: 2 * time.Minute,
		Record:   true,
		Request: func(i int) (string, []string) {
			return "/goods-stock/1", []string{"X-User-ID", fmt.Sprintf("room-buyer-%d", i)}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	bought := make([]bool, len(r.Records))
	var answers []e2e.Answer
	for _, rec := range r.Records {
		answers = append(answers, rec.Answer)
		switch {
		case rec.Err != nil || rec.Sent.IsZero():
			t.Errorf("buyer %d: no last answer (%v)", rec.Index, rec.Err)
		case rec.Status == http.StatusOK:
			bought[rec.Index] = true
		case rec.Code != "sold_out":
			t.Errorf("buyer %d: last answer %d %s, want 200 or sold_out", rec.Index, rec.Status, rec.Code)
		}
		if rec.Tries > 1 {
			queued++
		}
	}
	f := loadgen.FairnessOf(bought)
	t.Logf("%d buyers at %.0f/s for %d pieces over two instances: %d came back (%d times in all); %d of the %d sold went to the first %d arrivals (%.0f%%)",
		buyers, rate, stock, queued, r.Retries, f.ToFirst, f.Sold, f.Sold, 100*f.Share())
	if f.Sold != stock {
		t.Errorf("%d sold, want %d", f.Sold, stock)
	}
	if queued == 0 {
		t.Error("no buyer was queued: the sale was not past capacity, the test proves nothing")
	}
	if f.Share() < 0.8 {
		t.Errorf("the first %d arrivals bought %.0f%% of the pieces, want at least 80%%", f.Sold, 100*f.Share())
	}
	s.CheckNoOversell(t, stock, answers...)
}

// A place that is not the buyer's own — forged, malformed, another
// buyer's, for another goods — is a new arrival, never an error that tells
// more: with nobody waiting the buyer simply buys.
func TestAPlaceNotTheBuyersOwnIsANewArrival(t *testing.T) {
	e2e.Integration(t)
	s := e2e.NewStack(t, roomEnv...)
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "10", "--clear-orders")
	in := s.Serve(t)
	for i, place := range []string{"p1.AAAAAQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "garbage", "p1.%%%", ""} {
		a := e2e.Ask(http.MethodGet, in.URL+"/goods-stock/1", "X-User-ID", fmt.Sprintf("p-%d", i), "X-Place", place,
			"Cookie", "seckill_place_1="+place)
		if a.Status != http.StatusOK {
			t.Errorf("a buyer with the place %q: %d %s, want 200 (a new arrival, nobody waiting)", place, a.Status, a.Code)
		}
	}
}

// Buyers before the sale's start get places in the pre-queue, are told to
// come back at the start, and then buy; nobody buys before the start.
func TestThePreQueueOpensAtTheStart(t *testing.T) {
	e2e.Integration(t)
	s := e2e.NewStack(t, roomEnv...)
	s.Shop(t, "migrate")
	start := time.Now().Add(3 * time.Second)
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "5", "--clear-orders", "--start", start.UTC().Format(time.RFC3339Nano))
	in := s.Serve(t)
	r := loadgen.Closed(context.Background(), loadgen.ClosedOptions{Targets: []string{in.URL}, Requests: 20, Concurrency: 20,
		Patience: time.Minute, Request: func(i int) (string, string, []string) {
			return http.MethodGet, "/goods-stock/1", []string{"X-User-ID", fmt.Sprintf("early-%d", i)}
		}})
	ok := 0
	for i, a := range r.Answers {
		switch {
		case a.Status == http.StatusOK:
			ok++
			if a.End.Before(start) {
				t.Errorf("buyer %d bought at %v, before the start %v", i, a.End, start)
			}
		case a.Code != "sold_out":
			t.Errorf("buyer %d: %d %s, want 200 or sold_out", i, a.Status, a.Code)
		}
		if a.Tries < 2 {
			t.Errorf("buyer %d answered at once (%d %s): before the start it should have had a place", i, a.Status, a.Code)
		}
	}
	if ok != 5 {
		t.Errorf("%d bought, want the 5 pieces sold", ok)
	}
	s.CheckNoOversell(t, 5, r.Answers...)
}
