package e2e

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // the test reads the tables directly
	"github.com/go-zookeeper/zk"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

const (
	e2eStock    = 50
	e2eRequests = 300
)

// Two instances, one database, one ZooKeeper: the seed's two JVMs.
// The locked run uses a per-goods lock path template.
func twoInstances(t *testing.T, lockEnabled bool, opts ...e2e.Option) (e2e.Stack, e2e.Outcome) {
	t.Helper()
	s := e2e.NewStack(t, append([]e2e.Option{
		e2e.WithLockPath(e2e.Path(t) + "/locks/goods/{goodsNo}"),
		e2e.WithSetting("lock.enabled", lockEnabled),
		e2e.WithMaxSleep(20 * time.Millisecond),
		e2e.WithAcquireTimeout(2 * time.Minute), // 300 buyers queue through one lock
		e2e.WithLogLevel("info"),                // the test reads the "listening" line
	}, opts...)...)
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", fmt.Sprint(e2eStock), "--clear-orders")
	bases := []string{s.Serve(t).URL, s.Serve(t).URL}
	return s, e2e.Buy(t, bases, e2eRequests)
}

func TestTwoInstancesWithoutLockOversell(t *testing.T) {
	s, out := twoInstances(t, false)
	stock, orders := s.Counts(t)
	succeeded := out.Status[http.StatusOK]
	sold := e2eStock - stock
	t.Logf("lock off: %d succeeded, %d order rows, stock %d -> %d, statuses %v, codes %v", succeeded, orders, e2eStock, stock, out.Status, out.Codes)
	if succeeded <= sold {
		t.Errorf("no overselling reproduced: %d successes for a stock decrease of %d", succeeded, sold)
	}
	if orders != succeeded {
		t.Errorf("%d order rows for %d successful answers: every 200 must have its order row", orders, succeeded)
	}
	for status, n := range out.Status {
		if status != http.StatusOK && status != http.StatusConflict {
			t.Errorf("%d answers with status %d", n, status)
		}
	}
}

func TestTwoInstancesWithLockSellExactlyTheStock(t *testing.T) {
	for _, strategy := range []string{"seed", "batch", "atomic"} {
		t.Run(strategy, func(t *testing.T) {
			s, out := twoInstances(t, true, e2e.WithStrategy(strategy))
			stock, orders := s.Counts(t)
			t.Logf("%s: statuses %v, codes %v, stock %d, orders %d", strategy, out.Status, out.Codes, stock, orders)
			if got := out.Status[http.StatusOK]; got != e2eStock {
				t.Errorf("%d successes, want exactly %d", got, e2eStock)
			}
			if got := out.Codes["sold_out"]; got != e2eRequests-e2eStock {
				t.Errorf("%d sold-out answers, want %d", got, e2eRequests-e2eStock)
			}
			if len(out.Status) != 2 || out.Status[http.StatusConflict] != e2eRequests-e2eStock {
				t.Errorf("statuses %v, want only 200 and 409", out.Status)
			}
			if stock != 0 || orders != e2eStock {
				t.Errorf("stock %d with %d order rows, want 0 with %d", stock, orders, e2eStock)
			}
		})
	}
}

// Once a goods is sold out, buyers are answered from what the instance saw,
// without queueing for the lock: no lock node is created for them, also
// after the sold-out mark's second (a read renews it). A restock reaches
// them within a second.
func TestSoldOutAnswersTakeNoLockAndARestockSellsAgain(t *testing.T) {
	for _, strategy := range []string{"seed", "batch"} {
		t.Run(strategy, func(t *testing.T) {
			s := e2e.NewStack(t, e2e.WithStrategy(strategy), e2e.WithLogLevel("info"))
			s.Shop(t, "migrate")
			s.Shop(t, "stock", "set", "--goods", "1", "--stock", "1", "--clear-orders")
			in := s.Serve(t)
			if a := e2e.Await(t, "the last piece", e2e.PurchaseAsync(in.URL)); a.Status != http.StatusOK {
				t.Fatalf("the last piece: %d %s", a.Status, a.Code)
			}
			if a := e2e.Await(t, "the first sold-out buyer", e2e.PurchaseAsync(in.URL)); a.Code != "sold_out" {
				t.Fatalf("after the last piece: %d %s, want sold_out", a.Status, a.Code)
			}
			conn := e2e.ZKConn(t, s.ZKServers)
			// crowd sends 20 buyers and counts the lock nodes they created or
			// deleted by the lock's parent's child version. The parent is a
			// container: ZooKeeper reaps it once empty, on its own schedule
			// (every minute): then the count is taken again, once.
			crowd := func(what string) {
				t.Helper()
				for attempt := 0; ; attempt++ {
					// Absent: reaped before the crowd (or during the last
					// attempt's), no lock node since; a buyer who locked
					// would make it again. go-zookeeper's Get answers a
					// (zero) Stat with ErrNoNode too: absence is the error.
					_, before, err := conn.Get(s.LockPath)
					absent := errors.Is(err, zk.ErrNoNode)
					if err != nil && !absent {
						t.Fatalf("the lock's parent: %v", err)
					}
					var answers []<-chan e2e.Answer
					for range 20 {
						answers = append(answers, e2e.PurchaseAsync(in.URL))
					}
					for _, ch := range answers {
						if a := e2e.Await(t, what, ch); a.Code != "sold_out" {
							t.Fatalf("%s: %d %s, want sold_out", what, a.Status, a.Code)
						}
					}
					_, after, err := conn.Get(s.LockPath)
					switch {
					case errors.Is(err, zk.ErrNoNode) && absent:
						return // absent before and after: no buyer made it again
					case errors.Is(err, zk.ErrNoNode) && attempt == 0:
						continue // reaped during the crowd: count again
					case err != nil:
						t.Fatal(err)
					case absent:
						t.Errorf("20 sold-out buyers (%s) made the lock's parent again", what)
					default:
						if created := after.Cversion - before.Cversion; created != 0 {
							t.Errorf("20 sold-out buyers (%s) created or deleted %d lock nodes, want none", what, created)
						}
					}
					return
				}
			}
			crowd("all at once, well within the mark's second")
			// The mark expires; a read without the lock renews it.
			time.Sleep(1200 * time.Millisecond)
			crowd("after the mark's second")
			s.Shop(t, "stock", "set", "--goods", "1", "--stock", "2")
			deadline := time.Now().Add(5 * time.Second)
			for {
				a := e2e.Await(t, "a buyer after the restock", e2e.PurchaseAsync(in.URL))
				if a.Status == http.StatusOK {
					break
				}
				if a.Code != "sold_out" || time.Now().After(deadline) {
					t.Fatalf("after the restock: %d %s", a.Status, a.Code)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// The buyers waiting for the lock when the last piece sells leave the queue
// at once: the buyer who bought held the lock, and at most the one it passed
// to while its sale committed (the mark comes with the commit's answer). The
// holder's sale is held at the MySQL proxy until every other buyer has its
// node in the lock's queue. Fails when each queued buyer takes the lock in
// turn to hear "sold out" (ten holds).
func TestQueuedBuyersLeaveTheLockQueueAtTheSellOut(t *testing.T) {
	const buyers = 10
	s := e2e.NewStack(t, e2e.WithLogLevel("info"))
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "1", "--clear-orders")
	db := e2e.NewMySQLProxy(t, e2e.MySQLAddr(t, s.DSN))
	sale := db.HoldPacket(isStatement("INSERT INTO order_info"), nil)
	in := s.Serve(t, e2e.WithSetting("mysql.dsn", e2e.ViaProxy(t, s.DSN, db.Addr())))
	var answers []<-chan e2e.Answer
	for range buyers {
		answers = append(answers, e2e.PurchaseAsync(in.URL))
	}
	select {
	case <-sale.Held():
	case <-time.After(30 * time.Second):
		t.Fatalf("the holder's sale never came\n%s", in.Logs())
	}
	s.WaitForQueue(t, buyers)
	sale.Release()
	codes := map[string]int{}
	for _, ch := range answers {
		codes[e2e.Await(t, "a buyer", ch).Code]++
	}
	if codes["ok"] != 1 || codes["sold_out"] != buyers-1 {
		t.Errorf("answers %v, want 1 ok and %d sold_out", codes, buyers-1)
	}
	if holds := e2e.MetricValue(t, in.URL, `seckill_lock_hold_seconds_count{path="`+s.LockPath+`"}`); holds > 2 {
		t.Errorf("%v lock holds, want 1 or 2: the queued buyers took the lock in turn to hear sold out", holds)
	}
	if stock, orders := s.Counts(t); stock != 0 || orders != 1 {
		t.Errorf("stock %d with %d orders, want 0 with 1", stock, orders)
	}
}

// SIGINT while purchases are in flight: they finish (and are answered and
// written), the locks are released, and the process exits 0.
func TestShutdownFinishesInFlightPurchases(t *testing.T) {
	s := e2e.NewStack(t, e2e.WithMaxSleep(1500*time.Millisecond), e2e.WithLogLevel("info"))
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "10", "--clear-orders")
	in := s.Serve(t)

	const buyers = 3 // they queue on the lock: the last finishes a few seconds after SIGINT
	got := make(chan int, buyers)
	for range buyers {
		go func() {
			a := e2e.Ask(http.MethodGet, in.URL+"/goods-stock/1")
			if a.Err != nil {
				t.Errorf("purchase in flight: %v", a.Err)
			}
			got <- a.Status
		}()
	}
	// All three are in the handler when each has its node in the lock's
	// queue (one holds, two wait).
	s.WaitForQueue(t, buyers)
	if err := in.Stop(t); err != nil {
		t.Fatalf("exit after SIGINT: %v\n%s", err, in.Logs())
	}
	for range buyers {
		if status := <-got; status != http.StatusOK {
			t.Errorf("an in-flight purchase was answered %d, want 200", status)
		}
	}
	stock, orders := s.Counts(t)
	if stock != 10-buyers || orders != buyers {
		t.Errorf("stock %d with %d orders after shutdown, want %d with %d", stock, orders, 10-buyers, buyers)
	}
	if !strings.Contains(in.Logs(), "msg=stopped") {
		t.Errorf("no clean stop in the log:\n%s", in.Logs())
	}
}
