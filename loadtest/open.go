package main

import (
	"fmt"

	"github.com/seckill-zk/seckill-zk/internal/loadgen"
)

// openRows are the table's lines of an open loop.
func openRows(line func(name string, f func(r *loadgen.Result) string) []string) [][]string {
	open := func(f func(o *loadgen.OpenSummary) string) func(r *loadgen.Result) string {
		return func(r *loadgen.Result) string {
			if r.Open == nil {
				return "-"
			}
			return f(r.Open)
		}
	}
	lat := func(l loadgen.Latency) string { return fmt.Sprintf("%.0f / %.0f / %.0f", l.P50, l.P90, l.P99) }
	return [][]string{
		line("offered -> sent (req/s)", open(func(o *loadgen.OpenSummary) string { return fmt.Sprintf("%.0f -> %.0f", o.Offered, o.Achieved) })),
		line("goodput (200/s: due window / whole run)", func(r *loadgen.Result) string {
			if r.Open == nil || r.Seconds <= 0 {
				return "-"
			}
			return fmt.Sprintf("%.0f / %.0f", r.Open.Goodput, float64(r.Succeeded)/r.Seconds)
		}),
		line("200s p50/p90/p99 (ms, from due time)", open(func(o *loadgen.OpenSummary) string { return lat(o.OK) })),
		line("429/503 p50/p90/p99 (ms, from due time)", open(func(o *loadgen.OpenSummary) string { return lat(o.Refused) })),
		line("all p99 from send (ms, uncorrected)", open(func(o *loadgen.OpenSummary) string { return fmt.Sprintf("%.0f", o.Service.P99) })),
		line("client timeouts / never sent", open(func(o *loadgen.OpenSummary) string { return fmt.Sprintf("%d / %d", o.ClientTimeouts, o.NotSent) })),
		line("sold to buyers who had gone", func(r *loadgen.Result) string { return fmt.Sprint(r.SoldToGone) }),
	}
}

// openLabel is an open loop's default label.
func openLabel(o loadgen.RunOptions) string {
	if o.RampUp > 0 {
		return fmt.Sprintf("0 to %.0f/s in %v, for %v", o.Rate, o.RampUp, o.Duration)
	}
	return fmt.Sprintf("%.0f/s for %v", o.Rate, o.Duration)
}

// behindNote is the line a run prints when its generator did not keep the
// rate, or "".
func behindNote(r *loadgen.Result) string {
	if r.Open == nil || r.Open.Behind == "" {
		return ""
	}
	return fmt.Sprintf("%s: the load generator did not keep the rate: %s", r.Label, r.Open.Behind)
}
