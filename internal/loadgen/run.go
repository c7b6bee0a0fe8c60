package loadgen

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/api"
	"github.com/seckill-zk/seckill-zk/internal/crowd"
)

// The load tools' defaults, one place for bin/loadtest's flags and the
// engine's zero values alike.
const (
	// DefaultClosedTimeout bounds a closed loop's exchange: a safety net
	// for a buyer stuck behind a lock, not a buyer's patience.
	DefaultClosedTimeout = 5 * time.Minute
	// DefaultOpenTimeout is an open loop's buyer's patience, from the
	// request's due time.
	DefaultOpenTimeout = 5 * time.Second
	// DefaultConnections bounds an open loop's keep-alive connections.
	DefaultConnections = 2000
)

// RunOptions is a load run of the load tester: a closed loop, or an open
// one with Rate, and what it reads of the shop around it.
type RunOptions struct {
	Label   string
	Targets []string // base URLs, used round-robin
	// Goods is the set of goods bought (at least one); Skew spreads the
	// requests over it: "uniform" (or empty) or "zipf:S", the first goods
	// the hottest. Seed makes the spread repeatable.
	Goods []int32
	Skew  string
	Seed  uint64
	// RequestIDs gives request i the X-Request-ID RequestIDs-i (the shop
	// stores it on the order row, where it is unique); empty: none sent.
	RequestIDs  string
	Requests    int
	Concurrency int
	Ramp        time.Duration // workers start spread over this long
	Timeout     time.Duration // per request
	MaxDuration time.Duration // the whole run
	Sample      time.Duration // stock sampling interval
	// Buyers, when above 0, makes the run a crowd of that many buyers:
	// request i is buyer i mod Buyers (X-User-ID buyer-N), so with more
	// requests than buyers some buyers try more than once, and the shop's
	// one-per-buyer rule answers their repeats already_bought.
	Buyers int
	// Token, when set, gives a buyer its bearer token (a shop with
	// auth.mode jwt): every request then has a buyer, buyer-N with Buyers,
	// else one of its own (buyer-i), named by the token alone. The tokens
	// are made before the first request.
	Token       func(buyer string) (string, error)
	Progress    io.Writer // nil: no progress bar
	Interactive bool      // redraw the progress bar in place
	// Rate, when above 0, makes the run an open loop: purchases arrive at
	// Rate a second for Duration (the rate growing from 0 over RampUp
	// first), each sent when due on one of Connections keep-alive
	// connections whatever the answers' pace, each buyer gone Timeout
	// after it was due; Requests is then the profile's, and Concurrency
	// and Ramp are unused. SendTimeout sends X-Request-Timeout-Ms.
	Rate        float64
	Duration    time.Duration
	RampUp      time.Duration
	Connections int
	SendTimeout bool
	// Patience makes the buyers patient (ClosedOptions.Patience,
	// OpenOptions.Patience): told to come back, a buyer comes back with
	// its place until then. An anonymous buyer then sends a request id of
	// its own (RequestIDs, made if empty): the shop keeps a place only for
	// a buyer it can name. The result then says how fair the sale was
	// (Result.Fair).
	Patience time.Duration
	// ShopHeaders: patient buyers read X-Retry-After-Ms and X-Place, the
	// shop's own headers, instead of Retry-After and the place's cookie.
	ShopHeaders bool
}

// goods is the shop's answer to GET /goods/{goodsNo}.
type goods struct {
	Code           string         `json:"code"`
	Stock          *int           `json:"stock"`
	Orders         *int           `json:"orders"`
	OrdersByStatus map[string]int `json:"ordersByStatus"` // absent before order states: nothing expired
	OrdersAgeMs    int64          `json:"ordersAgeMs"`    // how old the counts are (absent: fresh)
}

type counters struct {
	sent, succeeded, soldOut, transport atomic.Int64
}

// Run fires the purchases and measures them. It stops by itself: after
// Requests requests, or MaxDuration, or when ctx ends.
func Run(ctx context.Context, o RunOptions) (*Result, error) {
	if o.Patience > 0 && o.RequestIDs == "" && o.Buyers == 0 && o.Token == nil {
		// An anonymous patient buyer is named by its request id.
		o.RequestIDs = "patient-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	ctx, cancel := context.WithTimeout(ctx, o.MaxDuration)
	defer cancel()
	client := &http.Client{
		Timeout: o.Timeout,
		Transport: &http.Transport{
			MaxIdleConnsPerHost: o.Concurrency,
			IdleConnTimeout:     30 * time.Second,
			DisableCompression:  true,
		},
	}
	defer client.CloseIdleConnections()

	if len(o.Goods) == 0 {
		return nil, fmt.Errorf("no goods to buy")
	}
	pick, err := crowd.NewPicker(o.Goods, o.Skew, o.Seed)
	if err != nil {
		return nil, err
	}
	var tokens []string // by buyer: request i is buyer i mod len(tokens)
	if o.Token != nil {
		n := o.Requests
		if o.Buyers > 0 {
			n = min(o.Buyers, o.Requests)
		}
		tokens = make([]string, n)
		for b := range tokens {
			if tokens[b], err = o.Token(fmt.Sprint("buyer-", b)); err != nil {
				return nil, fmt.Errorf("a token for buyer-%d: %w", b, err)
			}
		}
	}
	before, err := readAllGoods(ctx, client, o.Targets[0], o.Goods, time.Now())
	if err != nil {
		return nil, fmt.Errorf("stock before the run: %w", err)
	}
	r := &Result{
		Label: o.Label, Targets: o.Targets, GoodsNo: int(o.Goods[0]), Requests: o.Requests, Concurrency: o.Concurrency, Buyers: o.Buyers,
		ByStatus: map[string]int{}, ByCode: map[string]int{},
	}
	if len(o.Goods) > 1 {
		r.Goods, r.Skew = o.Goods, cmp.Or(o.Skew, "uniform")
	}
	r.perGoods(o.Goods, before, before, make([]int, len(o.Goods)), make([]int, len(o.Goods)))
	requestsOf := make([]atomic.Int64, len(o.Goods))
	succeededOf := make([]atomic.Int64, len(o.Goods))

	metricsBefore, haveMetrics := scrapeMetrics(ctx, client, o.Targets)

	var c counters
	var mu sync.Mutex             // guards r.ByStatus, r.ByCode
	var latencies []time.Duration // the closed loop's, by request
	if o.Rate <= 0 {
		latencies = make([]time.Duration, o.Requests)
	}
	start := time.Now()

	sampled := make(chan []Sample, 1)
	stopSampling := make(chan struct{})
	go func() { sampled <- sample(ctx, client, o, r.OrdersBefore, start, &c, stopSampling) }()
	progressDone := make(chan struct{})
	stopProgress := make(chan struct{})
	go func() { defer close(progressDone); progress(o, &c, start, stopProgress) }()

	var elapsed time.Duration
	var open *OpenResult
	// send is purchase i: its goods (an index of o.Goods), its path and
	// its header pairs; it goes to target i mod len(o.Targets).
	send := func(i int) (gi int, path string, header []string) {
		gi = pick.Index(i)
		requestsOf[gi].Add(1)
		switch {
		case tokens != nil:
			header = append(header, "Authorization", "Bearer "+tokens[i%len(tokens)])
		case o.Buyers > 0:
			header = append(header, "X-User-ID", fmt.Sprint("buyer-", i%o.Buyers))
		}
		if o.RequestIDs != "" {
			header = append(header, "X-Request-ID", o.RequestIDs+"-"+strconv.Itoa(i))
		}
		return gi, fmt.Sprintf("/goods-stock/%d", o.Goods[gi]), header
	}
	answered := func(gi, status int, code string) {
		switch {
		case status == http.StatusOK:
			c.succeeded.Add(1)
			succeededOf[gi].Add(1)
		case status == http.StatusConflict && code == api.SoldOut:
			c.soldOut.Add(1)
		}
		mu.Lock()
		r.ByStatus[strconv.Itoa(status)]++
		r.ByCode[code]++
		mu.Unlock()
	}
	n := o.Requests
	if o.Rate > 0 {
		n = Profile{Rate: o.Rate, Duration: o.Duration, RampUp: o.RampUp}.Requests()
	}
	bought := make([]bool, n) // by buyer, and when each arrived: the fairness of the sale
	arrived := make([]time.Time, n)
	var retries atomic.Int64
	final := func(i int, a Answer) {
		if i < len(bought) && a.Err == nil && a.Status == http.StatusOK && a.Code == api.OK {
			bought[i] = true
		}
		if i < len(arrived) {
			arrived[i] = ArrivalOf(a)
		}
		retries.Add(int64(max(a.Tries-1, 0)))
	}
	if o.Rate > 0 {
		open, err = openLoop(ctx, o, send, answered, final, &c, r)
		if open == nil {
			return nil, err
		}
		elapsed = open.Elapsed
	} else {
		elapsed = closedLoop(ctx, o, latencies, send, answered, final, &c)
	}
	if o.Patience > 0 {
		f := FairnessOf(InArrivalOrder(bought, arrived))
		r.Fair = &FairSummary{Patience: o.Patience.Seconds(), Sold: f.Sold, ToFirst: f.ToFirst, Share: f.Share(), Retries: int(retries.Load())}
	}
	close(stopProgress)
	<-progressDone
	close(stopSampling)
	// The state before the first request, then what the sampler saw (its
	// first read may come late on a flooded server), then the state after.
	r.Samples = append([]Sample{{T: 0, Stock: r.StockBefore}}, <-sampled...)

	after, err := readAllGoods(context.WithoutCancel(ctx), client, o.Targets[0], o.Goods, time.Now())
	if err != nil {
		return nil, fmt.Errorf("stock after the run: %w", err)
	}
	if open != nil {
		// Buyers who gave up may still be sold to after they left: the
		// count waits for the order rows to settle.
		if after, err = settle(context.WithoutCancel(ctx), client, o, after); err != nil {
			return nil, fmt.Errorf("stock after the run: %w", err)
		}
	}
	r.Sent, r.Succeeded, r.SoldOut, r.TransportErrors = int(c.sent.Load()), int(c.succeeded.Load()), int(c.soldOut.Load()), int(c.transport.Load())
	reqs, oks := make([]int, len(o.Goods)), make([]int, len(o.Goods))
	for i := range o.Goods {
		reqs[i], oks[i] = int(requestsOf[i].Load()), int(succeededOf[i].Load())
	}
	r.perGoods(o.Goods, before, after, reqs, oks)
	if len(o.Goods) == 1 {
		r.PerGoods = nil // the totals are the goods'
	}
	if haveMetrics {
		if after, ok := scrapeMetrics(context.WithoutCancel(ctx), client, o.Targets); ok {
			d := after.minus(metricsBefore)
			r.ServerMetrics = true
			if p50, p99 := d.waitQuantile(0.5), d.waitQuantile(0.99); !math.IsNaN(p50) {
				r.LockWaitP50, r.LockWaitP99 = p50*1000, p99*1000
			}
			r.LockLost, r.Unavailable = int(d.outcomes[api.LockLost]), int(d.outcomes[api.Unavailable])
		}
	}
	sent := min(r.Sent, len(latencies))
	r.finish(latencies[:sent], elapsed)
	if open != nil {
		r.Latency = r.openLatency
	}
	r.Samples = append(r.Samples, Sample{T: elapsed.Seconds(), Stock: r.StockAfter, Orders: r.OrdersAfter - r.OrdersBefore, Succeeded: r.Succeeded})
	if errors.Is(ctx.Err(), context.DeadlineExceeded) && r.Sent < r.Requests {
		return r, fmt.Errorf("stopped after %v (--max-duration) with %d of %d requests sent", o.MaxDuration, r.Sent, r.Requests)
	}
	return r, nil
}

// closedLoop sends o.Requests purchases, o.Concurrency at a time, through
// the load engine's closed loop: each buyer sends its next purchase once
// the last is answered. With a ramp, purchase i is not sent before start +
// Ramp*i/Requests: the buyers arrive spread over the ramp, however fast the
// answers come; once every goods has answered sold out the sale is over,
// and the purchases still due are sent at once (a ramp longer than the sale
// does not stretch the run). It returns the time from its start to the last
// answer.
func closedLoop(ctx context.Context, o RunOptions, latencies []time.Duration,
	send func(i int) (gi int, path string, header []string), answered func(gi, status int, code string), final func(int, Answer), c *counters) time.Duration {
	soldOut := make([]atomic.Bool, len(o.Goods))
	var goodsOut atomic.Int64
	goodsOf := make([]int, o.Requests)
	res := Closed(ctx, ClosedOptions{
		Targets: o.Targets, Requests: o.Requests, Concurrency: o.Concurrency, Ramp: o.Ramp, Timeout: o.Timeout, Patience: o.Patience, ShopHeaders: o.ShopHeaders,
		Request: func(i int) (string, string, []string) {
			gi, path, header := send(i)
			goodsOf[i] = gi
			return http.MethodGet, path, header
		},
		OnAnswer: func(i int, a Answer) bool {
			latencies[i] = a.End.Sub(a.Start)
			final(i, a)
			c.sent.Add(1)
			if a.Err != nil {
				c.transport.Add(1)
				return false
			}
			gi := goodsOf[i]
			answered(gi, a.Status, a.Code)
			return a.Code == api.SoldOut && !soldOut[gi].Swap(true) && int(goodsOut.Add(1)) == len(soldOut)
		},
	})
	return res.Elapsed
}

// settle reads the goods again every 250 ms until two reads agree on their
// order rows (at most 10 s): the purchases still under way when the last
// buyer left have then been written or not.
func settle(ctx context.Context, client *http.Client, o RunOptions, last []goods) ([]goods, error) {
	orders := func(gs []goods) (n int) {
		for _, g := range gs {
			n += *g.Orders
		}
		return n
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(250 * time.Millisecond)
		now, err := readAllGoods(ctx, client, o.Targets[0], o.Goods, time.Now())
		if err != nil {
			return nil, err
		}
		if orders(now) == orders(last) {
			return now, nil
		}
		last = now
	}
	return last, nil
}

// sample reads the stock every o.Sample until stopped, for the chart: the
// goods', or with many goods their sum (then at most once a second, each
// sample reading them all).
func sample(ctx context.Context, client *http.Client, o RunOptions, ordersBefore int, start time.Time, c *counters, stop <-chan struct{}) []Sample {
	var out []Sample
	every := o.Sample
	if len(o.Goods) > 1 {
		every = max(every, time.Second)
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if gs, err := readAllGoods(ctx, client, o.Targets[0], o.Goods, time.Time{}); err == nil {
			s := Sample{T: time.Since(start).Seconds(), Orders: -ordersBefore, Succeeded: int(c.succeeded.Load())}
			for _, g := range gs {
				s.Stock += *g.Stock
				s.Orders += *g.Orders
			}
			out = append(out, s)
		}
		select {
		case <-t.C:
		case <-stop:
			return out
		case <-ctx.Done():
			return out
		}
	}
}

// progress draws a bar on o.Progress until stopped.
func progress(o RunOptions, c *counters, start time.Time, stop <-chan struct{}) {
	if o.Progress == nil {
		return
	}
	every := 2 * time.Second
	if o.Interactive {
		every = 200 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	draw := func(final bool) {
		sent := int(c.sent.Load())
		const width = 30
		filled := width * sent / max(o.Requests, 1)
		bar := fmt.Sprintf("[%-*s]", width, strings.Repeat("#", filled))
		rate := float64(sent) / max(time.Since(start).Seconds(), 0.001)
		line := fmt.Sprintf("%s %s %d/%d  ok %d  sold-out %d  errors %d  %.0f req/s",
			o.Label, bar, sent, o.Requests, c.succeeded.Load(), c.soldOut.Load(), c.transport.Load(), rate)
		switch {
		case o.Interactive && final:
			fmt.Fprintf(o.Progress, "\r%s\n", line)
		case o.Interactive:
			fmt.Fprintf(o.Progress, "\r%s", line)
		default:
			fmt.Fprintln(o.Progress, line)
		}
	}
	for {
		select {
		case <-t.C:
			draw(false)
		case <-stop:
			draw(true)
			return
		}
	}
}
