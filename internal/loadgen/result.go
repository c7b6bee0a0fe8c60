package loadgen

import (
	"fmt"
	"slices"
	"time"
)

// Result is what one load run (Run) saw. The JSON form is what the load
// tester's --json prints and what `loadtest compare` reads.
type Result struct {
	Label   string   `json:"label"`
	Targets []string `json:"targets"`
	GoodsNo int      `json:"goodsNo"` // the first goods of the set
	// Goods and Skew: the set of goods bought and how the requests were
	// spread over it, when there were several; PerGoods is each one's
	// figures then. The stock and order figures below are their sums.
	Goods       []int32       `json:"goods,omitempty"`
	Skew        string        `json:"skew,omitempty"`
	PerGoods    []GoodsResult `json:"perGoods,omitempty"`
	Requests    int           `json:"requests"`
	Concurrency int           `json:"concurrency"`
	// Fair: with patient buyers, how first come, first served the sale was.
	Fair *FairSummary `json:"fair,omitempty"`

	Sent            int            `json:"sent"`
	Succeeded       int            `json:"succeeded"`
	SoldOut         int            `json:"soldOut"`
	Buyers          int            `json:"buyers,omitempty"` // distinct buyer ids; 0: anonymous
	ByStatus        map[string]int `json:"byStatus"`
	ByCode          map[string]int `json:"byCode"`
	TransportErrors int            `json:"transportErrors"`

	Seconds    float64 `json:"seconds"`
	Throughput float64 `json:"throughput"` // answered requests per second
	Latency    Latency `json:"latencyMs"`

	StockBefore   int `json:"stockBefore"`
	StockAfter    int `json:"stockAfter"`
	OrdersBefore  int `json:"ordersBefore"`
	OrdersAfter   int `json:"ordersAfter"`
	OrdersCreated int `json:"ordersCreated"`
	// Expired is how many orders expired during the run (the shop's sweeper
	// returned their pieces to the stock).
	ExpiredBefore int `json:"expiredBefore"`
	ExpiredAfter  int `json:"expiredAfter"`
	Expired       int `json:"expired"`
	// Oversold = succeeded - (stock before - stock after + expired): sales
	// the stock column does not account for, counting the pieces expired
	// orders gave back.
	Oversold int `json:"oversold"`

	// What the shops' /metrics say of the run (when they have it): the
	// lock wait's p50 and p99 in milliseconds, and the purchases answered
	// lock_lost and unavailable, summed over the targets.
	ServerMetrics bool    `json:"serverMetrics"`
	LockWaitP50   float64 `json:"lockWaitP50Ms,omitempty"`
	LockWaitP99   float64 `json:"lockWaitP99Ms,omitempty"`
	LockLost      int     `json:"lockLost"`
	Unavailable   int     `json:"unavailable"`

	Samples []Sample `json:"samples"`

	// SoldToGone is the order rows beyond the 200s: sales whose buyer
	// never heard of them (it timed out, or its connection broke).
	SoldToGone int `json:"soldToGone"`
	// Open is the open loop's figures (--rate), nil for a closed loop.
	Open        *OpenSummary `json:"open,omitempty"`
	openLatency Latency      // every answer's, from its due time
}

// Latency percentiles in milliseconds.
type Latency struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Sample is the state at one moment of the run: the stock and order rows as
// the shop reports them, and the successes the load tester has counted.
type Sample struct {
	T         float64 `json:"t"` // seconds since the start
	Stock     int     `json:"stock"`
	Orders    int     `json:"orders"` // order rows created since the start
	Succeeded int     `json:"succeeded"`
}

// finish fills in the derived figures.
func (r *Result) finish(latencies []time.Duration, elapsed time.Duration) {
	r.Seconds = elapsed.Seconds()
	answered := r.Sent - r.TransportErrors
	if r.Seconds > 0 {
		r.Throughput = float64(answered) / r.Seconds
	}
	r.Latency = percentiles(latencies)
	r.OrdersCreated = r.OrdersAfter - r.OrdersBefore
	r.Expired = r.ExpiredAfter - r.ExpiredBefore
	r.Oversold = oversold(r.Succeeded, r.StockBefore, r.StockAfter, r.Expired)
	r.SoldToGone = max(0, r.OrdersCreated-r.Succeeded)
}

// oversold is how many successful answers the stock did not pay for: the
// stock went down by the sales and up by the pieces of the orders that
// expired meanwhile.
func oversold(succeeded, stockBefore, stockAfter, expired int) int {
	return succeeded - (stockBefore - stockAfter + expired)
}

// percentiles uses the nearest-rank method; it sorts its argument.
func percentiles(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	slices.Sort(ds)
	rank := func(p float64) float64 {
		i := int(p*float64(len(ds))+0.999999) - 1
		i = max(0, min(i, len(ds)-1))
		return ms(ds[i])
	}
	return Latency{P50: rank(0.50), P90: rank(0.90), P99: rank(0.99), Max: ms(ds[len(ds)-1])}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Problems lists why a run is not an exact sale: anything oversold,
// successes without order rows, (when there were enough buyers) not the
// whole stock sold, transport errors, and the goods of a set that were not
// exact. A buyer of an open loop that gave up after telling the shop its
// deadline (SendTimeout) is no problem: the shop sold it nothing after,
// and a sale before it left is an order row beyond the 200s, counted here.
func (r *Result) Problems() []string {
	var p []string
	if r.Oversold != 0 {
		p = append(p, fmt.Sprintf("oversold %d", r.Oversold))
	}
	if r.OrdersCreated != r.Succeeded {
		p = append(p, fmt.Sprintf("%d order rows for %d successes", r.OrdersCreated, r.Succeeded))
	}
	buyers := r.Requests // who can buy: every request, or one per distinct buyer
	if r.Buyers > 0 {
		buyers = min(r.Requests, r.Buyers)
	}
	// Enough buyers sell the whole stock, the pieces of the orders that
	// expired meanwhile included: nothing is left.
	if len(r.PerGoods) == 0 && buyers >= r.StockBefore && r.StockAfter != 0 {
		p = append(p, fmt.Sprintf("%d left of a stock of %d (%d sold, %d expired meanwhile)", r.StockAfter, r.StockBefore, r.Succeeded, r.Expired))
	}
	errs := r.TransportErrors
	if r.Open != nil && r.Open.SendTimeout {
		errs -= min(errs, r.Open.ClientTimeouts)
	}
	if errs > 0 {
		p = append(p, fmt.Sprintf("%d transport errors", errs))
	}
	return append(p, r.goodsProblems()...)
}

// FairSummary is how fair a sale of patient buyers was: of the pieces
// sold (Sold), how many went to the first Sold arrivals (ToFirst; Share of
// Sold), and how often buyers came back (Retries).
type FairSummary struct {
	Patience float64 `json:"patienceSeconds"`
	Sold     int     `json:"sold"`
	ToFirst  int     `json:"toFirst"`
	Share    float64 `json:"share"`
	Retries  int     `json:"retries"`
}
