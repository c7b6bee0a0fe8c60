package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/seckill-zk/seckill-zk/internal/loadgen"
)

// The table of runs: --out's text and the terminal's.

// rows is the table of one or more runs, one column each.
func rows(rs ...*loadgen.Result) [][]string {
	line := func(name string, f func(r *loadgen.Result) string) []string {
		row := []string{name}
		for _, r := range rs {
			row = append(row, f(r))
		}
		return row
	}
	itoa := strconv.Itoa
	withBuyers := slices.ContainsFunc(rs, func(r *loadgen.Result) bool { return r.Buyers > 0 })
	out := [][]string{
		line("run", func(r *loadgen.Result) string { return r.Label }),
		line("requests sent", func(r *loadgen.Result) string { return itoa(r.Sent) }),
		line("succeeded (200)", func(r *loadgen.Result) string { return itoa(r.Succeeded) }),
		line("sold out (409)", func(r *loadgen.Result) string { return itoa(r.SoldOut) }),
		line("other answers", func(r *loadgen.Result) string { return others(r) }),
		line("transport errors", func(r *loadgen.Result) string { return mark(r.TransportErrors > 0, itoa(r.TransportErrors)) }),
		line("throughput (req/s)", func(r *loadgen.Result) string { return fmt.Sprintf("%.0f", r.Throughput) }),
		line("latency p50/p90/p99 (ms)", func(r *loadgen.Result) string {
			return fmt.Sprintf("%.0f / %.0f / %.0f", r.Latency.P50, r.Latency.P90, r.Latency.P99)
		}),
		line("latency max (ms)", func(r *loadgen.Result) string { return fmt.Sprintf("%.0f", r.Latency.Max) }),
		line("stock before -> after", func(r *loadgen.Result) string { return fmt.Sprintf("%d -> %d", r.StockBefore, r.StockAfter) }),
		line("order rows created", func(r *loadgen.Result) string { return mark(r.OrdersCreated != r.Succeeded, itoa(r.OrdersCreated)) }),
		line("orders expired meanwhile", func(r *loadgen.Result) string { return itoa(r.Expired) }),
		line("lock wait p50/p99 (ms, histogram est.)", func(r *loadgen.Result) string {
			if !r.ServerMetrics || r.LockWaitP50 == 0 && r.LockWaitP99 == 0 {
				return "-"
			}
			return fmt.Sprintf("%.1f / %.1f", r.LockWaitP50, r.LockWaitP99)
		}),
		line("lock_lost / unavailable (shops' metrics)", func(r *loadgen.Result) string {
			if !r.ServerMetrics {
				return "-"
			}
			return fmt.Sprintf("%d / %d", r.LockLost, r.Unavailable)
		}),
		line("OVERSOLD", func(r *loadgen.Result) string { return mark(r.Oversold != 0, itoa(r.Oversold)) }),
	}
	if slices.ContainsFunc(rs, func(r *loadgen.Result) bool { return r.Fair != nil }) { // before "OVERSOLD"
		rows := [][]string{
			line("fair: sold to the first S arrivals (S = sold)", func(r *loadgen.Result) string {
				if r.Fair == nil {
					return "-"
				}
				crowd := r.Sent > r.Fair.Sold // more buyers than pieces: an order to keep
				return mark(crowd && r.Fair.Share < unfair, fmt.Sprintf("%d of %d (%.0f%%)", r.Fair.ToFirst, r.Fair.Sold, 100*r.Fair.Share))
			}),
			line("patient buyers came back (times)", func(r *loadgen.Result) string {
				if r.Fair == nil {
					return "-"
				}
				return fmt.Sprintf("%d (patience %.0fs)", r.Fair.Retries, r.Fair.Patience)
			}),
		}
		out = slices.Insert(out, len(out)-1, rows...)
	}
	if slices.ContainsFunc(rs, func(r *loadgen.Result) bool { return r.Open != nil }) { // after "throughput"
		out = slices.Insert(out, 7, openRows(line)...)
	}
	if withBuyers { // after "sold out (409)"
		rows := [][]string{
			line("buyers (distinct ids)", func(r *loadgen.Result) string { return itoa(r.Buyers) }),
			line("already bought (409)", func(r *loadgen.Result) string { return itoa(r.ByCode["already_bought"]) }),
		}
		out = slices.Insert(out, 4, rows...)
	}
	if slices.ContainsFunc(rs, func(r *loadgen.Result) bool { return len(r.PerGoods) > 0 }) { // after "run"
		rows := [][]string{
			line("goods (spread)", func(r *loadgen.Result) string {
				if len(r.PerGoods) == 0 {
					return strconv.Itoa(r.GoodsNo)
				}
				return fmt.Sprintf("%d (%s)", len(r.PerGoods), r.Skew)
			}),
			line("goods sold out", func(r *loadgen.Result) string {
				if len(r.PerGoods) == 0 {
					return "-"
				}
				return fmt.Sprintf("%d of %d", r.SoldOutGoods(), len(r.PerGoods))
			}),
			line("worst goods: oversold", func(r *loadgen.Result) string {
				g, ok := r.WorstGoods()
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

// unfair is the share of the pieces to the first arrivals below which the
// fair line is marked, when more buyers came than there were pieces.
const unfair = 0.8

// badMark follows a figure that is wrong (the legend says so).
const badMark = " ✗"

// mark is s, marked when bad.
func mark(bad bool, s string) string {
	if bad {
		return s + badMark
	}
	return s
}

// legend says how to read the table: what the lines mean, what good is.
var legend = []string{
	"reading it (" + strings.TrimSpace(badMark) + " marks a figure that is wrong):",
	"  succeeded: buyers told they bought; order rows created: one per success, so equal to it",
	"  stock before -> after: down by the pieces sold (an expired order's piece comes back)",
	"  OVERSOLD: successes the stock did not pay for: 0 under the lock; any number with it off",
	"  fair: of the S pieces sold, how many the first S buyers to arrive got (when the shop read",
	"    each request); 100% is first come, first served; below 80%, with more buyers than pieces, marked",
	"  patient buyers came back: how often buyers told to wait (503, Retry-After) asked again",
	"  throughput: answers a second, from the first request to the last answer",
	"  open loop: goodput is the 200s a second over the window the buyers were due in, then over the",
	"    whole run: a patient buyer told 503 comes back for --patience (1m), so sales and latencies",
	"    (from the due time) run on past the window; --patience 0 makes a refusal final",
}

// writeLegend prints the legend.
func writeLegend(w io.Writer) error {
	for _, l := range legend {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return err
		}
	}
	return nil
}

func others(r *loadgen.Result) string {
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
func writeTable(w io.Writer, rs ...*loadgen.Result) error {
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
