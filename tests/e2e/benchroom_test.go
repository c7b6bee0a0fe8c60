package e2e

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/loadgen"
	"github.com/seckill-zk/seckill-zk/internal/metrics/scrape"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// (k) first come, first served: a spike of patient buyers for a stock of
// roomStock, with the waiting room and without it (503 busy, no place),
// the generator on a CPU of its own. Each buyer is a standard client: told
// to come back, it comes back after Retry-After (whole seconds, a tenth of
// jitter) with the place's cookie and its own ids, for up to a minute.
// Every strategy, each through a balancer that sends a buyer back to the
// instance it first asked (sticky) or to the other (round robin), on an
// idle machine and with a busy loop of the bench's own on the shops' CPU.
// seed at 8 × its closed-loop capacity C; the others at roomFastRate,
// about what one CPU of this machine sends.

const (
	roomBuyers   = 20000
	roomStock    = 1000
	roomFastRate = 5000.0
	roomPatience = time.Minute
)

// roomSale is a strategy (k) drives.
type roomSale struct {
	name     string
	env      []e2e.Option
	multiple float64 // the rate, as a multiple of C; 0: roomFastRate
}

var roomSales = []roomSale{
	{"seed", []e2e.Option{e2e.WithStrategy("seed"), e2e.WithMaxSleep(0)}, 8},
	{"batch", []e2e.Option{e2e.WithStrategy("batch"), e2e.WithMaxSleep(0)}, 0},
	{"atomic", []e2e.Option{e2e.WithStrategy("atomic"), e2e.WithMaxSleep(0)}, 0},
	{"allot", []e2e.Option{e2e.WithStrategy("allot"), e2e.WithMaxSleep(0)}, 0},
}

// roomCase is how the buyers come back and what else the shops' CPU runs.
type roomCase struct {
	sticky, busy bool
}

func (c roomCase) String() string {
	return map[bool]string{true: "sticky", false: "round robin"}[c.sticky] + ", " + map[bool]string{true: "busy", false: "idle"}[c.busy]
}

// roomCases are the cases BENCH_SHOP_ROOM_CASES names: sticky or rr, idle
// or busy, each dimension whole when none of its names is given (all four
// by default).
func roomCases() []roomCase {
	names := strings.Split(os.Getenv("BENCH_SHOP_ROOM_CASES"), ",")
	pick := func(yes, no string) []bool {
		var out []bool
		if slices.Contains(names, yes) {
			out = append(out, true)
		}
		if slices.Contains(names, no) {
			out = append(out, false)
		}
		if len(out) == 0 {
			out = []bool{true, false}
		}
		return out
	}
	var out []roomCase
	for _, sticky := range pick("sticky", "rr") {
		for _, idle := range pick("idle", "busy") {
			out = append(out, roomCase{sticky, !idle})
		}
	}
	return out
}

// roomSalesToRun are the sales BENCH_SHOP_ROOM_SALES names (all by default).
func roomSalesToRun() []roomSale {
	names := os.Getenv("BENCH_SHOP_ROOM_SALES")
	if names == "" {
		return roomSales
	}
	var out []roomSale
	for _, s := range roomSales {
		if slices.Contains(strings.Split(names, ","), s.name) {
			out = append(out, s)
		}
	}
	return out
}

// roomRun is one spike of one sale, with the room or without.
type roomRun struct {
	rate, capacity float64
	sold, toFirst  int
	sellOut        time.Duration // from the first arrival to the last sale
	goodput        float64       // pieces a second, to the sell-out
	notBoughtP99   float64       // ms, every answer but a 200, interim ones included
	soldOutLateP99 float64       // ms after the sell-out, the buyers who heard sold_out
	soldOutLateMax float64
	answers        int // requests the shop answered, retries included
	cpuPerAnswer   float64
	sqlPerAnswer   float64 // statements MariaDB counted (Questions) per answer
	// cpuPerAnswer: the instances' CPU per answer that was not a purchase
	// (microseconds): their CPU less the pieces sold times a purchase's
	// CPU in the closed loop, over the other answers.
	timeouts, other int
	oversold        int // order rows beyond the pieces the stock lost
	soldToGone      int // order rows beyond the 200s: buyers who had left
	behind          string
	codes           map[string]int // the buyers' last answers
}

func (r roomRun) share() float64 { return float64(r.toFirst) / float64(max(r.sold, 1)) }

// roomKey names one row of (k): a sale in a case.
type roomKey struct {
	sale string
	c    roomCase
}

// benchRoom is (k): per sale and case, rounds rounds, each measuring C and
// then the spike with the room and without (in turn first); and per round
// what a refusal costs, busy and a place.
func benchRoom(b *testing.B, rounds int) (map[roomKey]map[bool][]roomRun, map[bool][]float64) {
	restore := pinGenerator(b)
	defer restore()
	out := map[roomKey]map[bool][]roomRun{}
	refusals := map[bool][]float64{}
	for r := range rounds {
		for _, on := range []bool{r%2 == 0, r%2 == 1} {
			progress("(k) what a refusal costs: room %t, round %d of %d", on, r+1, rounds)
			us := refusalCost(b, on)
			progress("(k) a refusal, room %t: %.1f us of the instances' CPU", on, us)
			refusals[on] = append(refusals[on], us)
		}
	}
	for r := range rounds {
		for _, sale := range roomSalesToRun() {
			c, perPurchase := roomCapacity(b, sale)
			for _, rc := range roomCases() {
				k := roomKey{sale.name, rc}
				if out[k] == nil {
					out[k] = map[bool][]roomRun{}
				}
				for _, on := range []bool{r%2 == 0, r%2 == 1} {
					progress("(k) first come, first served: %s, %v, room %t, round %d of %d", sale.name, rc, on, r+1, rounds)
					run := roomSpike(b, sale, rc, on, c, perPurchase)
					progress("(k) %s %v room %t: last answers %v", sale.name, rc, on, run.codes)
					progress("(k) %s %v room %t: %d sold, %.1f%% to the first %d, over after %.2f s, not-bought p99 %.1f ms, sold out late max %.0f ms, %.1f us CPU an answer",
						sale.name, rc, on, run.sold, 100*run.share(), run.sold, run.sellOut.Seconds(), run.notBoughtP99, run.soldOutLateMax, run.cpuPerAnswer)
					out[k][on] = append(out[k][on], run)
				}
			}
		}
	}
	return out, refusals
}

// refusalCost is the instances' CPU per answer (microseconds) when every
// buyer is refused: the test holds the lock, so that no purchase ends;
// once the admissions are full, new buyers (each its own id, not patient)
// arrive at 3 000 a second for 3 s and hear 503 busy, or with the room a
// place.
func refusalCost(b *testing.B, on bool) float64 {
	s, in1, in2, stop := roomPair(b, 1000000, e2e.WithQueueTarget(300*time.Millisecond), e2e.WithSetting("purchase.maxWaiting", "50"), e2e.WithAcquireTimeout(time.Minute),
		e2e.WithStrategy("seed"), e2e.WithRoom(on))
	defer stop()
	release := holdLock(b, s)
	defer release()
	bases := []string{in1.URL, in2.URL}
	prefix := fmt.Sprintf("r%d", time.Now().UnixNano())
	open := func(n int, rate float64) *loadgen.OpenResult {
		r, err := loadgen.Open(context.Background(), loadgen.OpenOptions{Targets: bases,
			Profile: loadgen.Profile{Rate: rate, Duration: time.Duration(float64(n) / rate * float64(time.Second))}, Timeout: 2 * time.Second, SendTimeout: true,
			Request: func(i int) (string, []string) {
				return "/goods-stock/1", []string{"X-User-ID", fmt.Sprintf("%s-%d-%d", prefix, n, i)}
			}})
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	open(300, 1000) // the admissions fill (50 each) and stay full behind the lock
	cpu0 := pidCPU(b, in1.Cmd.Process.Pid) + pidCPU(b, in2.Cmd.Process.Pid)
	r := open(9000, 3000)
	cpu := pidCPU(b, in1.Cmd.Process.Pid) + pidCPU(b, in2.Cmd.Process.Pid) - cpu0
	want := map[bool]string{true: "queued", false: "busy"}[on]
	if r.ByCode[want] < r.Sent*9/10 {
		b.Fatalf("refusals with the room %t: %v, want %s", on, r.ByCode, want)
	}
	return float64(cpu.Microseconds()) / float64(max(r.Sent, 1))
}

// roomPair is a stack of its own with env, goods 1 stocked, and two
// instances (built without -race) pinned as (i) pins them; stop stops them.
func roomPair(b *testing.B, stock int, env ...e2e.Option) (s e2e.Stack, in1, in2 *e2e.Instance, stop func()) {
	s = e2e.NewStackOn(b, e2e.Database(b), e2e.ZooKeeper(b), append([]e2e.Option{e2e.WithLogLevel("info")}, env...)...)
	s.Binary = e2e.ShopBinaryNoRace(b)
	s.Shop(b, "migrate")
	s.Shop(b, "stock", "set", "--goods", "1", "--stock", strconv.Itoa(stock), "--clear-orders")
	in1, in2 = s.Serve(b), s.Serve(b)
	pinServers(b, in1, in2)
	return s, in1, in2, func() {
		for _, in := range []*e2e.Instance{in1, in2} {
			if err := in.Stop(b); err != nil {
				b.Fatalf("instance did not stop cleanly: %v", err)
			}
		}
	}
}

// roomCapacity is a sale's closed-loop capacity, as (i) measures it, and
// the instances' CPU per purchase then (microseconds).
func roomCapacity(b *testing.B, sale roomSale) (float64, float64) {
	_, c1, c2, stop := roomPair(b, 10000000, append([]e2e.Option{e2e.WithQueueTarget(0)}, sale.env...)...)
	defer stop()
	closedLoad([]string{c1.URL, c2.URL}, 2000, 200)
	cpu0 := pidCPU(b, c1.Cmd.Process.Pid) + pidCPU(b, c2.Cmd.Process.Pid)
	answers, start := closedLoad([]string{c1.URL, c2.URL}, 6000, 200)
	cpu := pidCPU(b, c1.Cmd.Process.Pid) + pidCPU(b, c2.Cmd.Process.Pid) - cpu0
	return tally(answers, start, nil).purchasesPerSec, float64(cpu.Microseconds()) / 6000
}

// roomSpike is one spike: roomBuyers patient buyers, each its own id, for
// roomStock pieces, at multiple × c (or roomFastRate), two instances, in
// case rc.
func roomSpike(b *testing.B, sale roomSale, rc roomCase, on bool, c, perPurchase float64) roomRun {
	s, in1, in2, stop := roomPair(b, roomStock, append([]e2e.Option{e2e.WithQueueTarget(300 * time.Millisecond), e2e.WithAcquireTimeout(time.Minute),
		e2e.WithPayTimeout(0), e2e.WithRoom(on)}, sale.env...)...)
	defer stop()
	closedLoadOf([]string{in1.URL, in2.URL}, 500, 100, func(int) int32 { return 2 }) // warm-up, another goods (absent: 404)
	bases := []string{in1.URL, in2.URL}
	rate := roomFastRate
	if sale.multiple > 0 {
		rate = sale.multiple * c
	}
	if rc.busy {
		cpus := "0"
		if n := runtime.NumCPU(); n > 2 {
			cpus = fmt.Sprintf("0-%d", n-2)
		}
		stopBusy := busyLoop(b, cpus, roomBuyers/rate+20) // the shops' CPUs, as pinServers pins them
		defer stopBusy()
	}
	cpu0 := pidCPU(b, in1.Cmd.Process.Pid) + pidCPU(b, in2.Cmd.Process.Pid)
	q0 := mariaQuestions(b, s.DSN)
	prefix := fmt.Sprintf("k%d", time.Now().UnixNano())
	if os.Getenv("BENCH_SHOP_ROOM_DEBUG") != "" {
		for i, in := range []*e2e.Instance{in1, in2} {
			stopWatch := watchAdmissions(fmt.Sprintf("instance %d", i), in.URL)
			defer stopWatch()
		}
	}
	res, err := loadgen.Open(context.Background(), loadgen.OpenOptions{
		Target:      func(i int) string { return bases[i%2] },
		Profile:     loadgen.Profile{Rate: rate, Duration: time.Duration(float64(roomBuyers) / rate * float64(time.Second))},
		Connections: min(6000, int(rate)+500), Timeout: roomPatience, Patience: roomPatience, Record: true, Sticky: rc.sticky,
		Request: func(i int) (string, []string) {
			return "/goods-stock/1", []string{"X-User-ID", prefix + "-" + strconv.Itoa(i)}
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	cpu := pidCPU(b, in1.Cmd.Process.Pid) + pidCPU(b, in2.Cmd.Process.Pid) - cpu0
	run := roomRun{rate: rate, capacity: c, behind: res.Behind(), timeouts: res.ClientTimeouts + res.Errors + res.NotSent,
		answers: res.Sent + res.Retries, notBoughtP99: loadgen.Ms(res.NotBought, 99), codes: res.ByCode}
	// The answers that are not purchases: the instances' CPU less what the
	// sales cost at the closed loop's rate, over their number.
	run.cpuPerAnswer = (float64(cpu.Microseconds()) - perPurchase*roomStock) / float64(max(run.answers-roomStock, 1))
	run.sqlPerAnswer = (mariaQuestions(b, s.DSN) - q0) / float64(max(run.answers, 1))
	first := res.Records[0].Intended
	bought := make([]bool, len(res.Records))
	arrived := make([]time.Time, len(res.Records))
	var lastSale time.Time
	for _, rec := range res.Records {
		arrived[rec.Index] = loadgen.ArrivalOf(rec.Answer)
		if rec.Status == http.StatusOK {
			bought[rec.Index] = true
			lastSale = laterOf(lastSale, rec.End)
		}
	}
	var late []float64
	for _, rec := range res.Records {
		switch {
		case rec.Status == http.StatusOK:
		case rec.Code == "sold_out":
			late = append(late, float64(max(rec.End.Sub(laterOf(lastSale, rec.Intended)), 0))/1e6)
		case rec.Err == nil && !rec.Sent.IsZero():
			run.other++
		}
	}
	f := loadgen.FairnessOf(loadgen.InArrivalOrder(bought, arrived))
	run.sold, run.toFirst = f.Sold, f.ToFirst
	if os.Getenv("BENCH_SHOP_ROOM_DEBUG") != "" {
		roomDebug(res.Records, f.Sold, first, lastSale)
	}
	run.sellOut = lastSale.Sub(first)
	run.goodput = float64(run.sold) / max(run.sellOut.Seconds(), 1e-3)
	slices.Sort(late)
	if len(late) > 0 {
		run.soldOutLateP99, run.soldOutLateMax = late[len(late)*99/100], late[len(late)-1]
	}
	stock, orders := s.Counts(b)
	run.oversold = orders - (roomStock - stock)
	run.soldToGone = orders - run.sold
	return run
}

// mariaQuestions is MariaDB's count of statements so far (every
// client's: the benchmark runs alone).
func mariaQuestions(b *testing.B, dsn string) float64 {
	var name string
	var v float64
	if err := e2e.OpenDB(b, dsn).QueryRow("SHOW GLOBAL STATUS LIKE 'Questions'").Scan(&name, &v); err != nil {
		b.Fatal(err)
	}
	return v
}

func laterOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// benchRoomTable is (k)'s table and its targets.
func benchRoomTable(rounds int, runs map[roomKey]map[bool][]roomRun, refusals map[bool][]float64) string {
	var t strings.Builder
	fmt.Fprintf(&t, "(k) first come, first served: %d patient buyers for %d pieces, each a standard client (it comes back after Retry-After, "+
		"whole seconds, with the place's cookie, for up to %v); seed at 8 x C, the others at %.0f/s; the generator on a CPU of its own; "+
		"busy: a busy loop on the shops' CPU; medians of %d rounds\n", roomBuyers, roomStock, roomPatience, roomFastRate, rounds)
	fmt.Fprintf(&t, "%-6s %-20s %-5s %7s %6s %11s %10s %15s %16s %10s %8s %6s %8s\n", "sale", "balancer, load", "room", "rate/s", "sold",
		"to first S", "over after", "not-bought p99", "sold_out late max", "CPU/other", "answers", "other", "oversold")
	verdict := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	for _, sale := range roomSales {
		for _, rc := range roomCases() {
			k := roomKey{sale.name, rc}
			for _, on := range []bool{true, false} {
				rs := runs[k][on]
				if len(rs) == 0 {
					continue
				}
				m := func(f func(roomRun) float64) float64 { return median(rs, f) }
				fmt.Fprintf(&t, "%-6s %-20s %-5t %7.0f %6.0f %10.1f%% %8.2f s %12.1f ms %13.0f ms %7.1f us %8.0f %6.0f %8.0f\n", sale.name, rc, on,
					m(func(r roomRun) float64 { return r.rate }), m(func(r roomRun) float64 { return float64(r.sold) }),
					100*m(roomRun.share), m(func(r roomRun) float64 { return r.sellOut.Seconds() }), m(func(r roomRun) float64 { return r.notBoughtP99 }),
					m(func(r roomRun) float64 { return r.soldOutLateMax }), m(func(r roomRun) float64 { return r.cpuPerAnswer }),
					m(func(r roomRun) float64 { return float64(r.answers) }), m(func(r roomRun) float64 { return float64(r.other + r.timeouts) }),
					m(func(r roomRun) float64 { return float64(r.oversold) }))
				for _, r := range rs {
					if r.behind != "" {
						fmt.Fprintf(&t, "  %s %v room %t: the generator fell behind: %s\n", sale.name, rc, on, r.behind)
					}
				}
			}
			on, off := runs[k][true], runs[k][false]
			if len(on) == 0 || len(off) == 0 {
				continue
			}
			share := median(on, roomRun.share)
			sold := median(on, func(r roomRun) float64 { return float64(r.sold) })
			ratio := median(on, func(r roomRun) float64 { return r.sellOut.Seconds() }) / median(off, func(r roomRun) float64 { return r.sellOut.Seconds() })
			lateMax := 0.0
			over, gone := 0, 0
			for _, r := range on {
				lateMax = max(lateMax, r.soldOutLateMax)
			}
			for _, r := range append(slices.Clip(on), off...) {
				over += r.oversold
				gone += r.soldToGone
			}
			fmt.Fprintf(&t, "  targets: >= 95%% to the first %d arrivals %.1f%% %s; every piece sold %.0f %s; over in <= 1.2 x the room off's %.2f x %s; "+
				"sold_out within 1 s of the sell-out %.0f ms %s; exact %d apart, %d to buyers gone %s\n",
				roomStock, 100*share, verdict(share >= 0.95), sold, verdict(sold == roomStock), ratio, verdict(ratio <= 1.2),
				lateMax, verdict(lateMax <= 1000), over, gone, verdict(over == 0 && gone == 0))
		}
	}
	if len(refusals[true]) > 0 && len(refusals[false]) > 0 {
		place, busy := medianOf(refusals[true]), medianOf(refusals[false])
		fmt.Fprintf(&t, "what a refusal costs (the lock held by the benchmark, the admissions full, 3 000 new buyers a second for 3 s): "+
			"a place (503 queued) %.1f us of the instances' CPU, 503 busy %.1f us\n", place, busy)
		fmt.Fprintf(&t, "  target: a place's answer costs <= 1.5 x a 503 busy: %.2f x, %s\n", place/busy, verdict(place <= 1.5*busy))
	}
	return t.String()
}

// roomDebug tells where the first arrivals who did not buy, and the later
// ones who did, stood (BENCH_SHOP_ROOM_DEBUG).
func roomDebug(recs []loadgen.Record, sold int, first, lastSale time.Time) {
	early, late := map[string]int{}, []string{}
	for _, rec := range recs {
		ahead := strings.Contains(string(rec.Body), `"ahead"`)
		switch {
		case rec.Index < sold && rec.Status != http.StatusOK:
			early[fmt.Sprintf("%s ahead=%t", rec.Code, ahead)]++
			if len(late) < 30 {
				late = append(late, fmt.Sprintf("lost #%d tries %d end %+.0fms from sell-out", rec.Index, rec.Tries, float64(rec.End.Sub(lastSale))/1e6))
			}
		case rec.Index >= sold && rec.Status == http.StatusOK && len(late) < 60:
			late = append(late, fmt.Sprintf("won #%d tries %d due %.0fms end %.0fms", rec.Index, rec.Tries, float64(rec.Intended.Sub(first))/1e6, float64(rec.End.Sub(first))/1e6))
		}
	}
	progress("(k) debug: the first %d arrivals who did not buy: %v", sold, early)
	// Per instance of the last request: its buyers among the first S
	// arrivals (by X-Arrived-At), and the pieces it sold.
	byArrival := slices.Clone(recs)
	slices.SortFunc(byArrival, func(x, y loadgen.Record) int { return loadgen.ArrivalOf(x.Answer).Compare(loadgen.ArrivalOf(y.Answer)) })
	firsts, sales := map[string]int{}, map[string]int{}
	for k, rec := range byArrival {
		if k < sold {
			firsts[rec.Target]++
		}
		if rec.Status == http.StatusOK {
			sales[rec.Target]++
		}
	}
	progress("(k) debug: of the first %d arrivals, by the instance last asked: %v; sold by it: %v", sold, firsts, sales)
	for _, l := range late {
		progress("(k) debug: %s", l)
	}
	// The latest sold_out answers, from the later of the sell-out and
	// their due time, as "sold_out late" counts them.
	var outs []loadgen.Record
	for _, rec := range recs {
		if rec.Code == "sold_out" {
			outs = append(outs, rec)
		}
	}
	lateness := func(rec loadgen.Record) time.Duration { return rec.End.Sub(laterOf(lastSale, rec.Intended)) }
	slices.SortFunc(outs, func(x, y loadgen.Record) int { return cmp.Compare(lateness(y), lateness(x)) })
	for _, rec := range outs[:min(8, len(outs))] {
		progress("(k) debug: sold_out late %.0fms: #%d tries %d due %+.0fms, this try sent %+.0fms, answered %+.0fms from the sell-out (%.0fms)",
			float64(lateness(rec))/1e6, rec.Index, rec.Tries, float64(rec.Intended.Sub(lastSale))/1e6, float64(rec.Sent.Sub(lastSale))/1e6,
			float64(rec.End.Sub(lastSale))/1e6, float64(rec.End.Sub(rec.Sent))/1e6)
	}
}

// watchAdmissions prints an instance's admission and room gauges every
// 100 ms until stopped (BENCH_SHOP_ROOM_DEBUG): what the room lets in
// against what the admission measured.
func watchAdmissions(name, base string) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	names := []string{"seckill_admission_rate", "seckill_admission_work_rate", "seckill_admission_limit", "seckill_admission_in_flight", "seckill_room_let_in_per_second", "seckill_room_waiting"}
	go func() {
		defer close(finished)
		start := time.Now()
		for {
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			a := e2e.Ask(http.MethodGet, base+"/metrics")
			if a.Err != nil {
				continue
			}
			samples, err := scrape.Parse(bytes.NewReader(a.Body))
			if err != nil {
				continue
			}
			var b strings.Builder
			for _, name := range names {
				if i := slices.IndexFunc(samples, func(x scrape.Sample) bool { return x.Name == name }); i >= 0 {
					fmt.Fprintf(&b, " %s %g", strings.TrimPrefix(name, "seckill_"), samples[i].Value)
				}
			}
			sold := 0.0
			for _, x := range samples {
				if x.Name == "seckill_purchases_total" && x.Labels["outcome"] == "ok" {
					sold += x.Value
				}
			}
			fmt.Fprintf(&b, " sold %g", sold)
			if u, err := url.Parse(base); err == nil {
				// The listener's accept queue (Recv-Q of the LISTEN socket).
				out, _ := exec.Command("ss", "-Hltn", "sport = :"+u.Port()).Output()
				fmt.Fprintf(&b, " listen %s", strings.Join(strings.Fields(string(out)), " "))
			}
			progress("(k) debug %s %5.0fms:%s", name, float64(time.Since(start).Milliseconds()), b.String())
		}
	}()
	return func() { close(done); <-finished }
}
