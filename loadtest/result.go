package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Result is what one load run saw. The JSON form is what --json prints and
// what `loadtest compare` reads.
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

// exactProblems lists why a run is not an exact sale: anything oversold,
// successes without order rows, or (when there were enough buyers) not the
// whole stock sold.
func (r *Result) exactProblems() []string {
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
	if r.TransportErrors > 0 {
		p = append(p, fmt.Sprintf("%d transport errors", r.TransportErrors))
	}
	return append(p, r.goodsProblems()...)
}

// rows is the table of one or more runs, one column each.
func rows(rs ...*Result) [][]string {
	line := func(name string, f func(r *Result) string) []string {
		row := []string{name}
		for _, r := range rs {
			row = append(row, f(r))
		}
		return row
	}
	itoa := strconv.Itoa
	withBuyers := slices.ContainsFunc(rs, func(r *Result) bool { return r.Buyers > 0 })
	out := [][]string{
		line("run", func(r *Result) string { return r.Label }),
		line("requests sent", func(r *Result) string { return itoa(r.Sent) }),
		line("succeeded (200)", func(r *Result) string { return itoa(r.Succeeded) }),
		line("sold out (409)", func(r *Result) string { return itoa(r.SoldOut) }),
		line("other answers", func(r *Result) string { return others(r) }),
		line("transport errors", func(r *Result) string { return itoa(r.TransportErrors) }),
		line("throughput (req/s)", func(r *Result) string { return fmt.Sprintf("%.0f", r.Throughput) }),
		line("latency p50/p90/p99 (ms)", func(r *Result) string {
			return fmt.Sprintf("%.0f / %.0f / %.0f", r.Latency.P50, r.Latency.P90, r.Latency.P99)
		}),
		line("latency max (ms)", func(r *Result) string { return fmt.Sprintf("%.0f", r.Latency.Max) }),
		line("stock before -> after", func(r *Result) string { return fmt.Sprintf("%d -> %d", r.StockBefore, r.StockAfter) }),
		line("order rows created", func(r *Result) string { return itoa(r.OrdersCreated) }),
		line("orders expired meanwhile", func(r *Result) string { return itoa(r.Expired) }),
		line("lock wait p50/p99 (ms, histogram est.)", func(r *Result) string {
			if !r.ServerMetrics || r.LockWaitP50 == 0 && r.LockWaitP99 == 0 {
				return "-"
			}
			return fmt.Sprintf("%.1f / %.1f", r.LockWaitP50, r.LockWaitP99)
		}),
		line("lock_lost / unavailable (shops' metrics)", func(r *Result) string {
			if !r.ServerMetrics {
				return "-"
			}
			return fmt.Sprintf("%d / %d", r.LockLost, r.Unavailable)
		}),
		line("OVERSOLD", func(r *Result) string { return itoa(r.Oversold) }),
	}
	if slices.ContainsFunc(rs, func(r *Result) bool { return r.Open != nil }) { // after "throughput"
		out = slices.Insert(out, 7, openRows(line)...)
	}
	if withBuyers { // after "sold out (409)"
		rows := [][]string{
			line("buyers (distinct ids)", func(r *Result) string { return itoa(r.Buyers) }),
			line("already bought (409)", func(r *Result) string { return itoa(r.ByCode["already_bought"]) }),
		}
		out = slices.Insert(out, 4, rows...)
	}
	if slices.ContainsFunc(rs, func(r *Result) bool { return len(r.PerGoods) > 0 }) { // after "run"
		rows := [][]string{
			line("goods (spread)", func(r *Result) string {
				if len(r.PerGoods) == 0 {
					return strconv.Itoa(r.GoodsNo)
				}
				return fmt.Sprintf("%d (%s)", len(r.PerGoods), r.Skew)
			}),
			line("goods sold out", func(r *Result) string {
				if len(r.PerGoods) == 0 {
					return "-"
				}
				return fmt.Sprintf("%d of %d", r.soldOutGoods(), len(r.PerGoods))
			}),
			line("worst goods: oversold", func(r *Result) string {
				g, ok := r.worstGoods()
				if !ok {
					return "-"
				}
				return fmt.Sprintf("%d (goods %d)", g.Oversold, g.GoodsNo)
			}),
		}
		out = slices.Insert(out, 1, rows...)
	}
	return out
}

func others(r *Result) string {
	var parts []string
	for _, k := range sortedKeys(r.ByStatus) {
		if k != "200" && k != "409" {
			parts = append(parts, fmt.Sprintf("%s×%d", k, r.ByStatus[k]))
		}
	}
	if n := r.ByStatus["409"] - r.SoldOut - r.ByCode["already_bought"]; n > 0 {
		parts = append(parts, fmt.Sprintf("409 other×%d", n))
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, " ")
}

func sortedKeys(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// writeTable prints runs side by side: names left, figures right.
func writeTable(w io.Writer, rs ...*Result) error {
	rws := rows(rs...)
	widths := make([]int, len(rws[0]))
	for _, row := range rws {
		for i, cell := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(cell))
		}
	}
	for _, row := range rws {
		var b strings.Builder
		for i, cell := range row {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(cell))
			if i == 0 {
				b.WriteString(cell + pad)
			} else {
				b.WriteString("   " + pad + cell)
			}
		}
		if _, err := fmt.Fprintln(w, b.String()); err != nil {
			return err
		}
	}
	return nil
}
