package e2e

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/loadgen"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// (j) one buyer who spends no stock: honest buyers, 200 purchases a second
// spread over 39 goods, each buyer its own id; beside them one buyer who
// bought goods 1 already asks for it again 1 500 times a second (each
// answer 409 already_bought). One instance, ZooKeeper auth on, the
// generator on a CPU of its own. The honest buyers' goodput with the
// attacker, against the same load without it in the same round; medians of
// the rounds. With each set of defaults a user meets: make serve's (seed,
// here with a lock per goods) and the chart's (batch, one lock for every
// goods, limits.buyerRate 2, limits.clientRate 100).

// starveSettings is a set of defaults the section runs with.
type starveSettings struct {
	name string
	env  func(s e2e.Stack) []e2e.Option
}

var starveSets = []starveSettings{
	{"make serve's (seed), a lock per goods", func(s e2e.Stack) []e2e.Option {
		return []e2e.Option{e2e.WithStrategy("seed"), e2e.WithLockPath(s.LockPath + "/goods/{goodsNo}")}
	}},
	// Behind an ingress, as the chart is: the generator is the trusted
	// proxy and each buyer has an address of its own (X-Forwarded-For).
	{"the chart's (batch, limits on)", func(s e2e.Stack) []e2e.Option {
		return []e2e.Option{e2e.WithStrategy("batch"), e2e.WithLockPath(s.LockPath),
			e2e.WithSetting("limits.buyerRate", "2"), e2e.WithSetting("limits.clientRate", "100"), e2e.WithSetting("server.trustedProxies", "127.0.0.1")}
	}},
}

const (
	starveHonestRate   = 200
	starveAttackerRate = 1500
	starveGoods        = 39 // the honest buyers' goods: 2 to 40
)

// starveRun is one round of one set of defaults.
type starveRun struct {
	alone, attacked float64 // the honest buyers' goodput, purchases/s
	honestCodes     map[string]int
	attackerCodes   map[string]int
	behind          string
	attackerP99     float64 // ms, the attacker's answers
	honestP99       float64 // ms, the honest purchases'
	oversold        int
}

// benchStarve is (j): per set of defaults, rounds rounds of secs seconds
// alone and secs seconds attacked.
func benchStarve(b *testing.B, secs, rounds int) map[string][]starveRun {
	restore := pinGenerator(b)
	defer restore()
	out := map[string][]starveRun{}
	for r := range rounds {
		for _, set := range starveSets {
			progress("(j) one buyer who spends no stock: %s, round %d of %d", set.name, r+1, rounds)
			out[set.name] = append(out[set.name], starveRound(b, set, secs))
		}
	}
	return out
}

func starveRound(b *testing.B, set starveSettings, secs int) starveRun {
	s := e2e.NewStack(b, e2e.WithSetting("zookeeper.auth", "digest:"+e2e.ZKDigest), e2e.WithQueueTarget(300*time.Millisecond), e2e.WithLogLevel("info"))
	s = s.With(b, set.env(s)...)
	s.Binary = e2e.ShopBinaryNoRace(b)
	s.Shop(b, "migrate")
	s.Shop(b, "stock", "set", "--goods", "1-"+strconv.Itoa(starveGoods+1), "--stock", "1000000", "--clear-orders")
	in := s.Serve(b)
	defer func() {
		if err := in.Stop(b); err != nil {
			b.Fatalf("the instance did not stop cleanly: %v\n%s", err, in.Logs())
		}
	}()
	pinServers(b, in)
	urls := []string{in.URL}
	if a := e2e.Ask(http.MethodGet, in.URL+"/goods-stock/1", "X-User-ID", "mallory", "X-Forwarded-For", "203.0.113.7"); a.Status != http.StatusOK {
		b.Fatalf("the attacker's first purchase: %d %s", a.Status, a.Code)
	}
	closedLoadWith(urls, 2000, 100, func(i int) (string, []string) { // warm-up
		return fmt.Sprintf("/goods-stock/%d", 2+i%starveGoods), []string{"X-User-ID", fmt.Sprintf("warm-%d", i),
			"X-Forwarded-For", fmt.Sprintf("10.200.%d.%d", i>>8&255, i&255)}
	})
	honest := func(tag string) *loadgen.OpenResult {
		return starveOpen(b, urls, starveHonestRate, secs, func(i int) (string, []string) {
			return fmt.Sprintf("/goods-stock/%d", 2+i%starveGoods), []string{"X-User-ID", fmt.Sprintf("%s-%d", tag, i),
				"X-Forwarded-For", fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)}
		})
	}
	var run starveRun
	alone := honest("alone")
	run.alone = alone.Goodput()
	var attacker *loadgen.OpenResult
	var wg sync.WaitGroup
	wg.Go(func() {
		attacker = starveOpen(b, urls, starveAttackerRate, secs, func(int) (string, []string) {
			return "/goods-stock/1", []string{"X-User-ID", "mallory", "X-Forwarded-For", "203.0.113.7"}
		})
	})
	time.Sleep(200 * time.Millisecond) // the attack is under way when the honest buyers come
	attacked := honest("attacked")
	wg.Wait()
	run.attacked = attacked.Goodput()
	run.honestCodes, run.attackerCodes = attacked.ByCode, attacker.ByCode
	run.honestP99, run.attackerP99 = loadgen.Ms(attacked.OKLatency, 99), loadgen.Ms(attacker.Latency, 99)
	for _, r := range []*loadgen.OpenResult{alone, attacker, attacked} {
		if w := r.Behind(); w != "" {
			run.behind = w
		}
	}
	stock, orders := s.GoodsCounts(b)
	for g, n := range orders {
		run.oversold += max(0, n-(1000000-stock[g]))
	}
	progress("(j) %s: honest goodput alone %.0f/s, with the attacker %.0f/s (%.2f x); the attacker heard %v",
		set.name, run.alone, run.attacked, run.attacked/run.alone, attacker.ByCode)
	return run
}

// starveOpen is an open loop at rate for secs seconds; a buyer waits 5 s.
func starveOpen(b *testing.B, urls []string, rate float64, secs int, request func(i int) (string, []string)) *loadgen.OpenResult {
	r, err := loadgen.Open(context.Background(), loadgen.OpenOptions{
		Targets: urls, Profile: loadgen.Profile{Rate: rate, Duration: time.Duration(secs) * time.Second},
		Connections: min(3000, int(rate)+300), Timeout: 5 * time.Second, SendTimeout: true, Request: request,
	})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// benchStarveTable is (j)'s table.
func benchStarveTable(secs, rounds int, runs map[string][]starveRun) string {
	var t strings.Builder
	fmt.Fprintf(&t, "(j) one buyer who spends no stock: honest buyers at %d purchases/s over %d goods, each its own id, for %d s; "+
		"then again beside one buyer who holds an order of goods 1 asking for it %d times a second; one instance, ZooKeeper auth on, "+
		"the generator on a CPU of its own; medians of %d rounds\n", starveHonestRate, starveGoods, secs, starveAttackerRate, rounds)
	fmt.Fprintf(&t, "%-40s %14s %16s %7s %10s %12s %14s %8s\n", "defaults", "honest alone/s", "with attacker/s", "ratio", "target",
		"honest p99", "attacker p99", "oversold")
	for _, set := range starveSets {
		rs := runs[set.name]
		if len(rs) == 0 {
			continue
		}
		var alone, attacked, ratio, hp99, ap99 []float64
		oversold, behind := 0, ""
		for _, r := range rs {
			alone, attacked = append(alone, r.alone), append(attacked, r.attacked)
			ratio = append(ratio, r.attacked/max(r.alone, 1e-9))
			hp99, ap99 = append(hp99, r.honestP99), append(ap99, r.attackerP99)
			oversold += r.oversold
			if r.behind != "" {
				behind = r.behind
			}
		}
		met := "met"
		if medianOf(ratio) < 0.8 {
			met = "MISSED"
		}
		last := rs[len(rs)-1]
		fmt.Fprintf(&t, "%-40s %14.0f %16.0f %6.2fx %10s %9.0f ms %11.1f ms %8d\n", set.name, medianOf(alone), medianOf(attacked), medianOf(ratio),
			"≥0.8x "+met, medianOf(hp99), medianOf(ap99), oversold)
		fmt.Fprintf(&t, "  the last round's answers: the attacker's %s; the honest buyers' beside it %s\n", codesLine(last.attackerCodes), codesLine(last.honestCodes))
		if behind != "" {
			fmt.Fprintf(&t, "  the generator fell behind: %s\n", behind)
		}
	}
	return t.String()
}

// codesLine is a map of answer codes as "code n, ...", by code.
func codesLine(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
