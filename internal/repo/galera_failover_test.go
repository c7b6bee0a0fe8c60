package repo_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/repo"
	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
	"github.com/seckill-zk/seckill-zk/tests/framework/history"
)

// listDSN is dsn with its server replaced by the list addrs.
func listDSN(t *testing.T, dsn, node string, addrs ...string) string {
	t.Helper()
	old := "tcp(" + node + ")"
	if !strings.Contains(dsn, old) {
		t.Fatalf("%s has no %s", dsn, old)
	}
	return strings.Replace(dsn, old, "tcp("+strings.Join(addrs, ",")+")", 1)
}

// TestGaleraNodeKilledMidSale: two shops on a 3-node cluster of the test's
// own, A listing node 1 first and B node 2 (the store's failover: a DSN
// naming several servers). Node 2, B's own node and the writer of goods 1
// (node 1 mod 3 of the sorted list), is SIGKILLed once 50 of 300 pieces are
// sold, and restarted (it rejoins by state transfer) after the sale. Every
// buyer is answered, both shops sell again, every 200 has its order on
// every node, nothing is sold twice or lost (the stock plus the orders is
// what it was), an order without its buyer's 200 only after
// outcome_unknown; the time from the kill to each shop's next sale is
// logged. Before node 2 is back, B pays an order and reads the goods
// through its own pool, which dials node 2 first.
func TestGaleraNodeKilledMidSale(t *testing.T) {
	c := e2e.StartGalera(t, 23400)
	galeraFaultedSale(t, c, galeraFault{
		what:   "node 2 was killed",
		strike: func(t *testing.T) { c.Kill(t, 2) },
		undo:   func(t *testing.T) { c.Restart(t, 2) },
	})
}

// TestGaleraNodePartitionedMidSale is the same sale with node 2 cut from
// nodes 1 and 3 (packets dropped both ways, e2e.Network) instead of killed,
// while both shops still reach it: the shops write through a node that is
// no longer part of the cluster. Galera's node 2 hears nothing from the
// others, declares them gone (evs.suspect_timeout, 5 s) and turns
// non-Primary; a commit on it meanwhile waits, and after that its
// statements are refused (1047, "WSREP has not yet prepared node for
// application use"). Expected, before the run: the writes move to node 3
// (the next of each DSN's list), the sale stalls for about the suspect
// timeout, and the checks of the killed node's sale all hold: every buyer
// answered, both shops selling again, every 200 with its order on every
// node, the stock and the orders adding up, the history legal. The
// partition lasts past the sale; node 2 rejoins once healed.
func TestGaleraNodePartitionedMidSale(t *testing.T) {
	n := e2e.NewNetwork(t)
	hosts := []*e2e.Host{n.Host("g1"), n.Host("g2"), n.Host("g3")}
	c := e2e.StartGaleraIn(t, 23600, hosts)
	galeraFaultedSale(t, c, galeraFault{
		what: "node 2 was cut off",
		strike: func(t *testing.T) {
			n.Cut(hosts[1], hosts[0])
			n.Cut(hosts[1], hosts[2])
		},
		undo: func(t *testing.T) {
			n.Heal()
			if !e2e.WaitUntil(2*time.Minute, func() bool {
				st, err := e2e.GaleraState(e2e.GaleraDSN(c.Nodes[1]))
				return err == nil && st == "Synced"
			}) {
				t.Fatal("node 2 did not rejoin within 2 minutes of the heal")
			}
		},
	})
}

// galeraFault is what happens to node 2 once 50 pieces are sold (strike)
// and what brings it back after the sale (undo).
type galeraFault struct {
	what         string // "node 2 was killed"
	strike, undo func(t *testing.T)
}

// galeraFaultedSale is the sale of TestGaleraNodeKilledMidSale on c, with
// fault, under each strategy.
func galeraFaultedSale(t *testing.T, c *e2e.GaleraCluster, fault galeraFault) {
	n1, n2, n3 := c.Nodes[0], c.Nodes[1], c.Nodes[2]
	for _, strategy := range []string{"seed", "batch", "atomic"} {
		t.Run(strategy, func(t *testing.T) {
			dsns := e2e.GaleraDatabase(t, c.Nodes)
			a := openMigrated(t, listDSN(t, dsns[0], n1, n1, n2, n3))
			b := openMigrated(t, listDSN(t, dsns[1], n2, n2, n3, n1))
			ctx := context.Background()
			const stock, buyers, concurrency = 300, 1500, 100
			if err := b.SetStock(ctx, 1, stock, repo.StockReset{ClearOrders: true}); err != nil {
				t.Fatal(err)
			}
			locker := newMemLocker()
			// As the shop does: a DSN naming the nodes sends a goods' sales to
			// one writer node, and the lock is handed on during the commit.
			if !a.OneWriter() || !b.OneWriter() {
				t.Fatal("a store on a DSN naming three Galera nodes has no writer node per goods")
			}
			cfg := service.Config{HandOffAfterCommit: !a.OneWriter(), AcquireTimeout: 30 * time.Second}
			shops := newShops(t, strategy, locker, cfg, slog.Default(), a, b)

			var (
				mu                       sync.Mutex
				ok                       = map[uint64]string{}
				unknown, failed, refused int
				sold                     atomic.Int64
				killedAt                 atomic.Pointer[time.Time]
				again                    = [2]chan time.Time{make(chan time.Time, 1), make(chan time.Time, 1)}
			)
			killed := make(chan struct{})
			go func() {
				for sold.Load() < 50 {
					time.Sleep(time.Millisecond)
				}
				now := time.Now()
				killedAt.Store(&now)
				fault.strike(t)
				close(killed)
			}()
			sctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
			defer cancel()
			next := make(chan int)
			var wg sync.WaitGroup
			var rec history.Recorder
			for w := range concurrency {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range next {
						shop := (w + i) % 2
						began := time.Now()
						rid := fmt.Sprintf("k-%d", i)
						o, err := shops[shop].Purchase(sctx, service.PurchaseRequest{GoodsNo: 1, RequestID: rid})
						recordPurchase(&rec, i, rid, began, o, err)
						mu.Lock()
						switch {
						case err == nil:
							ok[o.ID] = o.RequestID
							sold.Add(1)
							if at := killedAt.Load(); at != nil && began.After(*at) { // a purchase begun after the kill
								select {
								case again[shop] <- time.Now():
								default:
								}
							}
						case errors.Is(err, service.ErrCommitUnknown):
							unknown++
						case errors.Is(err, service.ErrSoldOut):
							refused++
						default:
							failed++
							if failed <= 5 {
								t.Logf("buyer %d: %v", i, err)
							}
						}
						mu.Unlock()
					}
				}()
			}
			for i := range buyers {
				next <- i
			}
			close(next)
			wg.Wait()
			e2e.Receive(t, killed, time.Minute, "the fault of node 2")
			for shop, name := range []string{"A", "B"} {
				select {
				case at := <-again[shop]:
					t.Logf("%s sold again %v after %s", name, at.Sub(*killedAt.Load()).Round(time.Millisecond), fault.what)
				default:
					t.Errorf("%s never sold after %s", name, fault.what)
				}
			}
			// B's own pool (payments, reads, the sweeper) is on node 2 first,
			// still out: a payment of one of the orders and a read of the
			// goods must go to another node.
			for id := range ok {
				call := time.Now()
				p, err := b.PayOrder(ctx, id, "", time.Now(), time.Time{})
				if recordPay(&rec, buyers, id, call, p, err) != history.OK {
					t.Errorf("B paid order %d after %s: %v", id, fault.what, err)
				}
				break
			}
			if _, err := b.Goods(ctx, 1); err != nil {
				t.Errorf("B read the goods after %s: %v", fault.what, err)
			}
			fault.undo(t)
			checkHistory(t, &rec, stock, dsns[2])

			for _, dsn := range []string{dsns[2], dsns[1]} { // node 3, and node 2 rejoined
				check, err := sql.Open("mysql", dsn+"&wsrep_sync_wait=15")
				if err != nil {
					t.Fatal(err)
				}
				defer check.Close()
				stored, left := goodsState(t, check)
				for id, rid := range ok {
					if !stored[id] {
						t.Errorf("request %s was answered with order %d, which is not on %s", rid, id, dsn)
					}
				}
				if len(stored)+left != stock {
					t.Errorf("%s: %d orders and %d left of a stock of %d", dsn, len(stored), left, stock)
				}
				if extra := len(stored) - len(ok); extra > unknown {
					t.Errorf("%s: %d orders without a 200, and only %d buyers heard outcome_unknown", dsn, extra, unknown)
				}
			}
			t.Logf("%s: %d buyers: %d 200, %d sold out, %d outcome_unknown, %d other 5xx", strategy, buyers, len(ok), refused, unknown, failed)
		})
	}
}
