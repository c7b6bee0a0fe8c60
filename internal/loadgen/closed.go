package loadgen

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// ClosedOptions is a closed-loop run: Concurrency buyers, each on
// keep-alive connections of its own (one per target), send requests one
// after another, each once its previous one was answered: a slow shop
// slows its buyers, which is what a closed loop measures and what an open
// loop (Open) does not let it do.
type ClosedOptions struct {
	Targets     []string // base URLs (http://host:port); request i goes to Targets[i%len]
	Requests    int
	Concurrency int
	// Ramp, if set, spreads the requests over it: request i is not sent
	// before Ramp·i/Requests after the start, unless the run is over (see
	// OnAnswer).
	Ramp time.Duration
	// Timeout bounds each exchange; 0: DefaultClosedTimeout.
	Timeout time.Duration
	// Request is request i's method, path and header pairs (name, value,
	// ...); nil: a purchase of goods 1.
	Request func(i int) (method, path string, header []string)
	// Patience, if set, makes each buyer patient: told to come back (503
	// queued or busy, 429), it sends the request again after the time the
	// shop said, with its place, to the next target, until another answer
	// or until Patience has passed since its first request (see comeBack).
	Patience time.Duration
	// ShopHeaders: a patient buyer reads the shop's own X-Retry-After-Ms
	// and X-Place instead of Retry-After and the cookie (see comeBack).
	ShopHeaders bool
	// OnAnswer, if set, is told of each request's answer (or failed
	// exchange), from the buyers' goroutines at once. It returns true once
	// the run has done what it is for (every goods sold out): the requests
	// still due on the ramp are then sent at once.
	OnAnswer func(i int, a Answer) (over bool)
}

// ClosedResult is what a closed loop saw.
type ClosedResult struct {
	Answers []Answer // by request; a request not sent (ctx ended) has a zero Answer
	Sent    int
	Start   time.Time
	// Elapsed is from the start to the last answer: the run's length for
	// its throughput, however long the ramp.
	Elapsed time.Duration
}

// Closed runs a closed loop until every request is answered or ctx ends.
func Closed(ctx context.Context, o ClosedOptions) *ClosedResult {
	if o.Timeout <= 0 {
		o.Timeout = DefaultClosedTimeout
	}
	request := o.Request
	if request == nil {
		request = func(int) (string, string, []string) { return http.MethodGet, "/goods-stock/1", nil }
	}
	r := &ClosedResult{Answers: make([]Answer, o.Requests), Start: time.Now()}
	var next, sent, last atomic.Int64 // last: the last answer, in ns since the start
	over := make(chan struct{})
	var closeOver sync.Once
	var wg sync.WaitGroup
	for range max(o.Concurrency, 1) {
		wg.Go(func() {
			conns := make([]*Conn, len(o.Targets))
			for k, base := range o.Targets {
				conns[k] = NewConn(base)
				defer conns[k].Close()
			}
			for {
				i := int(next.Add(1)) - 1
				if i >= o.Requests || ctx.Err() != nil {
					return
				}
				if o.Ramp > 0 {
					due := r.Start.Add(o.Ramp * time.Duration(i) / time.Duration(o.Requests))
					t := time.NewTimer(time.Until(due))
					select {
					case <-t.C:
					case <-over:
					case <-ctx.Done():
						t.Stop()
						return
					}
					t.Stop()
				}
				method, path, header := request(i)
				a := conns[i%len(conns)].DoBy(time.Now().Add(o.Timeout), method, path, header...)
				if o.Patience > 0 {
					a = patiently(ctx, a, a.Start.Add(o.Patience), o.ShopHeaders, func(try int, header2 []string) Answer {
						return conns[(i+try)%len(conns)].DoBy(time.Now().Add(o.Timeout), method, path, header2...)
					}, header)
				}
				r.Answers[i] = a
				sent.Add(1)
				for at := int64(a.End.Sub(r.Start)); ; {
					if l := last.Load(); at <= l || last.CompareAndSwap(l, at) {
						break
					}
				}
				if o.OnAnswer != nil && o.OnAnswer(i, a) {
					closeOver.Do(func() { close(over) })
				}
			}
		})
	}
	wg.Wait()
	r.Sent = int(sent.Load())
	r.Elapsed = time.Duration(last.Load())
	if r.Elapsed == 0 {
		r.Elapsed = time.Since(r.Start)
	}
	return r
}
