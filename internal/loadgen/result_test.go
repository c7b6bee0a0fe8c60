package loadgen

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestOversold(t *testing.T) {
	tests := []struct {
		succeeded, before, after, expired, want int
	}{
		{100, 100, 0, 0, 0},      // exact
		{1500, 100, 95, 0, 1495}, // the seed's overselling
		{40, 100, 60, 0, 0},      // fewer buyers than stock
		{0, 100, 100, 0, 0},
		{100, 100, 30, 30, 0}, // 30 orders expired during the run: their pieces came back, sold again
		{130, 100, 0, 30, 0},  // and were sold again
		{131, 100, 0, 30, 1},
	}
	for _, tt := range tests {
		if got := oversold(tt.succeeded, tt.before, tt.after, tt.expired); got != tt.want {
			t.Errorf("oversold(%d, %d, %d, expired %d) = %d, want %d", tt.succeeded, tt.before, tt.after, tt.expired, got, tt.want)
		}
	}
}

func TestPercentilesNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	got := percentiles(ds)
	want := Latency{P50: 50, P90: 90, P99: 99, Max: 100}
	if got != want {
		t.Fatalf("percentiles = %+v, want %+v", got, want)
	}
	if (percentiles(nil) != Latency{}) {
		t.Fatal("percentiles of nothing should be zero")
	}
	if got := percentiles([]time.Duration{7 * time.Millisecond}); got.P50 != 7 || got.P99 != 7 {
		t.Fatalf("one sample: %+v", got)
	}
}

func TestServerMetricsFromAScrape(t *testing.T) {
	scrape := func(text string) serverMetrics {
		m := serverMetrics{waitBuckets: map[float64]float64{}, outcomes: map[string]float64{}}
		if err := m.add(strings.NewReader(text)); err != nil {
			t.Fatal(err)
		}
		return m
	}
	before := scrape(`# HELP x
seckill_lock_wait_seconds_bucket{path="/Locks",le="0.001"} 0
seckill_lock_wait_seconds_bucket{path="/Locks",le="0.002"} 0
seckill_lock_wait_seconds_bucket{path="/Locks",le="0.004"} 0
seckill_lock_wait_seconds_bucket{path="/Locks",le="+Inf"} 0
seckill_purchases_total{goods="1",outcome="lock_lost",strategy="seed"} 1
`)
	after := scrape(`seckill_lock_wait_seconds_bucket{path="/Locks",le="0.001"} 50
seckill_lock_wait_seconds_bucket{path="/Locks",le="0.002"} 90
seckill_lock_wait_seconds_bucket{path="/Locks",le="0.004"} 100
seckill_lock_wait_seconds_bucket{path="/Locks",le="+Inf"} 100
seckill_purchases_total{goods="1",outcome="lock_lost",strategy="seed"} 3
seckill_purchases_total{goods="1",outcome="unavailable",strategy="seed"} 4
seckill_purchases_total{goods="-",outcome="unavailable",strategy="seed"} 1
`)
	d := after.minus(before)
	if got := d.waitQuantile(0.5); got != 0.001 {
		t.Errorf("p50 = %v, want 0.001 (the 50th of 100 waits is the last of the first bucket)", got)
	}
	if got := d.waitQuantile(0.99); math.Abs(got-0.0038) > 1e-9 {
		t.Errorf("p99 = %v, want 0.0038 (interpolated in the 2–4 ms bucket)", got)
	}
	if d.outcomes["lock_lost"] != 2 || d.outcomes["unavailable"] != 5 {
		t.Errorf("outcomes %v, want 2 lock_lost and 5 unavailable", d.outcomes)
	}
	if !math.IsNaN(before.minus(before).waitQuantile(0.5)) {
		t.Error("no waits should give NaN")
	}
}
