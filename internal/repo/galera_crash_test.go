package repo_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/repo"
	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
	"github.com/seckill-zk/seckill-zk/tests/framework/history"
)

// TestGaleraWholeClusterCrash: two shops (batch) sell through nodes 1 and
// 2 of a cluster of the test's own, every other buyer paying at once; all
// three nodes are SIGKILLed together mid-sale, then recovered as an
// operator would (scripts/stack.sh galera-recover: the most advanced node
// bootstraps, the others rejoin). For innodb_flush_log_at_trx_commit 1, 2
// and 0 it counts the purchases and payments answered 200 that the
// recovered cluster no longer has, and the history checker judges every
// history. With 1 and 2 nothing acknowledged may be lost (a process crash:
// 2 writes each commit to the OS); with 0 what is lost is reported, and
// the checker must say the history is not the shop's exactly when
// something was. GALERA_CRASH_RUNS runs each setting that many times
// (default 1).
func TestGaleraWholeClusterCrash(t *testing.T) {
	runs := 1
	if v := os.Getenv("GALERA_CRASH_RUNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("GALERA_CRASH_RUNS=%q: want a positive number", v)
		}
		runs = n
	}
	c := e2e.StartGalera(t, 23500)
	n1, n2, n3 := c.Nodes[0], c.Nodes[1], c.Nodes[2]
	for _, flush := range []int{1, 2, 0} {
		t.Run(fmt.Sprintf("innodb_flush_log_at_trx_commit=%d", flush), func(t *testing.T) {
			var lostBuys, lostPays, acked, paidAcked int
			for run := range runs {
				c.SetGlobal(t, fmt.Sprintf("innodb_flush_log_at_trx_commit=%d", flush))
				dsns := e2e.GaleraDatabase(t, c.Nodes)
				a := openMigrated(t, listDSN(t, dsns[0], n1, n1, n2, n3))
				b := openMigrated(t, listDSN(t, dsns[1], n2, n2, n3, n1))
				const stock = 1_000_000 // the crash, not the stock, ends the sale
				if err := a.SetStock(context.Background(), 1, stock, repo.StockReset{ClearOrders: true}); err != nil {
					t.Fatal(err)
				}
				cfg := service.Config{AcquireTimeout: 5 * time.Second, ConflictRetries: -1}
				shops := newShops(t, "batch", newMemLocker(), cfg, slog.New(slog.DiscardHandler), a, b)
				ctx, cancel := context.WithCancel(context.Background())
				var rec history.Recorder
				var sold atomic.Int64
				var wg sync.WaitGroup
				for w := range 100 {
					wg.Go(func() {
						for i := w; ctx.Err() == nil; i += 100 {
							rid := fmt.Sprintf("crash-%d-%d", run, i)
							call := time.Now()
							o, err := shops[i%2].Purchase(ctx, service.PurchaseRequest{GoodsNo: 1, RequestID: rid})
							recordPurchase(&rec, i, rid, call, o, err)
							if err != nil {
								time.Sleep(10 * time.Millisecond) // the cluster is down: do not spin
								continue
							}
							sold.Add(1)
							if i%2 == 0 {
								store := []*repo.Store{a, b}[i%2]
								call := time.Now()
								p, err := store.PayOrder(ctx, o.ID, "", time.Now(), time.Time{})
								recordPay(&rec, i, o.ID, call, p, err)
							}
						}
					})
				}
				for sold.Load() < 2000 && ctx.Err() == nil {
					time.Sleep(10 * time.Millisecond)
				}
				spread := c.CrashAll(t)
				time.Sleep(time.Second) // the buyers in flight hear the crash
				cancel()
				wg.Wait()
				report := c.Recover(t)
				final := finalRows(t, dsns[2])
				rows := map[string]history.Row{}
				for _, r := range final.Orders {
					rows[r.RequestID] = r
				}
				byID := map[uint64]history.Row{}
				for _, r := range final.Orders {
					byID[r.ID] = r
				}
				var lb, lp, ab, ap int
				for _, op := range rec.Ops() {
					switch {
					case op.Kind == history.Buy && op.Result == history.OK:
						ab++
						if _, ok := rows[op.RequestID]; !ok {
							lb++
						}
					case op.Kind == history.Pay && op.Result == history.OK:
						ap++
						if byID[op.Order].Status != service.OrderPaid {
							lp++
						}
					}
				}
				check := history.Check(rec.Ops(), map[int32]int32{1: stock}, final, time.Minute, "")
				t.Logf("run %d: crashed within %v; %d purchases and %d payments answered 200, lost %d and %d; history of %d operations legal %v (checked in %v)\n%s",
					run, spread.Round(time.Microsecond), ab, ap, lb, lp, check.Ops, check.Legal, check.Took.Round(time.Millisecond), report)
				if check.Legal != (lb == 0 && lp == 0) {
					t.Errorf("run %d: the checker says legal %v with %d purchases and %d payments lost", run, check.Legal, lb, lp)
				}
				if flush != 0 && (lb > 0 || lp > 0) {
					t.Errorf("run %d: %d acknowledged purchases and %d payments lost with innodb_flush_log_at_trx_commit=%d", run, lb, lp, flush)
				}
				lostBuys, lostPays, acked, paidAcked = lostBuys+lb, lostPays+lp, acked+ab, paidAcked+ap
			}
			t.Logf("innodb_flush_log_at_trx_commit=%d, %d runs: %d of %d acknowledged purchases and %d of %d payments lost",
				flush, runs, lostBuys, acked, lostPays, paidAcked)
		})
	}
}
