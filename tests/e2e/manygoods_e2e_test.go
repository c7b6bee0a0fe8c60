package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/crowd"
	"github.com/seckill-zk/seckill-zk/internal/dashboard"
	"github.com/seckill-zk/seckill-zk/internal/metrics"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// A sale of many goods on two instances, per strategy with the lock path
// the README recommends for it: a Zipf crowd over 20 goods of stock 10, so
// that the hot goods sell out and the cold ones do not; exact goods by goods.
func TestManyGoodsOnTwoInstancesAreExactPerGoods(t *testing.T) {
	const goods, stock, buyers = 20, 10, 600
	for _, strategy := range []string{"seed", "batch", "atomic", "allot"} {
		t.Run(strategy, func(t *testing.T) {
			s := e2e.NewStack(t, e2e.WithStrategy(strategy), e2e.WithLockPath(manyLockPath(t, strategy)),
				e2e.WithMaxSleep(2*time.Millisecond), e2e.WithAcquireTimeout(2*time.Minute))
			s.Shop(t, "migrate")
			s.Shop(t, "stock", "set", "--goods", fmt.Sprintf("1-%d", goods), "--stock", strconv.Itoa(stock), "--clear-orders")
			bases := []string{s.Serve(t).URL, s.Serve(t).URL}
			set := make([]int32, goods)
			for i := range set {
				set[i] = int32(i + 1)
			}
			pick, err := crowd.NewPicker(set, "zipf:1.1", 3)
			if err != nil {
				t.Fatal(err)
			}
			answers, _ := closedLoadOf(bases, buyers, 100, pick.Goods)
			ok := map[int32]int{}
			codes := map[string]int{}
			for i, a := range answers {
				if a.Err != nil {
					t.Fatalf("buyer %d: %v", i, a.Err)
				}
				codes[a.Code]++
				if a.Status == http.StatusOK {
					ok[pick.Goods(i)]++
				}
			}
			s.CheckPerGoods(t, set, stock, ok, func(g int32) int {
				n := 0
				for i := range buyers {
					if pick.Goods(i) == g {
						n++
					}
				}
				return n
			})
			checkDashboardSale(t, s, bases[0], goods)
			if codes["ok"]+codes["sold_out"] != buyers {
				t.Errorf("answers %v: want only ok and sold_out", codes)
			}
			t.Logf("%s: answers %v", strategy, codes)
		})
	}
}

// checkDashboardSale checks the dashboard's sale across goods against the
// database, once the instance has sampled it after the sale.
func checkDashboardSale(t *testing.T, s e2e.Stack, base string, goods int) {
	t.Helper()
	left, _ := s.GoodsCounts(t)
	var want metrics.SaleSample
	for _, n := range left {
		want.Goods++
		if n <= 0 {
			want.SoldOut++
		}
		want.StockLeft += int64(max(n, 0))
	}
	var got dashboard.Data
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		a := e2e.Ask(http.MethodGet, base+"/dashboard/data")
		if a.Err != nil {
			t.Fatal(a.Err)
		}
		if err := a.Decode(&got); err != nil {
			t.Fatal(err)
		}
		if got.Sale.Goods == want.Goods && got.Sale.SoldOut == want.SoldOut && got.Sale.StockLeft == want.StockLeft || time.Now().After(deadline) {
			break
		}
	}
	if got.Sale.Goods != int64(goods) || got.Sale.SoldOut != want.SoldOut || got.Sale.StockLeft != want.StockLeft {
		t.Errorf("dashboard: %d goods, %d sold out, %d left; the database: %d, %d, %d", got.Sale.Goods, got.Sale.SoldOut, got.Sale.StockLeft, want.Goods, want.SoldOut, want.StockLeft)
	}
	if got.AllOutcomes["ok"] == 0 {
		t.Errorf("dashboard: no purchase counted across goods: %v", got.AllOutcomes)
	}
}

// manyGoodsFault is a faultPair of batch instances on one lock for every
// goods, goods 1-6 of stock 10 each. primeManyGoods has A sell a batch of
// several goods: A's first buyer (goods 6) holds the lock while ten more,
// two of each of goods 1-5 (manyGoodsSet), queue behind it; they form A's
// next batch, whose first packet matching next is held at the proxy
// (onHold runs then). The first buyer's goods is not one of theirs: buyers
// who come during a batch's claim join it when it claimed their goods. The
// first buyer has bought (one piece of goods 6); answers are the ten's.
func primeManyGoods(t *testing.T, p faultPair, next func([]byte) bool, onHold func()) (held *e2e.Hold, answers []<-chan e2e.Answer) {
	t.Helper()
	prime := p.db.HoldPacket(isStatement("ORDER BY id LIMIT 1 FOR UPDATE"), nil)
	first := e2e.PurchaseOfAsync(p.a.URL, primerGoods)
	p.heldBy(t, prime, "A's first claim")
	for i := range 10 {
		answers = append(answers, e2e.PurchaseOfAsync(p.a.URL, int32(i%5+1)))
	}
	time.Sleep(300 * time.Millisecond) // the ten queue behind the first batch
	held = p.db.HoldPacket(next, onHold)
	prime.Release()
	if a := e2e.Await(t, "A's first buyer", first); a.Status != http.StatusOK {
		t.Fatalf("A's first buyer answered %d %s", a.Status, a.Code)
	}
	p.heldBy(t, held, "A's batch of several goods")
	return held, answers
}

var manyGoodsSet = []int32{1, 2, 3, 4, 5}

// primerGoods is the goods of primeManyGoods' first buyer.
const primerGoods = 6

func newManyGoodsFault(t *testing.T, proxyZK bool, env ...e2e.Option) faultPair {
	t.Helper()
	p := newFaultPair(t, proxyZK, append([]e2e.Option{e2e.WithStrategy("batch")}, env...)...)
	p.Shop(t, "stock", "set", "--goods", "1-6", "--stock", "10", "--clear-orders")
	return p
}

// isMultiGoodsClaim matches the claim of a batch of several goods.
var isMultiGoodsClaim = isStatement("WHERE goods_no IN (")

// isMultiRowOrderInsert matches the packet of a batch's writes (its stocks
// and its orders' INSERT) when the INSERT has several rows.
func isMultiRowOrderInsert(payload []byte) bool {
	return isStatement("INSERT INTO order_info (")(payload) && bytes.Contains(payload, []byte("), ("))
}

// A batch of several goods whose lock passed on before its claim reached
// MySQL: A's claim of five goods is held while its ZooKeeper traffic stalls
// past the session timeout; B takes the lock and sells each of the goods.
// When A's claim arrives it finds B's newer token on the rows: A's ten
// buyers answer 503 lock_lost, nothing of theirs is written, and every
// goods is exact. Two checks refuse A, each enough: the fence in the claim
// of several goods (checkFence in claimGoods) and the guard before the
// writes (A's lease is lost); with both removed A's ten buyers answer 200
// under a lock that had passed on and this test fails, with either one
// left it passes.
func TestBatchOfSeveralGoodsIsFencedWhenItsLockPassedOn(t *testing.T) {
	// MariaDB would end A's transaction, idle while its claim is held (the
	// batch begins it with a statement of its own), after
	// mysql.idleTransactionTimeout; A's buyers would then buy anew.
	p := newManyGoodsFault(t, true, e2e.WithSetting("mysql.idleTransactionTimeout", "120s"))
	claim, fromA := primeManyGoods(t, p, isMultiGoodsClaim, p.zk.Stall)
	var fromB []<-chan e2e.Answer
	for _, g := range manyGoodsSet {
		fromB = append(fromB, e2e.PurchaseOfAsync(p.b.URL, g))
	}
	ok := map[int32]int{} // A's first buyer bought goods 6, not one of the set
	for i, ch := range fromB {
		if a := e2e.Await(t, "B", ch); a.Status != http.StatusOK {
			t.Fatalf("B's buyer of goods %d answered %d %s, want 200", manyGoodsSet[i], a.Status, a.Code)
		}
		ok[manyGoodsSet[i]]++
	}
	claim.Release()
	p.zk.Resume()
	for i, ch := range fromA {
		a := e2e.Await(t, "A", ch)
		switch {
		case a.Status == http.StatusOK:
			ok[int32(i%5+1)]++
			t.Errorf("A's buyer of goods %d answered 200 under a lock that had passed on", i%5+1)
		case a.Code != "lock_lost":
			t.Errorf("A's buyer of goods %d answered %d %s, want 503 lock_lost", i%5+1, a.Status, a.Code)
		}
	}
	p.CheckPerGoods(t, manyGoodsSet, 10, ok, nil)
	p.CheckNoOrphans(t)
}

// A batch of several goods whose holder stops (SIGSTOP) after its claim,
// as it sends its orders, for longer than the session timeout: B takes the
// lock once A's session has expired, and sells each goods once MariaDB has
// ended A's idle transaction (mysql.idleTransactionTimeout, by default the
// session timeout), while A is still stopped. After SIGCONT A's batch
// writes nothing (its buyers may buy anew), and every goods is exact.
func TestStoppedHolderOfABatchOfSeveralGoods(t *testing.T) {
	p := newManyGoodsFault(t, false)
	insert, fromA := primeManyGoods(t, p, isMultiRowOrderInsert, nil)
	if err := p.a.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.a.Cmd.Process.Signal(syscall.SIGCONT) }) // never leave it stopped
	ok := map[int32]int{}                                             // A's first buyer bought goods 6, not one of the set
	for _, g := range manyGoodsSet {
		if a := e2e.Await(t, "B", e2e.PurchaseOfAsync(p.b.URL, g)); a.Status != http.StatusOK {
			t.Fatalf("B's buyer of goods %d answered %d %s while A was stopped, want 200", g, a.Status, a.Code)
		}
		ok[g]++
	}
	if err := p.a.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	insert.Release()
	for i, ch := range fromA {
		g := int32(i%5 + 1)
		a := e2e.Await(t, "A", ch)
		if a.Status == http.StatusOK {
			ok[g]++
		} else if a.Status != http.StatusServiceUnavailable {
			t.Errorf("A's buyer of goods %d answered %d %s, want 200 or 503", g, a.Status, a.Code)
		}
	}
	p.CheckPerGoods(t, manyGoodsSet, 10, ok, nil)
	p.CheckNoOrphans(t)
}

// The lock path's advice for a sale of many goods is given when purchases
// of a second goods come, once, not at every start: a seed shop on the
// shared /Locks selling one goods says nothing of it; a second goods
// brings the advice and how to follow it.
func TestTheLockPathAdviceComesWithASecondGoods(t *testing.T) {
	s := e2e.NewStack(t, e2e.WithStrategy("seed"), e2e.WithMaxSleep(0))
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1-2", "--stock", "10", "--clear-orders")
	in := s.Serve(t)
	const advice = "every goods shares this lock"
	for range 3 {
		if a := e2e.Ask(http.MethodGet, in.URL+"/goods-stock/1"); a.Status != 200 {
			t.Fatalf("a purchase of goods 1: %d %s", a.Status, a.Code)
		}
	}
	if bytes.Contains([]byte(in.Logs()), []byte(advice)) {
		t.Fatalf("the advice for many goods after purchases of one:\n%s", in.Logs())
	}
	for range 3 {
		if a := e2e.Ask(http.MethodGet, in.URL+"/goods-stock/2"); a.Status != 200 {
			t.Fatalf("a purchase of goods 2: %d %s", a.Status, a.Code)
		}
	}
	if n := bytes.Count([]byte(in.Logs()), []byte(advice)); n != 1 {
		t.Fatalf("the advice %d times after purchases of two goods, want once:\n%s", n, in.Logs())
	}
	if !bytes.Contains([]byte(in.Logs()), []byte("restart the instances with it")) {
		t.Errorf("the advice does not say how to follow it")
	}
}
