package loadgen

import (
	"context"
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
	// SendTimeout: each buyer told the shop its deadline
	// (X-Request-Timeout-Ms), so the shop sold nothing to one after it left.
	SendTimeout bool `json:"sendTimeout"`
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
func openLoop(ctx context.Context, o RunOptions, send func(i int) (gi int, path string, header []string),
	answered func(gi, status int, code string), final func(int, Answer), c *counters, r *Result) (*OpenResult, error) {
	profile := Profile{Rate: o.Rate, Duration: o.Duration, RampUp: o.RampUp}
	goodsOf := make([]int, profile.Requests())
	res, err := Open(ctx, OpenOptions{
		Targets: o.Targets, Profile: profile, Connections: o.Connections, Timeout: o.Timeout, SendTimeout: o.SendTimeout, Patience: o.Patience, ShopHeaders: o.ShopHeaders,
		Request: func(i int) (string, []string) {
			gi, path, header := send(i)
			goodsOf[i] = gi
			return path, header
		},
		OnAnswer: func(rec Record) {
			if rec.Sent.IsZero() {
				return
			}
			final(rec.Index, rec.Answer)
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
		NotSent: res.NotSent, ClientTimeouts: res.ClientTimeouts, SendTimeout: o.SendTimeout, Behind: res.Behind(),
		OK: hist(res.OKLatency), Refused: hist(res.RefusedLatency), Service: hist(res.Service),
		PoolWaitP99: Ms(res.PoolWait, 99),
	}
	r.openLatency = hist(res.Latency)
	return res, err
}
