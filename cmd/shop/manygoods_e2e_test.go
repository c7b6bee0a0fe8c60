package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/crowd"
	"github.com/seckill-zk/seckill-zk/internal/dashboard"
	"github.com/seckill-zk/seckill-zk/internal/itest"
	"github.com/seckill-zk/seckill-zk/internal/metrics"
)

// A sale of many goods on two instances, per strategy with the lock path
// the README recommends for it: a Zipf crowd over 20 goods of stock 10, so
// that the hot goods sell out and the cold ones do not; exact goods by goods.
func TestManyGoodsOnTwoInstancesAreExactPerGoods(t *testing.T) {
	const goods, stock, buyers = 20, 10, 600
	for _, strategy := range []string{"seed", "batch", "atomic"} {
		t.Run(strategy, func(t *testing.T) {
			s := newStack(t, "SHOP_PURCHASE_STRATEGY="+strategy, "SHOP_LOCK_PATH="+manyLockPath(t, strategy),
				"SHOP_DEMO_MAXSLEEP=2ms", "SHOP_LOCK_ACQUIRETIMEOUT=2m")
			s.shop(t, "migrate")
			s.shop(t, "stock", "set", "--goods", fmt.Sprintf("1-%d", goods), "--stock", strconv.Itoa(stock), "--clear-orders")
			bases := []string{s.serve(t).url, s.serve(t).url}
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
				if a.err != nil {
					t.Fatalf("buyer %d: %v", i, a.err)
				}
				codes[a.code]++
				if a.status == http.StatusOK {
					ok[pick.Goods(i)]++
				}
			}
			s.checkPerGoods(t, set, stock, ok, func(g int32) int {
				n := 0
				for i := range buyers {
					if pick.Goods(i) == g {
						n++
					}
				}
				return n
			})
			s.checkDashboardSale(t, bases[0], goods)
			if codes["ok"]+codes["sold_out"] != buyers {
				t.Errorf("answers %v: want only ok and sold_out", codes)
			}
			t.Logf("%s: answers %v", strategy, codes)
		})
	}
}

// checkDashboardSale checks the dashboard's sale across goods against the
// database, once the instance has sampled it after the sale.
func (s stack) checkDashboardSale(t *testing.T, base string, goods int) {
	t.Helper()
	left, _ := goodsCounts(t, s.dsn)
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
		resp, err := http.Get(base + "/dashboard/data")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&got)
		resp.Body.Close()
		if err != nil {
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

// checkPerGoods checks each goods of set after a sale from stock: no goods
// oversold, every 200 with its order row, and a goods that had at least as
// many buyers as pieces (asked) sold out.
func (s stack) checkPerGoods(t *testing.T, set []int32, stock int, ok map[int32]int, asked func(int32) int) {
	t.Helper()
	left, orders := goodsCounts(t, s.dsn)
	for _, g := range set {
		if over := orders[g] - (stock - left[g]); over != 0 {
			t.Errorf("goods %d OVERSOLD %d: %d order rows for a stock that went %d -> %d", g, over, orders[g], stock, left[g])
		}
		if ok[g] != orders[g] {
			t.Errorf("goods %d: %d answers 200 for %d order rows", g, ok[g], orders[g])
		}
		if asked != nil && asked(g) >= stock && left[g] != 0 {
			t.Errorf("goods %d: %d left after %d buyers", g, left[g], asked(g))
		}
	}
}

// purchaseOfAsync sends one purchase of goodsNo and delivers its answer.
func purchaseOfAsync(base string, goodsNo int32) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		client := &http.Client{Timeout: 2 * time.Minute}
		resp, err := client.Get(fmt.Sprintf("%s/goods-stock/%d", base, goodsNo))
		if err != nil {
			ch <- answer{err: err}
			return
		}
		ch <- answer{status: resp.StatusCode, code: decodeCode(resp)}
	}()
	return ch
}

// manyGoodsFault is a faultPair of batch instances on one lock for every
// goods, goods 1-5 of stock 10 each. primeManyGoods has A sell a batch of
// several goods: A's first buyer (goods 1) holds the lock while ten more,
// two of each goods, queue behind it; they form A's next batch, whose
// first packet matching next is held at the proxy (onHold runs then). The
// first buyer has bought (one piece of goods 1); answers are the ten's.
func primeManyGoods(t *testing.T, p faultPair, next func([]byte) bool, onHold func()) (held *itest.Hold, answers []<-chan answer) {
	t.Helper()
	prime := p.db.HoldPacket(isStatement("ORDER BY id LIMIT 1 FOR UPDATE"), nil)
	first := purchaseOfAsync(p.a.url, 1)
	p.heldBy(t, prime, "A's first claim")
	for i := range 10 {
		answers = append(answers, purchaseOfAsync(p.a.url, int32(i%5+1)))
	}
	time.Sleep(300 * time.Millisecond) // the ten queue behind the first batch
	held = p.db.HoldPacket(next, onHold)
	prime.Release()
	if a := await(t, "A's first buyer", first); a.status != http.StatusOK {
		t.Fatalf("A's first buyer answered %d %s", a.status, a.code)
	}
	p.heldBy(t, held, "A's batch of several goods")
	return held, answers
}

var manyGoodsSet = []int32{1, 2, 3, 4, 5}

func newManyGoodsFault(t *testing.T, proxyZK bool, env ...string) faultPair {
	t.Helper()
	p := newFaultPair(t, proxyZK, append([]string{"SHOP_PURCHASE_STRATEGY=batch"}, env...)...)
	p.shop(t, "stock", "set", "--goods", "1-5", "--stock", "10", "--clear-orders")
	return p
}

// isMultiGoodsClaim matches the claim of a batch of several goods.
var isMultiGoodsClaim = isStatement("WHERE goods_no IN (")

// isMultiRowOrderInsert matches the INSERT of a batch's orders when it has
// several rows.
func isMultiRowOrderInsert(payload []byte) bool {
	return isStatement("INSERT INTO `order_info`")(payload) && bytes.Contains(payload, []byte("),("))
}

// A batch of several goods whose lock passed on before its claim reached
// MySQL: A's claim of five goods is held while its ZooKeeper traffic stalls
// past the session timeout; B takes the lock and sells each of the goods.
// When A's claim arrives it finds B's newer token on the rows: A's ten
// buyers answer 503 lock_lost, nothing of theirs is written, and every
// goods is exact. Two checks refuse A, each enough: the fence in the claim
// of several goods (checkFence in claimGoods) and the guard before the
// commit (A's lease is lost); with both removed A's ten buyers answer 200
// under a lock that had passed on and this test fails, with either one
// left it passes.
func TestBatchOfSeveralGoodsIsFencedWhenItsLockPassedOn(t *testing.T) {
	// MariaDB would end A's transaction, idle while its claim is held (the
	// batch begins it with a statement of its own), after
	// mysql.idleTransactionTimeout; A's buyers would then buy anew.
	p := newManyGoodsFault(t, true, "SHOP_MYSQL_IDLETRANSACTIONTIMEOUT=120s")
	claim, fromA := primeManyGoods(t, p, isMultiGoodsClaim, p.zk.Stall)
	var fromB []<-chan answer
	for _, g := range manyGoodsSet {
		fromB = append(fromB, purchaseOfAsync(p.b.url, g))
	}
	ok := map[int32]int{1: 1} // A's first buyer
	for i, ch := range fromB {
		if a := await(t, "B", ch); a.status != http.StatusOK {
			t.Fatalf("B's buyer of goods %d answered %d %s, want 200", manyGoodsSet[i], a.status, a.code)
		}
		ok[manyGoodsSet[i]]++
	}
	claim.Release()
	p.zk.Resume()
	for i, ch := range fromA {
		a := await(t, "A", ch)
		switch {
		case a.status == http.StatusOK:
			ok[int32(i%5+1)]++
			t.Errorf("A's buyer of goods %d answered 200 under a lock that had passed on", i%5+1)
		case a.code != "lock_lost":
			t.Errorf("A's buyer of goods %d answered %d %s, want 503 lock_lost", i%5+1, a.status, a.code)
		}
	}
	p.checkPerGoods(t, manyGoodsSet, 10, ok, nil)
	p.checkNoOrphans(t)
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
	if err := p.a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.a.cmd.Process.Signal(syscall.SIGCONT) }) // never leave it stopped
	ok := map[int32]int{1: 1}                                         // A's first buyer
	for _, g := range manyGoodsSet {
		if a := await(t, "B", purchaseOfAsync(p.b.url, g)); a.status != http.StatusOK {
			t.Fatalf("B's buyer of goods %d answered %d %s while A was stopped, want 200", g, a.status, a.code)
		}
		ok[g]++
	}
	if err := p.a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	insert.Release()
	for i, ch := range fromA {
		g := int32(i%5 + 1)
		a := await(t, "A", ch)
		if a.status == http.StatusOK {
			ok[g]++
		} else if a.status != http.StatusServiceUnavailable {
			t.Errorf("A's buyer of goods %d answered %d %s, want 200 or 503", g, a.status, a.code)
		}
	}
	p.checkPerGoods(t, manyGoodsSet, 10, ok, nil)
	p.checkNoOrphans(t)
}
