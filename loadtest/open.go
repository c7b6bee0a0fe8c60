package main

import (
	"context"
	"fmt"

	"github.com/seckill-zk/seckill-zk/internal/loadgen"
)

// OpenSummary is what an open loop (--rate) adds to a run's result: the
// rate asked and the rate kept, and latency taken from each request's
// intended send time (wrk2's correction of coordinated omission).
type OpenSummary struct {
	Rate        float64 `json:"rate"` // asked, requests a second (after the ramp)
	Seconds     float64 `json:"seconds"`
	RampUp      float64 `json:"rampUpSeconds"`
	Connections int     `json:"connections"`
	Offered     float64 `json:"offered"`  // requests scheduled a second, over the run
	Achieved    float64 `json:"achieved"` // requests sent a second
	Goodput     float64 `json:"goodput"`  // 200s a second
	// NotSent: due while every connection was busy, until the buyer's
	// timeout; ClientTimeouts: sent, no answer in time. Both are buyers
	// who left.
	NotSent        int `json:"notSent"`
	ClientTimeouts int `json:"clientTimeouts"`
	// Behind says why the generator did not offer the rate, or is empty.
	Behind string `json:"behind,omitempty"`
	// OK and Refused (429 and 503) latency from the intended send time;
	// Service every answer's from the actual send (what a tool without the
	// correction would report); PoolWaitP99 how long due requests waited
	// for a connection.
	OK          Latency `json:"okLatencyMs"`
	Refused     Latency `json:"refusedLatencyMs"`
	Service     Latency `json:"serviceLatencyMs"`
	PoolWaitP99 float64 `json:"poolWaitP99Ms"`
}

// openLoop sends the purchases of o's profile on their schedule over a
// fixed pool of connections, whatever the answers' pace.
func openLoop(ctx context.Context, o Options, send func(i int) (gi int, path string, header []string),
	answered func(gi, status int, code string), c *counters, r *Result) (*loadgen.OpenResult, error) {
	profile := loadgen.Profile{Rate: o.Rate, Duration: o.Duration, RampUp: o.RampUp}
	goodsOf := make([]int, profile.Requests())
	res, err := loadgen.Open(ctx, loadgen.OpenOptions{
		Targets: o.Targets, Profile: profile, Connections: o.Connections, Timeout: o.Timeout, SendTimeout: o.SendTimeout,
		Request: func(i int) (string, []string) {
			gi, path, header := send(i)
			goodsOf[i] = gi
			return path, header
		},
		OnAnswer: func(rec loadgen.Record) {
			if rec.Sent.IsZero() {
				return
			}
			c.sent.Add(1)
			if rec.Err != nil {
				c.transport.Add(1)
				return
			}
			answered(goodsOf[rec.Index], rec.Status, rec.Code)
		},
	})
	if res == nil {
		return nil, err
	}
	hist := func(h interface{ ValueAtQuantile(float64) int64 }) Latency {
		q := func(p float64) float64 { return float64(h.ValueAtQuantile(p)) / 1000 }
		return Latency{P50: q(50), P90: q(90), P99: q(99), Max: q(100)}
	}
	r.Open = &OpenSummary{
		Rate: o.Rate, Seconds: o.Duration.Seconds(), RampUp: o.RampUp.Seconds(), Connections: o.Connections,
		Offered: res.Offered(), Achieved: res.Achieved(), Goodput: res.Goodput(),
		NotSent: res.NotSent, ClientTimeouts: res.ClientTimeouts, Behind: res.Behind(),
		OK: hist(res.OKLatency), Refused: hist(res.RefusedLatency), Service: hist(res.Service),
		PoolWaitP99: loadgen.Ms(res.PoolWait, 99),
	}
	r.openLatency = hist(res.Latency)
	return res, err
}

// openRows are the table's lines of an open loop.
func openRows(line func(name string, f func(r *Result) string) []string) [][]string {
	open := func(f func(o *OpenSummary) string) func(r *Result) string {
		return func(r *Result) string {
			if r.Open == nil {
				return "-"
			}
			return f(r.Open)
		}
	}
	lat := func(l Latency) string { return fmt.Sprintf("%.0f / %.0f / %.0f", l.P50, l.P90, l.P99) }
	return [][]string{
		line("offered -> sent (req/s)", open(func(o *OpenSummary) string { return fmt.Sprintf("%.0f -> %.0f", o.Offered, o.Achieved) })),
		line("goodput (200/s)", open(func(o *OpenSummary) string { return fmt.Sprintf("%.0f", o.Goodput) })),
		line("200s p50/p90/p99 (ms, from due time)", open(func(o *OpenSummary) string { return lat(o.OK) })),
		line("429/503 p50/p90/p99 (ms, from due time)", open(func(o *OpenSummary) string { return lat(o.Refused) })),
		line("all p99 from send (ms, uncorrected)", open(func(o *OpenSummary) string { return fmt.Sprintf("%.0f", o.Service.P99) })),
		line("client timeouts / never sent", open(func(o *OpenSummary) string { return fmt.Sprintf("%d / %d", o.ClientTimeouts, o.NotSent) })),
		line("sold to buyers who had gone", func(r *Result) string { return fmt.Sprint(r.SoldToGone) }),
	}
}

// openLabel is an open loop's default label.
func openLabel(o Options) string {
	if o.RampUp > 0 {
		return fmt.Sprintf("0 to %.0f/s in %v, for %v", o.Rate, o.RampUp, o.Duration)
	}
	return fmt.Sprintf("%.0f/s for %v", o.Rate, o.Duration)
}

// behindNote is the line a run prints when its generator did not keep the
// rate, or "".
func behindNote(r *Result) string {
	if r.Open == nil || r.Open.Behind == "" {
		return ""
	}
	return fmt.Sprintf("%s: the load generator did not keep the rate: %s", r.Label, r.Open.Behind)
}
