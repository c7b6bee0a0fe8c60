package e2e

import (
	"bytes"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// Made-up goods numbers never reach the lock: 300 purchases of 300 goods
// that do not exist are each answered 404, and no ZooKeeper node is made
// under a lock path per goods, for each strategy that locks. Before,
// batch's and allot's first buyer of a goods went on to the lock unread
// (their sale reads the row), and 2 000 made-up goods made 2 000 nodes
// (#75 item 3).
func TestMadeUpGoodsNeverReachTheLock(t *testing.T) {
	for _, strategy := range []string{"seed", "batch", "allot"} {
		t.Run(strategy, func(t *testing.T) {
			dir := e2e.Path(t) + "/locks/goods"
			s := e2e.NewStack(t, e2e.WithStrategy(strategy), e2e.WithLockPath(dir+"/{goodsNo}"), e2e.WithMaxSleep(0))
			s.Shop(t, "migrate")
			s.Shop(t, "stock", "set", "--goods", "1", "--stock", "5", "--clear-orders")
			in := s.Serve(t)
			answers, _ := closedLoadOf([]string{in.URL}, 300, 20, func(i int) int32 { return int32(1_000_000 + i) })
			codes := map[string]int{}
			for _, a := range answers {
				if a.Err != nil {
					t.Fatalf("a purchase: %v", a.Err)
				}
				codes[fmt.Sprintf("%d %s", a.Status, a.Code)]++
			}
			if codes["404 goods_not_found"] != 300 {
				t.Errorf("answers %v, want 300 × 404 goods_not_found", codes)
			}
			conn, _, err := zk.Connect(s.ZKServers, 10*time.Second, zk.WithLogInfo(false))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			kids, _, err := conn.Children(dir)
			if err != nil && err != zk.ErrNoNode {
				t.Fatalf("children of %s: %v", dir, err)
			}
			if len(kids) != 0 {
				t.Errorf("%d ZooKeeper nodes under %s for goods that do not exist, e.g. %s", len(kids), dir, kids[0])
			}
		})
	}
}

// The goods query counts a goods' orders at most once a second per
// instance, however many ask: 100 reads at concurrency 4 cost a count
// query or two a second, not 100, and each answer says how old its count
// is. Before, each read counted every order of the goods (300 000 orders:
// 0.27 s of MariaDB each; #75 item 4).
func TestTheGoodsQueryCountsTheOrdersOnceASecond(t *testing.T) {
	s := e2e.NewStack(t, e2e.WithMaxSleep(0))
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "50", "--clear-orders")
	var counts atomic.Int64
	db := e2e.NewMySQLProxy(t, e2e.MySQLAddr(t, s.DSN))
	db.HoldPacket(func(payload []byte) bool {
		if bytes.Contains(payload, []byte("COUNT(*) AS n FROM `order_info`")) {
			counts.Add(1)
		}
		return false // counted, never held
	}, nil)
	in := s.Serve(t, e2e.WithSetting("mysql.dsn", e2e.ViaProxy(t, s.DSN, db.Addr())))
	for i := range 10 {
		if a := e2e.Ask(http.MethodPost, fmt.Sprintf("%s/goods-stock/1?userId=u%d", in.URL, i)); a.Status != http.StatusOK {
			t.Fatalf("a purchase: %d %s %v", a.Status, a.Code, a.Err)
		}
	}
	before, start := counts.Load(), time.Now()
	answers, _ := closedLoadOfPath([]string{in.URL}, 100, 4, "/goods/1")
	took := time.Since(start)
	for _, a := range answers {
		var body struct {
			Orders      int64
			OrdersAgeMs *int64
		}
		if a.Err != nil || a.Status != http.StatusOK || a.Decode(&body) != nil || body.OrdersAgeMs == nil || *body.OrdersAgeMs > 5000 {
			t.Fatalf("GET /goods/1: %d %v %+v, want 200 with its orders' age", a.Status, a.Err, body)
		}
	}
	// One count a second of the reads, and the dashboard's sampler's (it
	// reads the tracked goods every second, from the same counts).
	n, most := counts.Load()-before, int64(took/time.Second)+2
	t.Logf("100 reads in %v: %d count queries", took.Round(time.Millisecond), n)
	if n > most {
		t.Errorf("100 reads in %v made %d count queries, want at most %d (one a second)", took.Round(time.Millisecond), n, most)
	}
}
