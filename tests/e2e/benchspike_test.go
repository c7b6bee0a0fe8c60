package e2e

import (
	"context"
	"fmt"
	"html"
	"math"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/loadgen"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// spikeMultiples are the offered loads of (i), as multiples of the
// closed-loop capacity measured in the same run.
var spikeMultiples = []float64{0.5, 1, 2, 4, 8}

// spikeSale is a strategy as (i) drives it: the slower ones, or one slowed
// on purpose, so that eight times its capacity is a rate one core of this
// machine can send (a generator past its own capacity measures itself).
type spikeSale struct {
	name string
	env  []e2e.Option
}

var spikeSales = []spikeSale{
	{"seed", []e2e.Option{e2e.WithStrategy("seed"), e2e.WithMaxSleep(0)}},
	// A batch of at most 5 buyers that sleeps 0-10 ms: a sale whose
	// capacity is a few hundred purchases a second.
	{"batch, slowed", []e2e.Option{e2e.WithStrategy("batch"), e2e.WithSetting("purchase.batchMax", "5"), e2e.WithMaxSleep(10 * time.Millisecond)}},
}

// spikeRun is one offered load's figures.
type spikeRun struct {
	multiple, offered, sent float64
	goodput                 float64
	ok, refused             int
	timeouts, notSent       int
	okP99, refusedP99       float64 // ms, from the due time
	uncorrectedP99          float64 // ms, every answer's from its actual send
	soldToGone              int
	behind                  string
	fiveXX                  int // 5xx other than 503 busy
	oversold                int
	// best is the round's best goodput (at any load); goodputs, over the
	// rounds, goodput / min(offered, best): 1 is all the shop could serve.
	best                        float64
	goodputs                    []float64
	worstOKP99, worstRefusedP99 float64 // the rounds' worst
}

// spikeResult is one strategy's part of (i).
type spikeResult struct {
	sale       string
	capacity   float64 // closed-loop purchases/s
	runs       []spikeRun
	peakRSS    [2]int64
	firstWon   int // pieces the first firstOf arrivals bought, of the spike's stock
	spikeSold  int
	spikeRate  float64
	pinned     string
	rounds     int
	capacities []float64
}

const (
	spikeStock   = 1000  // the spike's stock
	spikeBuyers  = 20000 // arrivals in the spike
	spikeFirstOf = 2000  // the first arrivals whose share is reported
)

// benchSpike is (i): per sale, two instances and their closed-loop
// capacity C, then open loops at spikeMultiples × C for secs seconds
// each (a buyer waits 5 s, and says so in X-Request-Timeout-Ms), then a
// spike: spikeBuyers arrivals rising from 0 to 8 × C in a second, for a
// stock of spikeStock. The generator (this process) runs on the last CPU,
// the instances, MariaDB and ZooKeeper on the others.
func benchSpike(b *testing.B, secs, rounds int) []spikeResult {
	restore := pinGenerator(b)
	defer restore()
	byRound := make([][]spikeResult, len(spikeSales))
	for r := range rounds {
		order := indices(len(spikeSales))
		if r%2 == 1 {
			slices.Reverse(order) // no sale always first
		}
		for _, k := range order {
			progress("(i) the spike: %s, round %d of %d", spikeSales[k].name, r+1, rounds)
			byRound[k] = append(byRound[k], spikeOf(b, spikeSales[k], secs))
		}
	}
	out := make([]spikeResult, len(spikeSales))
	for k, rs := range byRound {
		out[k] = mergeSpikes(rs)
	}
	return out
}

func indices(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// mergeSpikes is the rounds of one sale as one: the medians of the rates,
// latencies, capacity and first arrivals' share; the sums of what must be
// zero (timeouts, sales to buyers gone, 5xx, oversold); the largest peak
// memory; and any round's generator falling behind.
func mergeSpikes(rs []spikeResult) spikeResult {
	m := rs[0]
	m.rounds = len(rs)
	m.capacity = median(rs, func(r spikeResult) float64 { return r.capacity })
	m.spikeRate = median(rs, func(r spikeResult) float64 { return r.spikeRate })
	m.firstWon = int(median(rs, func(r spikeResult) float64 { return float64(r.firstWon) }))
	m.spikeSold = int(median(rs, func(r spikeResult) float64 { return float64(r.spikeSold) }))
	m.capacities = nil
	for _, r := range rs {
		m.capacities = append(m.capacities, r.capacity)
		m.peakRSS = [2]int64{max(m.peakRSS[0], r.peakRSS[0]), max(m.peakRSS[1], r.peakRSS[1])}
	}
	m.runs = make([]spikeRun, len(rs[0].runs))
	for i := range m.runs {
		runs := make([]spikeRun, len(rs))
		for k, r := range rs {
			runs[k] = r.runs[i]
		}
		med := func(f func(spikeRun) float64) float64 { return median(runs, f) }
		run := spikeRun{multiple: runs[0].multiple,
			offered: med(func(r spikeRun) float64 { return r.offered }), sent: med(func(r spikeRun) float64 { return r.sent }),
			goodput: med(func(r spikeRun) float64 { return r.goodput }), okP99: med(func(r spikeRun) float64 { return r.okP99 }),
			refusedP99: med(func(r spikeRun) float64 { return r.refusedP99 }), uncorrectedP99: med(func(r spikeRun) float64 { return r.uncorrectedP99 })}
		for _, r := range runs {
			run.ok += r.ok
			run.refused += r.refused
			run.timeouts += r.timeouts
			run.notSent += r.notSent
			run.soldToGone += r.soldToGone
			run.fiveXX += r.fiveXX
			run.oversold += r.oversold
			run.worstRefusedP99 = max(run.worstRefusedP99, r.refusedP99)
			run.worstOKP99 = max(run.worstOKP99, r.okP99)
			run.goodputs = append(run.goodputs, r.goodput/max(1, min(r.offered, r.best)))
			if r.behind != "" {
				run.behind = r.behind
			}
		}
		m.runs[i] = run
	}
	return m
}

func spikeOf(b *testing.B, sale spikeSale, secs int) spikeResult {
	dsn := e2e.Database(b)
	// The admission alone: (k) measures the waiting room in front of it.
	s := e2e.NewStackOn(b, dsn, e2e.ZooKeeper(b), append([]e2e.Option{e2e.WithLogLevel("info"), e2e.WithQueueTarget(300 * time.Millisecond),
		e2e.WithAcquireTimeout(time.Minute), e2e.WithRoom(false)}, sale.env...)...)
	s.Binary = e2e.ShopBinaryNoRace(b)
	s.Shop(b, "migrate")
	s.Shop(b, "stock", "set", "--goods", "1", "--stock", "10000000", "--clear-orders")
	stop := func(ins ...*e2e.Instance) {
		for _, in := range ins {
			if err := in.Stop(b); err != nil {
				b.Fatalf("%s instance did not stop cleanly: %v\n%s", sale.name, err, in.Logs())
			}
		}
	}
	// C: 200 buyers at a time, each buying as soon as its last answer came,
	// on instances without the admission (purchase.queueTarget=0), as the
	// closed loops of (a)-(h) measure: with it, the buyers it refuses would
	// ask again at once, and their refusals take the CPU C is measured on.
	c1, c2 := s.Serve(b, e2e.WithQueueTarget(0)), s.Serve(b, e2e.WithQueueTarget(0))
	pinServers(b, c1, c2)
	closedLoad([]string{c1.URL, c2.URL}, 2000, 200) // warm-up: MariaDB's pages, ZooKeeper's JIT
	answers, start := closedLoad([]string{c1.URL, c2.URL}, 6000, 200)
	stop(c1, c2)
	in1, in2 := s.Serve(b), s.Serve(b)
	defer stop(in1, in2)
	urls := []string{in1.URL, in2.URL}
	res := spikeResult{sale: sale.name, pinned: pinServers(b, in1, in2)}
	res.capacity = tally(answers, start, nil).purchasesPerSec

	for _, m := range spikeMultiples {
		rate := m * res.capacity
		stockBefore, before := s.Counts(b)
		r := openLoad(b, urls, loadgen.Profile{Rate: rate, Duration: time.Duration(secs) * time.Second}, nil)
		after := settledOrders(b, s, before)
		stockAfter, _ := s.Counts(b)
		run := spikeRun{multiple: m, offered: r.Offered(), sent: r.Achieved(), goodput: r.Goodput(), ok: r.OK, refused: r.Refused(),
			timeouts: r.ClientTimeouts + r.Errors, notSent: r.NotSent, okP99: loadgen.Ms(r.OKLatency, 99),
			refusedP99: loadgen.Ms(r.RefusedLatency, 99), uncorrectedP99: loadgen.Ms(r.Service, 99),
			soldToGone: after - before - r.OK, behind: r.Behind(), oversold: (after - before) - (stockBefore - stockAfter)}
		for status, n := range r.ByStatus {
			if status >= 500 && status != 503 {
				run.fiveXX += n
			}
		}
		run.fiveXX += r.Refused() - r.ByCode["busy"] - r.ByCode["too_many_requests"]
		res.runs = append(res.runs, run)
		progress("(i) %s at %.1f x C (%.0f/s): goodput %.0f/s, p99 ok %.0f ms, refused %.1f ms, timeouts %d",
			sale.name, m, rate, run.goodput, run.okP99, run.refusedP99, run.timeouts)
	}

	best := 0.0
	for _, run := range res.runs {
		best = max(best, run.goodput)
	}
	for i := range res.runs {
		res.runs[i].best = best
	}

	// The spike: a fresh stock, buyers numbered in their order of arrival.
	s.Shop(b, "stock", "set", "--goods", "1", "--stock", strconv.Itoa(spikeStock), "--clear-orders")
	time.Sleep(1200 * time.Millisecond) // the instances' sold-out marks pass
	res.spikeRate = 8 * res.capacity
	up := time.Second
	dur := up/2 + time.Duration(float64(spikeBuyers)/res.spikeRate*float64(time.Second))
	prefix := fmt.Sprintf("spike-%d", time.Now().UnixNano())
	openLoad(b, urls, loadgen.Profile{Rate: res.spikeRate, Duration: dur, RampUp: up}, func(i int) []string {
		return []string{"X-Request-ID", prefix + "-" + strconv.Itoa(i)}
	})
	settledOrders(b, s, 0)
	rows, err := e2e.OpenDB(b, s.DSN).Query("SELECT request_id FROM order_info WHERE goods_no = 1")
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			b.Fatal(err)
		}
		res.spikeSold++
		if n, err := strconv.Atoi(strings.TrimPrefix(id, prefix+"-")); err == nil && n < spikeFirstOf {
			res.firstWon++
		}
	}
	res.peakRSS = [2]int64{peakRSS(in1), peakRSS(in2)}
	return res
}

// openLoad sends an open loop of purchases of goods 1 at urls: 5 s of
// patience each, told to the shop; header, if not nil, adds request i's
// headers.
func openLoad(b *testing.B, urls []string, p loadgen.Profile, header func(i int) []string) *loadgen.OpenResult {
	r, err := loadgen.Open(context.Background(), loadgen.OpenOptions{
		Targets: urls, Profile: p, Connections: min(6000, int(p.Rate)+500), Timeout: 5 * time.Second, SendTimeout: true,
		Request: func(i int) (string, []string) {
			if header == nil {
				return "/goods-stock/1", nil
			}
			return "/goods-stock/1", header(i)
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// settledOrders waits until the goods' order rows stop changing (a buyer
// who left may be sold to after it left; at most 10 s) and returns them.
func settledOrders(b *testing.B, s e2e.Stack, last int) int {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		time.Sleep(300 * time.Millisecond)
		_, now := s.Counts(b)
		if now == last {
			return now
		}
		last = now
	}
	return last
}

// pinGenerator runs this process (the load generator) on the last CPU and
// returns how to let it run anywhere again.
func pinGenerator(b *testing.B) (restore func()) {
	last := strconv.Itoa(runtime.NumCPU() - 1)
	if err := exec.Command("taskset", "-a", "-p", "-c", last, strconv.Itoa(os.Getpid())).Run(); err != nil {
		progress("(i): the generator could not be pinned (taskset: %v): it shares the shop's CPUs", err)
		return func() {}
	}
	return func() { _ = exec.Command("taskset", "-a", "-p", "-c", "0-"+last, strconv.Itoa(os.Getpid())).Run() }
}

// pinServers runs the instances, MariaDB and ZooKeeper on every CPU but the
// last (the generator's) and says which it could pin. MariaDB and
// ZooKeeper are let run anywhere again when the benchmark ends.
func pinServers(b *testing.B, ins ...*e2e.Instance) string {
	n := runtime.NumCPU()
	if n < 2 {
		return "nothing (one CPU)"
	}
	others := "0"
	if n > 2 {
		others = fmt.Sprintf("0-%d", n-2)
	}
	var pinned []string
	pin := func(name string, pid int) {
		if exec.Command("taskset", "-a", "-p", "-c", others, strconv.Itoa(pid)).Run() == nil {
			pinned = append(pinned, name)
		}
	}
	for _, in := range ins {
		pin("the instances", in.Cmd.Process.Pid)
	}
	root := e2e.Root(b)
	for name, files := range map[string][]string{
		"MariaDB":   {root + "/.stack/mariadb/pid", "/run/mysqld/mysqld.pid"},
		"ZooKeeper": {root + "/.stack/zookeeper/pid"},
	} {
		for _, f := range files {
			raw, err := os.ReadFile(f)
			pid, perr := strconv.Atoi(strings.TrimSpace(string(raw)))
			if err != nil || perr != nil {
				continue
			}
			pin(name, pid)
			b.Cleanup(func() {
				_ = exec.Command("taskset", "-a", "-p", "-c", fmt.Sprintf("0-%d", n-1), strconv.Itoa(pid)).Run()
			})
			break
		}
	}
	return fmt.Sprintf("%s on CPU %s, the generator on CPU %d", strings.Join(slices.Compact(pinned), ", "), others, n-1)
}

// benchSpikeTable is (i)'s table, with its targets.
func benchSpikeTable(secs, rounds int, results []spikeResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "(i) the spike: open loops at multiples of the closed-loop capacity C (200 buyers at a time, same run), %d s each, two instances,\n", secs)
	fmt.Fprintf(&b, "purchase.queueTarget=300ms; a buyer waits 5 s (X-Request-Timeout-Ms); latency from each purchase's due time; medians of %d rounds\n", rounds)
	fmt.Fprintf(&b, "(counts summed over them); \"served\": goodput / min(offered, the round's best goodput), its rounds' spread\n")
	for _, r := range results {
		fmt.Fprintf(&b, "\n%s: C = %.0f purchases/s (rounds %s); pinned: %s\n", r.sale, r.capacity, spread(r.capacities), r.pinned)
		fmt.Fprintf(&b, "%6s %9s %9s %9s %11s %8s %11s %11s %9s %8s %6s %s\n", "x C", "offered", "sent", "goodput", "served", "ok p99",
			"refused p99", "uncorrected", "timeouts", "to gone", "5xx", "generator")
		for _, run := range r.runs {
			gen := "kept the rate"
			if run.behind != "" {
				gen = "BEHIND: " + run.behind
			}
			fmt.Fprintf(&b, "%6.1f %9.0f %9.0f %9.0f %11s %8.0f %11.1f %11.0f %9d %8d %6d %s\n", run.multiple, run.offered, run.sent, run.goodput,
				spread(run.goodputs), run.okP99, run.refusedP99, run.uncorrectedP99, run.timeouts+run.notSent, run.soldToGone, run.fiveXX, gen)
		}
		fmt.Fprintf(&b, "peak RSS per instance (the rounds' largest): %d / %d MB\n", r.peakRSS[0]>>20, r.peakRSS[1]>>20)
		fmt.Fprintf(&b, "spike: %d arrivals, 0 to %.0f/s in 1 s, stock %d: %d sold, %d of them to the first %d arrivals (%.0f%%)\n",
			spikeBuyers, r.spikeRate, spikeStock, r.spikeSold, r.firstWon, spikeFirstOf, 100*float64(r.firstWon)/max(1, float64(r.spikeSold)))
		for _, t := range spikeTargets(r) {
			fmt.Fprintf(&b, "target: %s\n", t)
		}
	}
	return b.String()
}

// spikeTargets are (i)'s targets for one sale, each "met" or "MISSED".
// Latencies are the medians of the rounds at each load, the worst load.
func spikeTargets(r spikeResult) []string {
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	minServed, okP99Past, okP99Under, refusedP99 := 1.0, 0.0, 0.0, 0.0
	timeouts, sales, gone, fiveXX, behind, oversold := 0, 0, 0, 0, 0, 0
	underServed := true
	for _, run := range r.runs {
		minServed = min(minServed, medianOf(run.goodputs))
		refusedP99 = max(refusedP99, run.refusedP99)
		switch {
		case run.multiple > 1:
			okP99Past = max(okP99Past, run.okP99)
		case run.multiple < 1:
			okP99Under = max(okP99Under, run.okP99)
			underServed = underServed && run.refused == 0
		}
		timeouts += run.timeouts + run.notSent
		sales += run.ok
		gone += run.soldToGone
		fiveXX += run.fiveXX
		oversold += run.oversold
		if run.behind != "" {
			behind++
		}
	}
	return []string{
		fmt.Sprintf("goodput >= 0.9 x what was asked, up to the run's best, at every load up to 8 x C: lowest %.2f, %s", minServed, verdict(minServed >= 0.9)),
		fmt.Sprintf("refusals answered fast (p99 <= 50 ms), no buyer timed out: p99 %.1f ms at worst, %d timed out, %s", refusedP99, timeouts, verdict(refusedP99 <= 50 && timeouts == 0)),
		fmt.Sprintf("the 200s' p99 <= 1 s past capacity: %.0f ms at worst, %s", okP99Past, verdict(okP99Past <= 1000)),
		fmt.Sprintf("under capacity every buyer served, p99 <= 250 ms: %.0f ms, %s", okP99Under, verdict(underServed && okP99Under <= 250)),
		fmt.Sprintf("<= 0.1%% of sales to buyers who had gone: %d of %d, %s", gone, sales, verdict(float64(gone) <= 0.001*float64(sales))),
		fmt.Sprintf("no 5xx but 503 busy: %d, %s", fiveXX, verdict(fiveXX == 0)),
		fmt.Sprintf("exact: order rows = pieces the stock lost, at every load: %d apart, %s", oversold, verdict(oversold == 0)),
		fmt.Sprintf("the generator kept every rate: %d loads behind, %s", behind, verdict(behind == 0)),
	}
}

// benchSpikeChart draws (i): goodput as a share of C, and the 200s' p99,
// against the offered load, a line per sale; the targets dashed.
func benchSpikeChart(results []spikeResult) string {
	const w, h, left, right, top, bottom = 640, 300, 56, 56, 36, 44
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	x := func(m float64) float64 { // log2 from 0.5 to 8
		return float64(left) + pw*(math.Log2(m)+1)/4
	}
	yGood := func(v float64) float64 { return float64(top) + ph*(1-v/1.5) }   // 0 to 1.5 x C
	yP99 := func(ms float64) float64 { return float64(top) + ph*(1-ms/2000) } // 0 to 2000 ms
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="100%%" style="max-width: %dpx" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, w, h)
	fmt.Fprintf(&b, `<text x="8" y="20" font-size="14" font-weight="bold">goodput (solid, x C, left) and the 200s' p99 (dotted, ms, right)</text>`+"\n")
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#999"/>`+"\n", left, h-bottom, w-right, h-bottom)
	for _, m := range spikeMultiples {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%g x C</text>`+"\n", x(m), h-bottom+16, m)
	}
	for _, v := range []float64{0, 0.5, 1, 1.5} {
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%.1f</text>`+"\n", left-6, yGood(v)+4, v)
	}
	for _, ms := range []float64{0, 500, 1000, 1500, 2000} {
		fmt.Fprintf(&b, `<text x="%d" y="%.1f">%.0f</text>`+"\n", w-right+6, yP99(ms)+4, ms)
	}
	// The targets: p99 of the 200s <= 1 s past capacity.
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#d62728" stroke-dasharray="6 4"/><text x="%.1f" y="%.1f" fill="#d62728" text-anchor="end">target: p99 1 s past C</text>`+"\n",
		x(1), yP99(1000), x(8), yP99(1000), x(8)-4, yP99(1000)-4)
	colors := []string{"#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd"}
	for i, r := range results {
		col := colors[i%len(colors)]
		var good, p99 []string
		for _, run := range r.runs {
			good = append(good, fmt.Sprintf("%.1f,%.1f", x(run.multiple), yGood(run.goodput/max(r.capacity, 1))))
			p99 = append(p99, fmt.Sprintf("%.1f,%.1f", x(run.multiple), yP99(min(run.okP99, 2000))))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", col, strings.Join(good, " "))
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" stroke-dasharray="2 3" points="%s"/>`+"\n", col, strings.Join(p99, " "))
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">%s (C = %.0f/s)</text>`+"\n", left+8+i*200, h-8, col, html.EscapeString(r.sale), r.capacity)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// (i)'s verdicts from made-up rounds: a sale that keeps its goodput and
// answers fast meets every target; one whose goodput sags past capacity,
// whose buyers time out or that sells to a buyer who left misses those;
// and the chart is well-formed SVG with a line pair per sale.
func TestBenchSpikeVerdictsAndChart(t *testing.T) {
	round := func(goodAt8 float64, timeouts, gone int) spikeResult {
		r := spikeResult{sale: "s", capacity: 100, spikeRate: 800, spikeSold: 1000, firstWon: 600, peakRSS: [2]int64{100 << 20, 110 << 20}}
		for _, m := range spikeMultiples {
			g := min(m, 1) * 100
			if m == 8 {
				g = goodAt8
			}
			run := spikeRun{multiple: m, offered: m * 100, sent: m * 100, goodput: g, ok: int(g * 5), okP99: 400, refusedP99: 3}
			if m > 1 {
				run.refused = 10
			} else {
				run.okP99 = 40
			}
			if m == 8 {
				run.timeouts, run.soldToGone = timeouts, gone
			}
			r.runs = append(r.runs, run)
		}
		for i := range r.runs {
			r.runs[i].best = 100
		}
		return r
	}
	missed := func(r spikeResult) []string {
		var out []string
		for _, v := range spikeTargets(r) {
			if strings.HasSuffix(v, "MISSED") {
				out = append(out, v)
			}
		}
		return out
	}
	if m := missed(mergeSpikes([]spikeResult{round(100, 0, 0), round(98, 0, 0), round(95, 0, 0)})); len(m) != 0 {
		t.Errorf("a sale that kept its goodput missed %v", m)
	}
	sagged := missed(mergeSpikes([]spikeResult{round(70, 0, 0), round(75, 0, 0), round(95, 0, 0)}))
	if len(sagged) != 1 || !strings.HasPrefix(sagged[0], "goodput >= 0.9") {
		t.Errorf("goodput at 0.75 x past capacity: missed %v, want the goodput target alone", sagged)
	}
	bad := missed(mergeSpikes([]spikeResult{round(100, 3, 20), round(100, 0, 0), round(100, 0, 0)}))
	if len(bad) != 2 {
		t.Errorf("3 timeouts and 20 sales to buyers gone in a round: missed %v, want the refusal and the gone targets", bad)
	}
	table := benchSpikeTable(5, 3, []spikeResult{mergeSpikes([]spikeResult{round(100, 0, 0)})})
	for _, want := range []string{"600 of them to the first 2000 arrivals (60%)", "peak RSS per instance (the rounds' largest): 100 / 110 MB", "target: "} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
	svg := benchSpikeChart([]spikeResult{round(100, 0, 0), round(90, 0, 0)})
	checkWellFormed(t, svg)
	if n := strings.Count(svg, "<polyline "); n != 4 {
		t.Errorf("%d lines, want a goodput and a p99 line per sale: 4", n)
	}
}
