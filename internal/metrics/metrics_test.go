package metrics_test

import (
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/seckill-zk/seckill-zk/internal/metrics"
	"github.com/seckill-zk/seckill-zk/internal/zklock"
)

// Label values stay bounded whatever the buyers send: goods numbers from
// bad input are "-", and beyond the tracked goods they share "other".
func TestGoodsLabelsAreBounded(t *testing.T) {
	m := metrics.New("seed", nil)
	for g := int32(1); g <= 100; g++ {
		m.Purchased(g, "sold_out", time.Millisecond)
	}
	m.Purchased(0, "invalid_goods_no", time.Millisecond)
	m.Purchased(7777, "goods_not_found", time.Millisecond)
	families, err := m.Gather()
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "seckill_purchases_total" {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "goods" {
					labels[l.GetValue()] += s.GetCounter().GetValue()
				}
			}
		}
	}
	if len(labels) != 32+2 {
		t.Errorf("%d goods label values, want 32 tracked + other + -: %v", len(labels), labels)
	}
	if labels["other"] != 68 || labels["-"] != 2 || labels["1"] != 1 {
		t.Errorf("other %v, - %v, 1 %v; want 68, 2, 1", labels["other"], labels["-"], labels["1"])
	}
	if m.Tracked(7777) || !m.Tracked(32) || m.Tracked(33) {
		t.Error("tracked goods: want 1..32 only")
	}
}

// The dashboard's snapshot: purchases by outcome, the lock waits of the last
// ten seconds and the sampled rows, from memory.
func TestSnapshot(t *testing.T) {
	m := metrics.New("batch", nil)
	obs := m.LockObserver(func(dir string) string {
		if strings.HasPrefix(dir, "/locks/") {
			return dir
		}
		return "" // the election's lock: not a purchase lock
	})
	for i := range 100 {
		obs.LockAcquired("/locks/goods/1", time.Duration(i+1)*time.Millisecond)
	}
	obs.LockAcquired("/seckill/leader", time.Hour)
	m.Purchased(1, "ok", time.Millisecond)
	m.Purchased(1, "ok", time.Millisecond)
	m.Purchased(1, "sold_out", time.Millisecond)
	m.SampledGoods(1, metrics.GoodsSample{Stock: 3, Orders: 2, OrdersByStatus: map[string]int64{"unpaid": 2}})
	m.SampledQueue(1, "/locks/goods/1", 5)
	s := m.Snapshot(1)
	if s.Outcomes["ok"] != 2 || s.Outcomes["sold_out"] != 1 || s.Strategy != "batch" {
		t.Errorf("snapshot %+v", s)
	}
	if s.LockWaits != 100 || s.LockWaitP50 != 51 || s.LockWaitP99 != 100 {
		t.Errorf("lock waits %d, p50 %v, p99 %v; want 100, 51, 100 (the election's wait left out)", s.LockWaits, s.LockWaitP50, s.LockWaitP99)
	}
	if !s.Sampled || s.Goods.Stock != 3 || s.QueueLength != 5 {
		t.Errorf("sampled %v stock %d queue %d", s.Sampled, s.Goods.Stock, s.QueueLength)
	}
	if s := m.Snapshot(2); s.Sampled {
		t.Error(fmt.Sprintf("goods 2 was never sampled: %+v", s))
	}
}

// A ZooKeeper client's lock counters are read at each scrape.
func TestLockStatsAreExported(t *testing.T) {
	m := metrics.New("seed", nil)
	stats := zklock.Stats{Wakeups: 7, Listings: 3, Shortcuts: 4}
	m.LockStats(func() zklock.Stats { return stats })
	stats.Listings = 5 // after registration: the scrape sees the current value
	families, err := m.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "seckill_lock_") && strings.HasSuffix(f.GetName(), "s_total") {
			got[f.GetName()] = f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	want := map[string]float64{"seckill_lock_wakeups_total": 7, "seckill_lock_listings_total": 5, "seckill_lock_shortcuts_total": 4}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lock counters %v, want %v", got, want)
	}
}

// A second pool's statistics show under its own db_name.
func TestPoolStatsAreExportedByName(t *testing.T) {
	db, err := sql.Open("mysql", "u:p@tcp(127.0.0.1:1)/x") // never connects: statistics only
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m := metrics.New("seed", nil)
	m.Pool("seckill_sales", db)
	families, err := m.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "go_sql_max_open_connections" {
			continue
		}
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "db_name" && l.GetValue() == "seckill_sales" {
					return
				}
			}
		}
	}
	t.Error("no go_sql_max_open_connections{db_name=\"seckill_sales\"}")
}

// The dashboard's history: a point a sample, with the goods' own answers
// (not another goods'), capped at a quarter of an hour.
func TestHistoryIsPerGoods(t *testing.T) {
	m := metrics.New("seed", nil)
	m.Purchased(1, "ok", time.Millisecond)
	m.Purchased(2, "ok", time.Millisecond)
	m.Purchased(2, "ok", time.Millisecond)
	for i := range 1000 {
		m.SampledGoods(1, metrics.GoodsSample{Stock: int32(1000 - i)})
	}
	h := m.History(1)
	if len(h) != 900 || h[0].Stock != 900 || h[899].Stock != 1 {
		t.Fatalf("%d points from stock %d to %d, want the last 900 (900 to 1)", len(h), h[0].Stock, h[len(h)-1].Stock)
	}
	if h[899].Outcomes["ok"] != 1 || m.Snapshot(2).Outcomes["ok"] != 2 {
		t.Errorf("goods 1's point counts %d sales, goods 2's snapshot %d; want 1 and 2", h[899].Outcomes["ok"], m.Snapshot(2).Outcomes["ok"])
	}
	if len(m.History(2)) != 0 {
		t.Error("goods 2 was never sampled but has a history")
	}
}

func TestTheSaleAcrossGoods(t *testing.T) {
	m := metrics.New("batch", nil)
	for g := int32(1); g <= 100; g++ {
		for range g % 7 {
			m.Purchased(g, "ok", time.Millisecond)
		}
	}
	m.Purchased(0, "invalid_goods_no", time.Millisecond)
	hot := m.TakeDemand(3)
	if len(hot) != 3 || hot[0].GoodsNo != 6 || hot[1].GoodsNo != 13 || hot[2].GoodsNo != 20 || hot[0].Rate <= 0 {
		t.Fatalf("hottest %+v, want goods 6, 13, 20 (6 purchases each)", hot)
	}
	if again := m.TakeDemand(3); len(again) != 0 {
		t.Fatalf("demand counted again: %+v", again)
	}
	m.SampledSale(metrics.SaleSample{Goods: 100, SoldOut: 3, StockLeft: 42, Hottest: hot})
	s := m.Snapshot(1)
	if !s.Sale.Sampled || s.Sale.Goods != 100 || s.Sale.SoldOut != 3 || len(s.Sale.Hottest) != 3 {
		t.Fatalf("sale %+v", s.Sale)
	}
	var ok int64
	for g := int64(1); g <= 100; g++ {
		ok += g % 7
	}
	if s.AllOutcomes["ok"] != ok || s.AllOutcomes["invalid_goods_no"] != 1 {
		t.Fatalf("answers across goods %v, want %d ok and 1 invalid_goods_no", s.AllOutcomes, ok)
	}
	for g := int32(1); g <= 2*metrics.MaxDemand; g++ {
		m.Purchased(g, "sold_out", time.Millisecond)
	}
	if n := len(m.TakeDemand(3 * metrics.MaxDemand)); n != metrics.MaxDemand {
		t.Fatalf("%d goods counted in one second, at most %d", n, metrics.MaxDemand)
	}
}

// A goods gets a label of its own only from an answer that says it exists
// and that its buyer passed authentication (ok, sold out, already bought,
// outside its window): a flood of unauthenticated or refused purchases of
// goods that do not exist cannot take the labels a real sale needs.
func TestALabelFloodCannotPushARealGoodsOut(t *testing.T) {
	m := metrics.New("seed", nil)
	for g := int32(900001); g <= 900040; g++ {
		for _, outcome := range []string{"unauthenticated", "too_many_requests", "busy", "buyer_mismatch", "invalid_request_id", "timeout"} {
			m.Purchased(g, outcome, time.Millisecond)
		}
	}
	m.Purchased(3, "ok", time.Millisecond)
	if !m.Tracked(3) || m.Tracked(900001) {
		t.Fatalf("after the flood: goods 3 tracked %v, 900001 tracked %v; want 3 only", m.Tracked(3), m.Tracked(900001))
	}
	if s := m.Snapshot(3); s.Outcomes["ok"] != 1 {
		t.Errorf("goods 3's dashboard outcomes %v, want its 200", s.Outcomes)
	}
	for _, outcome := range []string{"sold_out", "already_bought", "not_started", "ended"} {
		g := int32(len(outcome)) + 100 // a goods per outcome
		m.Purchased(g, outcome, time.Millisecond)
		if !m.Tracked(g) {
			t.Errorf("an answer %s (the goods exists) did not track goods %d", outcome, g)
		}
	}
}

// What keeps an instance from selling or sweeping is exported and put on
// the dashboard in words; nothing is said while all is well.
func TestCoordinationProblemsAreExportedAndSaid(t *testing.T) {
	m := metrics.New("seed", nil)
	c := metrics.Coordination{Electing: true, Participants: 2}
	m.CoordinationStats(func() metrics.Coordination { return c })
	gauges := func() map[string]float64 {
		families, err := m.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]float64{}
		for _, f := range families {
			if !strings.HasPrefix(f.GetName(), "seckill_zookeeper_paths") && !strings.HasPrefix(f.GetName(), "seckill_zookeeper_noauth") &&
				!strings.HasPrefix(f.GetName(), "seckill_leader_") {
				continue
			}
			if x := f.GetMetric()[0]; x.GetGauge() != nil {
				got[f.GetName()] = x.GetGauge().GetValue()
			} else if x.GetCounter() != nil {
				got[f.GetName()] = x.GetCounter().GetValue()
			}
		}
		return got
	}
	want := map[string]float64{"seckill_zookeeper_paths_owned": 1, "seckill_zookeeper_paths_open": 0, "seckill_zookeeper_noauth_total": 0, "seckill_leader_queued": 1, "seckill_leader_participants": 2}
	if got := gauges(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("all well: %v, want %v", got, want)
	}
	if p := m.Snapshot(1).Problems; len(p) != 0 {
		t.Errorf("all well, the dashboard says %q", p)
	}
	c = metrics.Coordination{PathsProblem: "zookeeper path /Locks (lock.path) is not this shop's", PathsOpen: "open to anyone", NoAuth: 3, Electing: true,
		ElectionErr: "leader election: could not queue", Participants: 0}
	want = map[string]float64{"seckill_zookeeper_paths_owned": 0, "seckill_zookeeper_paths_open": 1, "seckill_zookeeper_noauth_total": 3, "seckill_leader_queued": 0, "seckill_leader_participants": 0}
	if got := gauges(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("a path taken, the election refused: %v, want %v", got, want)
	}
	p := m.Snapshot(1).Problems
	if len(p) != 4 || !strings.Contains(p[0], "/Locks") || !strings.Contains(p[1], "open to anyone") || !strings.Contains(p[2], "could not queue") || !strings.Contains(p[3], "nobody expires") {
		t.Errorf("the dashboard says %q; want the path, the election and that nobody sweeps", p)
	}
}
