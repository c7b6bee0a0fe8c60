package repo_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/seckill-zk/seckill-zk/internal/repo"
	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// TestCutOffHolderDoesNotStopTheSale: a lock holder cut off from MySQL
// right after its claim keeps the goods' row locked by its open
// transaction. With the store's idle transaction timeout the server ends
// that transaction, and the next holder sells within about the timeout
// instead of waiting out the cut (or InnoDB's 50 s lock wait, whichever
// comes first). Without the timeout the next holder's claim waits past the
// test's 20 s bound. On a Galera cluster the same holds for the next holder
// on the cut-off holder's node; one on another node does not wait for that
// node's row lock, and its commit's write-set ends the cut-off transaction
// (a brute-force abort).
func TestCutOffHolderDoesNotStopTheSale(t *testing.T) {
	t.Run("one server", func(t *testing.T) {
		dsn := e2e.Database(t)
		testCutOffHolder(t, dsn, dsn)
	})
	t.Run("galera, next holder on the same node", func(t *testing.T) {
		dsns := e2e.GaleraDatabase(t, e2e.Galera(t))
		testCutOffHolder(t, dsns[0], dsns[0])
	})
	t.Run("galera, next holder on another node", func(t *testing.T) {
		dsns := e2e.GaleraDatabase(t, e2e.Galera(t))
		testCutOffHolder(t, dsns[0], dsns[1])
	})
}

// throughProxy is a proxy of the test's own in front of dsn's server, and
// dsn through it.
func throughProxy(t *testing.T, dsn string) (*e2e.Proxy, string) {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy := e2e.NewProxy(t, cfg.Addr)
	via := cfg.Clone()
	via.Addr = proxy.Addr()
	return proxy, via.FormatDSN()
}

// testCutOffHolder cuts a holder writing to cutDSN off after its claim and
// has the next holder sell through nextDSN.
func testCutOffHolder(t *testing.T, cutDSN, dsn string) {
	proxy, viaProxy := throughProxy(t, cutDSN)
	const idle = 2 * time.Second
	next := openMigratedWith(t, dsn, repo.Options{IdleTransactionTimeout: idle})
	cut := openMigratedWith(t, viaProxy, repo.Options{IdleTransactionTimeout: idle})
	ctx := context.Background()
	if err := next.SetStock(ctx, 1, 10, repo.StockReset{}); err != nil {
		t.Fatal(err)
	}

	claimed := make(chan struct{})
	cutDone := make(chan error, 1)
	go func() {
		cutOff := func(g service.Goods) (int32, error) {
			proxy.Stall() // cut off after the claim, its row lock held
			close(claimed)
			return g.Stock - 1, nil
		}
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		cutDone <- sellFenced(cctx, cut, 1, 1, &service.Order{GoodsNo: 1, RequestID: "cut-off"}, cutOff, noGuard)
	}()
	e2e.Receive(t, claimed, 30*time.Second, "the cut-off holder's claim")

	start := time.Now()
	nctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if err := sellFenced(nctx, next, 1, 2, &service.Order{GoodsNo: 1, RequestID: "next"}, minusOne, noGuard); err != nil {
		t.Fatalf("the next holder's sale, %v after the cut: %v (a cut-off holder's transaction keeps the row locked)", time.Since(start).Round(time.Millisecond), err)
	}
	t.Logf("the next holder sold %v after the cut (idle transaction timeout %v)", time.Since(start).Round(time.Millisecond), idle)

	proxy.Resume()
	if err := e2e.Receive(t, cutDone, 30*time.Second, "the cut-off holder's answer"); err == nil {
		t.Error("the cut-off holder's sale committed after its transaction was ended")
	}
	assertState(t, next, 9, 1)
}
