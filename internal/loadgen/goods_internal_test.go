package loadgen

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// A goods read for after the run waits for a count of the orders made
// after since: the shop answers with a count up to a second old, and the
// old count (before the run's purchases) would say orders are missing.
func TestAGoodsReadWaitsForACountAfterSince(t *testing.T) {
	var reads atomic.Int64
	since := time.Now()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if reads.Add(1) == 1 { // counted 900 ms ago, before since: 3 orders then
			_, _ = w.Write([]byte(`{"code":"ok","stock":5,"orders":3,"ordersAgeMs":900}`))
			return
		}
		_, _ = w.Write([]byte(`{"code":"ok","stock":5,"orders":5,"ordersAgeMs":0}`))
	}))
	defer srv.Close()
	g, err := readGoods(context.Background(), srv.Client(), srv.URL, 1, since)
	if err != nil {
		t.Fatal(err)
	}
	if *g.Orders != 5 || reads.Load() != 2 {
		t.Errorf("%d orders after %d reads, want the fresh count (5) after 2", *g.Orders, reads.Load())
	}
}
