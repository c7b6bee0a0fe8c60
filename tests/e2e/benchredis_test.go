package e2e

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// redisContender is one design of section (g).
type redisContender struct {
	name       string
	mode       string // the peer's PEER_MODE; "" is the shop, with strategy
	durability string // when the buyer hears 200
	strategy   string
}

var redisContenders = []redisContender{
	{"batch (the shop)", "", "after the order's commit", "batch"},
	{"allot (the shop)", "", "after the order's commit", "allot"},
	{"redis + lua, sync", "sync", "after the order's commit", ""},
	{"redis + lua, async", "async", "before: the queue dies with its instance", ""},
	{"bare handler", "bare", "nothing is written", ""},
}

// redisRun is a benchRun with the CPU the design spent.
type redisRun struct {
	benchRun
	// instanceCPU is the CPU time of the design's two processes from the
	// load's start to their exit: the sale, the async writer's drain and
	// the stop, not the start-up.
	instanceCPU time.Duration
	// machineCPU is the CPU time of the whole machine from the load's start
	// to the instances' stop: the database, Redis, ZooKeeper and the load
	// generator included.
	machineCPU time.Duration
	durableAt  time.Duration // from the load's start to the instances' stop (the async writer drained)
	redisStock int64         // the peer's stock in Redis after the stop (-1: not a peer)
	mysqlStock int
}

// benchRedis runs (g): each contender rounds times, in a different order
// each round, buyers buyers conc at a time, on two instances, goods 1 with
// a stock larger than the buyers.
func benchRedis(b *testing.B, buyers, conc, rounds int) map[string][]redisRun {
	names := make([]string, len(redisContenders))
	for i, c := range redisContenders {
		names[i] = c.name
	}
	runs := map[string][]redisRun{}
	inRounds(rounds, names, "(g) ahead of the Redis design", func(name string) {
		c := redisContenders[slices.IndexFunc(redisContenders, func(c redisContender) bool { return c.name == name })]
		runs[name] = append(runs[name], benchRedisSale(b, c, buyers, conc))
	})
	return runs
}

// benchRedisSale is one sale of contender c, checked.
func benchRedisSale(b testing.TB, c redisContender, buyers, conc int) redisRun {
	b.Helper()
	s := e2e.NewStackOn(b, e2e.Database(b), e2e.ZooKeeper(b), e2e.WithStrategy(cmp.Or(c.strategy, "batch")), e2e.WithLogLevel("info"),
		e2e.WithMaxSleep(0), e2e.WithAcquireTimeout(2*time.Minute))
	s.Binary = e2e.ShopBinaryNoRace(b)
	s.Shop(b, "migrate")
	stock := buyers + 1000
	s.Shop(b, "stock", "set", "--goods", "1", "--stock", strconv.Itoa(stock), "--clear-orders")
	serve := s.Serve
	peer := e2e.Peer{}
	if c.mode != "" {
		peer = e2e.NewPeer(b, s, c.mode)
		serve = peer.Serve
	}
	in1, in2 := serve(b), serve(b)
	cpu0 := machineCPU(b)
	before := processCPU(b, in1) + processCPU(b, in2)
	answers, start := closedLoad([]string{in1.URL, in2.URL}, buyers, conc)
	run := redisRun{benchRun: tally(answers, start, nil), redisStock: -1, instanceCPU: -before}
	for _, in := range []*e2e.Instance{in1, in2} {
		if err := in.Stop(b); err != nil {
			b.Fatalf("%s instance did not stop cleanly: %v\n%s", c.name, err, in.Logs())
		}
		u := in.Cmd.ProcessState.SysUsage().(*syscall.Rusage)
		run.instanceCPU += time.Duration(u.Utime.Nano() + u.Stime.Nano())
	}
	run.durableAt = time.Since(start)
	run.machineCPU = machineCPU(b) - cpu0
	left, orders := s.Counts(b)
	run.mysqlStock = left
	if c.mode != "bare" {
		run.oversold = orders - (stock - left)
		run.phantoms = max(run.ok-orders, 0)
	}
	if c.mode == "sync" || c.mode == "async" {
		run.redisStock = peer.RedisStock(b, 1)
	}
	return run
}

// processCPU is the CPU time the instance's process has spent so far.
func processCPU(b testing.TB, in *e2e.Instance) time.Duration {
	b.Helper()
	return pidCPU(b, in.Cmd.Process.Pid)
}

// machineCPU is the CPU time every core has spent out of idle since boot
// (/proc/stat's cpu line: user, nice, system, irq, softirq, steal).
func machineCPU(b testing.TB) time.Duration {
	b.Helper()
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		b.Fatal(err)
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		b.Fatalf("/proc/stat: %q", line)
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// benchRedisTable is (g) with its targets.
func benchRedisTable(buyers, conc, rounds int, runs map[string][]redisRun) string {
	var b strings.Builder
	fmt.Fprintf(&b, "(g) ahead of the Redis design: two instances each, goods 1, %d buyers, %d at a time, stock %d, median of %d rounds\n",
		buyers, conc, buyers+1000, rounds)
	fmt.Fprintf(&b, "%-20s %12s %9s %12s %16s %16s %10s %9s %13s  %s\n", "design", "purchases/s", "batch x", "rounds",
		"own CPU us/sale", "all CPU us/sale", "durable s", "oversold", "redis=mysql", "the buyer hears 200")
	ratios := func(name string) []float64 {
		var out []float64
		for i, r := range runs[name] {
			out = append(out, runs[redisContenders[0].name][i].purchasesPerSec/r.purchasesPerSec)
		}
		return out
	}
	perSale := func(d time.Duration, r redisRun) float64 {
		return float64(d.Microseconds()) / float64(max(r.ok, 1))
	}
	bad := 0
	for _, c := range redisContenders {
		rs := runs[c.name]
		oversold, agree := 0, "-"
		for _, r := range rs {
			oversold += r.oversold + r.phantoms
			bad += r.oversold + r.phantoms + len(r.other)
			if r.ok != r.buyers {
				bad++
			}
			if c.mode == "sync" || c.mode == "async" {
				if r.redisStock != int64(r.mysqlStock) {
					bad++
					agree = "NO"
				} else if agree == "-" {
					agree = "yes"
				}
			}
		}
		if c.mode == "bare" {
			agree = "(writes nothing)"
		}
		fmt.Fprintf(&b, "%-20s %12.0f %9.2f %12s %16.1f %16.1f %10.2f %9d %13s  %s\n", c.name,
			median(rs, func(r redisRun) float64 { return r.purchasesPerSec }), medianOf(ratios(c.name)), spread(ratios(c.name)),
			median(rs, func(r redisRun) float64 { return perSale(r.instanceCPU, r) }),
			median(rs, func(r redisRun) float64 { return perSale(r.machineCPU, r) }),
			median(rs, func(r redisRun) float64 { return r.durableAt.Seconds() }), oversold, agree, c.durability)
	}
	vsAsync := medianOf(ratios("redis + lua, async"))
	vsBare := medianOf(ratios("bare handler"))
	cpu := func(name string) float64 {
		return median(runs[name], func(r redisRun) float64 { return perSale(r.instanceCPU, r) })
	}
	cpuRatio := cpu("batch (the shop)") / cpu("bare handler")
	fmt.Fprintf(&b, "(batch x: batch's purchases/s over the design's, the median of the rounds' ratios, their spread beside it; own CPU: the design's two processes; all CPU: the machine's, database, Redis and load generator included)\n")
	fmt.Fprintf(&b, "target: batch >= 1.2x the asynchronous Redis design's purchases/s: %.2fx, %s\n", vsAsync, verdict(vsAsync >= 1.2))
	fmt.Fprintf(&b, "target: batch >= 0.5x the bare handler's purchases/s: %.2fx, %s\n", vsBare, verdict(vsBare >= 0.5))
	fmt.Fprintf(&b, "target: the shop's own CPU per batch purchase <= 2x the bare handler's per answer: %.2fx, %s\n", cpuRatio, verdict(cpuRatio <= 2))
	fmt.Fprintf(&b, "target: every buyer bought, 0 oversold, every 200 with its order row, Redis and MySQL agree: %s\n", verdict(bad == 0))
	allot := func(name string) float64 { // allot's purchases/s over the design's, the median of the rounds'
		var out []float64
		for i, r := range runs[name] {
			out = append(out, runs["allot (the shop)"][i].purchasesPerSec/r.purchasesPerSec)
		}
		return medianOf(out)
	}
	fmt.Fprintf(&b, "allot (the targets are batch's): %.2fx the asynchronous Redis design's purchases/s, %.2fx the bare handler's, own CPU %.2fx the bare handler's\n",
		allot("redis + lua, async"), allot("bare handler"), cpu("allot (the shop)")/cpu("bare handler"))
	return b.String()
}
