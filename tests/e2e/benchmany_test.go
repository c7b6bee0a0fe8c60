package e2e

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/crowd"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// (e) of `make bench-shop`: a sale of many goods against a sale of one,
// per strategy, and on Galera.

// manySale is one sale of (e).
type manySale struct {
	name  string
	goods int // goods 1..goods
	stock int // each
	skew  string
	// lockPath, if set, is the lock path instead of manyLockPath's (only
	// for strategies (batch): a way the shop can run, not the one the
	// README recommends, measured to show why)
	lockPath   string
	strategies []string
}

var manySales = []manySale{
	{name: "1 goods", goods: 1, stock: 200_000, skew: "uniform"},
	{name: "200 goods", goods: 200, stock: 1000, skew: "uniform"},
	{name: "200 goods zipf:1.1 sell-out", goods: 200, stock: 50, skew: "zipf:1.1"},
	{name: "200 goods, 16 stripes", goods: 200, stock: 1000, skew: "uniform", lockPath: "/locks/stripe/{stripe}", strategies: []string{"batch"}},
	{name: "200 goods, a lock per goods", goods: 200, stock: 1000, skew: "uniform", lockPath: "/locks/goods/{goodsNo}", strategies: []string{"batch"}},
}

// runs reports whether the sale is run for strategy.
func (s manySale) runs(strategy string) bool {
	return s.strategies == nil || slices.Contains(s.strategies, strategy)
}

// manyLockPath is the lock path a strategy sells many goods under, the one
// the README recommends: batch one lock for every goods (one hold and one
// transaction sell the waiting buyers of all of them), seed one per goods
// (a buyer per hold: a shared lock would serialise every goods).
func manyLockPath(b testing.TB, strategy string) string {
	if strategy == "batch" {
		return e2e.Path(b) + "/locks/all"
	}
	return e2e.Path(b) + "/locks/goods/{goodsNo}"
}

// manyRun is what one sale of (e) measured.
type manyRun struct {
	benchRun
	soldOutGoods int // goods left without stock
	unsold       int // goods with stock left although at least as many buyers came
	worstGoods   int32
	worstOver    int // the most any goods was oversold
	goodsWrong   int // goods oversold, or with a 200 without its order row
}

// benchManyGoods runs (e): each strategy on each sale of manySales, rounds
// times, the strategies in a different order each round; then batch and
// atomic at 200 goods on one Galera node and on three.
func benchManyGoods(b *testing.B, strategies, nodes []string, buyers, conc, rounds int) (map[string]map[string][]manyRun, map[string]map[string][]manyRun) {
	runs := map[string]map[string][]manyRun{}
	for _, st := range strategies {
		runs[st] = map[string][]manyRun{}
	}
	for r := range rounds {
		order := inRoundOrder(strategies, r)
		progress("(e) many goods: round %d of %d", r+1, rounds)
		for _, st := range order {
			for _, sale := range manySales {
				if !sale.runs(st) {
					continue
				}
				dsn := e2e.Database(b)
				runs[st][sale.name] = append(runs[st][sale.name], benchManySaleOn(b, st, sale, buyers, conc, []string{dsn, dsn}, nil))
			}
		}
	}
	galera := map[string]map[string][]manyRun{}
	engines := []benchEngine{benchEngines[1], benchEngines[3]} // one Galera node, three
	for _, st := range galeraStrategies(strategies) {
		galera[st] = map[string][]manyRun{}
	}
	for r := range rounds {
		progress("(e) many goods on Galera: round %d of %d", r+1, rounds)
		for _, st := range galeraStrategies(strategies) {
			for _, e := range engines {
				galera[st][e.name] = append(galera[st][e.name], benchManySaleOn(b, st, manySales[1], buyers, conc, e.instances(b, nodes), nil))
			}
		}
	}
	return runs, galera
}

// benchManySaleOn starts an instance of strategy per DSN, gives goods
// 1..sale.goods sale.stock each, and sends buyers purchases spread over
// them by sale.skew, conc at a time; then checks the sale goods by goods.
// around, if not nil, is called with the instances just before the load
// (run nil) and just after it, with what the load counted ((h) reads its
// counters there).
func benchManySaleOn(b *testing.B, strategy string, sale manySale, buyers, conc int, dsns []string,
	around func(ins []*e2e.Instance, run *benchRun)) manyRun {
	b.Helper()
	admin := firstServer.ReplaceAllString(dsns[0], "tcp($1)")
	lockPath := manyLockPath(b, strategy)
	if sale.lockPath != "" {
		lockPath = e2e.Path(b) + sale.lockPath
	}
	s := e2e.NewStackOn(b, admin+"&wsrep_sync_wait=15", e2e.ZooKeeper(b), e2e.WithStrategy(strategy), e2e.WithLogLevel("info"), e2e.WithMaxSleep(0),
		e2e.WithLockPath(lockPath), e2e.WithAcquireTimeout(2*time.Minute))
	s.Binary = e2e.ShopBinaryNoRace(b)
	s.Shop(b, "migrate")
	s.Shop(b, "stock", "set", "--goods", fmt.Sprintf("1-%d", sale.goods), "--stock", strconv.Itoa(sale.stock), "--clear-orders")
	var ins []*e2e.Instance
	var urls []string
	for _, dsn := range dsns {
		in := s.Serve(b, e2e.WithSetting("mysql.dsn", dsn))
		ins, urls = append(ins, in), append(urls, in.URL)
	}
	set := make([]int32, sale.goods)
	for i := range set {
		set[i] = int32(i + 1)
	}
	pick, err := crowd.NewPicker(set, sale.skew, 1)
	if err != nil {
		b.Fatal(err)
	}
	if around != nil {
		around(ins, nil)
	}
	answers, start := closedLoadOf(urls, buyers, conc, pick.Goods)
	ok, asked := map[int32]int{}, map[int32]int{}
	for i := range answers {
		asked[pick.Goods(i)]++
	}
	run := manyRun{benchRun: tally(answers, start, func(i int) { ok[pick.Goods(i)]++ })}
	if around != nil {
		around(ins, &run.benchRun)
	}
	left, orders := s.GoodsCounts(b)
	for _, g := range set {
		over := orders[g] - (sale.stock - left[g])
		phantoms := max(ok[g]-orders[g], 0)
		run.oversold += over
		run.phantoms += phantoms
		if over != 0 || phantoms != 0 {
			run.goodsWrong++
		}
		if over > run.worstOver || run.worstGoods == 0 {
			run.worstGoods, run.worstOver = g, over
		}
		if left[g] <= 0 {
			run.soldOutGoods++
		} else if asked[g] >= sale.stock {
			run.unsold++
		}
	}
	for _, in := range ins {
		if err := in.Stop(b); err != nil {
			b.Fatalf("%s instance did not stop cleanly: %v\n%s", strategy, err, in.Logs())
		}
	}
	return run
}

// benchManyTable is (e) with its targets' verdicts.
func benchManyTable(strategies []string, buyers, conc, rounds int, runs, galera map[string]map[string][]manyRun) string {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	var b strings.Builder
	fmt.Fprintf(&b, "(e) many goods: two instances per strategy, %d buyers, %d at a time, median of %d rounds; lock path: batch one for every goods, seed one per goods (batch \"16 stripes\": on lock.stripes' default 16 locks, \"a lock per goods\": on a lock per goods, the paths the README advises against), allot none\n", buyers, conc, rounds)
	fmt.Fprintf(&b, "%-8s %-28s %12s %10s %12s %9s %14s %18s %9s %s\n", "strategy", "sale", "purchases/s", "x 1 goods", "rounds", "p99 ms", "goods sold out", "oversold (worst)", "phantoms", "other answers")
	var targets []string
	bad := 0
	for _, st := range strategies {
		one := runs[st][manySales[0].name]
		for _, sale := range manySales {
			if !sale.runs(st) {
				continue
			}
			rs := runs[st][sale.name]
			var ratios []float64
			for i, r := range rs {
				ratios = append(ratios, r.purchasesPerSec/one[i].purchasesPerSec)
			}
			soldOut := fmt.Sprintf("%d of %d", rs[len(rs)-1].soldOutGoods, sale.goods)
			worst := slices.MaxFunc(rs, func(a, b manyRun) int { return a.worstOver - b.worstOver })
			oversold, phantoms := 0, 0
			for _, r := range rs {
				oversold += r.oversold
				phantoms += r.phantoms
				bad += r.goodsWrong + r.unsold
			}
			fmt.Fprintf(&b, "%-8s %-28s %12.0f %10.2f %12s %9.1f %14s %10d (%d: %d) %9d %v\n", st, sale.name,
				median(rs, func(r manyRun) float64 { return r.purchasesPerSec }), medianOf(ratios), spread(ratios),
				median(rs, func(r manyRun) float64 { return ms(r.p99) }), soldOut, oversold, worst.worstGoods, worst.worstOver, phantoms, rs[len(rs)-1].other)
			if sale.name == manySales[1].name {
				x := medianOf(ratios)
				targets = append(targets, fmt.Sprintf("target: %s at 200 goods >= 1.0x %s at 1 goods: %.2fx, %s", st, st, x, verdict(x >= 1)))
			}
		}
	}
	for _, t := range targets {
		fmt.Fprintln(&b, t)
	}
	fmt.Fprintf(&b, "target: 0 oversold per goods, every 200 with its order row, every goods sold out that had the buyers for it, in every sale: %s\n", verdict(bad == 0))
	fmt.Fprintf(&b, "\n(e) on Galera: 200 goods (uniform, stock 1000 each), three instances, each on its own node for \"3 nodes\"\n")
	fmt.Fprintf(&b, "%-8s %-18s %12s %12s %12s %6s %9s %9s %s\n", "strategy", "engine", "purchases/s", "x one node", "rounds", "5xx", "oversold", "phantoms", "other answers")
	for _, st := range galeraStrategies(strategies) {
		base := galera[st][benchEngines[1].name]
		for _, e := range []benchEngine{benchEngines[1], benchEngines[3]} {
			rs := galera[st][e.name]
			var ratios []float64
			fiveXX, oversold, phantoms := 0, 0, 0
			for i, r := range rs {
				ratios = append(ratios, r.purchasesPerSec/base[i].purchasesPerSec)
				fiveXX, oversold, phantoms = fiveXX+r.fiveXX, oversold+r.oversold, phantoms+r.phantoms
			}
			fmt.Fprintf(&b, "%-8s %-18s %12.0f %12.2f %12s %6d %9d %9d %v\n", st, e.name,
				median(rs, func(r manyRun) float64 { return r.purchasesPerSec }), medianOf(ratios), spread(ratios), fiveXX, oversold, phantoms, rs[len(rs)-1].other)
		}
	}
	return b.String()
}

// galeraStrategies are the strategies of (e) on Galera: atomic, batch and allot,
// those of them that run.
func galeraStrategies(strategies []string) []string {
	var out []string
	for _, st := range []string{"atomic", "batch", "allot"} {
		if slices.Contains(strategies, st) {
			out = append(out, st)
		}
	}
	return out
}

// manyEnv is BENCH_SHOP_MANY_BUYERS and BENCH_SHOP_MANY_ROUNDS.
func manyEnv() (buyers, rounds int) {
	buyers, rounds = 20_000, 3
	if n, err := strconv.Atoi(os.Getenv("BENCH_SHOP_MANY_BUYERS")); err == nil && n > 0 {
		buyers = n
	}
	if n, err := strconv.Atoi(os.Getenv("BENCH_SHOP_MANY_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	return buyers, rounds
}
