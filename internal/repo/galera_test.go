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

// memLocker is one lock per goods shared by the shops of a test, in this
// process: the ZooKeeper lock's order without ZooKeeper. Its tokens grow
// from holder to holder, as the lock nodes' zxids do.
type memLocker struct {
	mu    sync.Mutex
	held  map[int32]chan struct{}
	token atomic.Int64
}

func newMemLocker() *memLocker { return &memLocker{held: map[int32]chan struct{}{}} }

func (l *memLocker) Lock(ctx context.Context, goodsNo int32, _ time.Time) (service.Lease, error) {
	l.mu.Lock()
	sem, ok := l.held[goodsNo]
	if !ok {
		sem = make(chan struct{}, 1)
		l.held[goodsNo] = sem
	}
	l.mu.Unlock()
	select {
	case sem <- struct{}{}:
		return &memLease{sem: sem, token: l.token.Add(1), lost: make(chan struct{})}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type memLease struct {
	sem   chan struct{}
	token int64
	lost  chan struct{}
	once  sync.Once
}

func (m *memLease) Lost() <-chan struct{}                { return m.lost }
func (m *memLease) Token(context.Context) (int64, error) { return m.token, nil }
func (m *memLease) Unlock(context.Context) error         { m.once.Do(func() { <-m.sem }); return nil }

// retryCounter is a log handler that counts the purchases tried again
// after a conflict.
type retryCounter struct {
	slog.Handler
	n *atomic.Int64
}

func (h retryCounter) Enabled(context.Context, slog.Level) bool { return true }

func (h retryCounter) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "purchase wrote nothing, trying again" {
		h.n.Add(1)
		return nil
	}
	if r.Level < slog.LevelInfo {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

// saleTally is what the buyers of one sale heard.
type saleTally struct {
	mu       sync.Mutex
	ok       map[uint64]string // order id -> request id, of every 200
	refused  map[string]int    // sold out and the like, by error
	failures map[string]int    // what would be a 5xx, by error
}

func (s *saleTally) add(o *service.Order, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil:
		s.ok[o.ID] = o.RequestID
	case errors.Is(err, service.ErrSoldOut):
		s.refused["sold out"]++
	default:
		s.failures[err.Error()]++
	}
}

// newShops returns a shop selling with strategy on each store, all under
// locker, none marking a goods sold out (every buyer tries); a batch
// strategy is closed when the test ends.
func newShops(t *testing.T, strategy string, locker service.Locker, cfg service.Config, log *slog.Logger, stores ...*repo.Store) []*service.Shop {
	t.Helper()
	var shops []*service.Shop
	// Every buyer waits its turn: the database, not the admission, is what
	// these tests try.
	cfg.MaxWaiting, cfg.QueueTarget = -1, -1
	for _, s := range stores {
		st, ok := service.StrategyNamed(strategy)
		if !ok {
			t.Fatalf("no strategy %q", strategy)
		}
		shop, err := service.New(st, service.Deps{Store: s, Locker: locker, Env: service.Env{Marks: service.NewSoldOutMarks(-1), Config: cfg, Log: log}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(shop.Close)
		shops = append(shops, shop)
	}
	return shops
}

// goodsState reads goods 1's order ids and stock through db.
func goodsState(t *testing.T, db *sql.DB) (orders map[uint64]bool, stock int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := db.QueryContext(ctx, "SELECT id FROM order_info WHERE goods_no = 1")
	if err != nil {
		t.Fatal(err)
	}
	orders = map[uint64]bool{}
	for rows.Next() {
		var id uint64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		orders[id] = true
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, "SELECT stock FROM goods_stock WHERE goods_no = 1").Scan(&stock); err != nil {
		t.Fatal(err)
	}
	return orders, stock
}

// galeraSale sells stock pieces to buyers buyers, concurrency at a time,
// spread over the shops in turn, and checks the outcome through checkDSN:
// every 200 has its order row in the cluster, no piece is sold twice, the
// stock plus the orders is what it was.
func galeraSale(t *testing.T, shops []*service.Shop, check *sql.DB, checkDSN string, round, stock, buyers, concurrency int) (phantoms, oversold int, tally *saleTally) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	tally = &saleTally{ok: map[uint64]string{}, refused: map[string]int{}, failures: map[string]int{}}
	next := make(chan int)
	var wg sync.WaitGroup
	var rec history.Recorder
	for w := range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				shop := shops[(w+i)%len(shops)]
				rid := fmt.Sprintf("r%d-%d", round, i)
				call := time.Now()
				o, err := shop.Purchase(ctx, service.PurchaseRequest{GoodsNo: 1, RequestID: rid})
				recordPurchase(&rec, i, rid, call, o, err)
				tally.add(o, err)
			}
		}()
	}
	for i := range buyers {
		next <- i
	}
	close(next)
	wg.Wait()
	checkHistory(t, &rec, int32(stock), checkDSN)

	stored, left := goodsState(t, check)
	for id, rid := range tally.ok {
		if !stored[id] {
			phantoms++
			t.Errorf("round %d: request %s was answered with order %d, which is in no node of the cluster", round, rid, id)
		}
	}
	if sold := len(stored); sold+left != stock || sold > stock {
		oversold = sold + left - stock
		t.Errorf("round %d: %d orders and %d left of a stock of %d", round, sold, left, stock)
	}
	if len(stored) > len(tally.ok) {
		t.Errorf("round %d: %d orders stored, %d buyers answered 200", round, len(stored), len(tally.ok))
	}
	return phantoms, oversold, tally
}

// TestGaleraSalesAcrossNodesAreExact sells on a 3-node Galera cluster from
// two shops writing through different nodes (one lock between them, handed
// on as fast as the lock allows): every strategy sells exactly the stock,
// every 200 has its order in the cluster, and no buyer hears a 5xx for a
// certification conflict. Without a lock (atomic) and with each shop
// writing through its own node nothing orders the sales, and a buyer may
// hear a conflict once its retries are spent (nothing written); with one
// writer node, as the shop runs on a cluster, none does.
//
// "seed, hand-off during the commit" keeps the single server's overlap of
// the hand-off with the commit, which does not serialise across nodes: the
// next holder's claim reads the row before the previous commit reached its
// node, and the brute-force abort that follows ends its transaction without
// telling it. On the code before the fix that sale answered 200 for an
// order that is in no node (2-8 per run of 4 sales); the sale must see that
// its transaction is gone, write nothing and be tried again.
func TestGaleraSalesAcrossNodesAreExact(t *testing.T) {
	nodes := e2e.Galera(t)
	const stock, buyers, concurrency, rounds = 100, 600, 100, 4
	for _, tc := range []struct {
		name, strategy  string
		handOffInCommit bool
		// writer: the stores' DSNs name both nodes, so a goods' sales go to
		// one writer node (the shop's way on a cluster)
		writer bool
		// conflictsLeft: buyers may hear ErrConflict once the retries are
		// spent (nothing written), when nothing orders the sales
		conflictsLeft bool
	}{
		{"seed", "seed", false, false, false},
		{"batch", "batch", false, false, false},
		{"atomic, one writer node", "atomic", false, true, false},
		{"atomic, each shop on its own node", "atomic", false, false, true},
		{"seed, hand-off during the commit", "seed", true, false, false},
	} {
		name := tc.strategy
		t.Run(tc.name, func(t *testing.T) {
			dsns := e2e.GaleraDatabase(t, nodes)
			dsnA, dsnB := dsns[0], dsns[1]
			if tc.writer {
				dsnA = listDSN(t, dsns[0], nodes[0], nodes[0], nodes[1])
				dsnB = listDSN(t, dsns[1], nodes[1], nodes[1], nodes[0])
			}
			a := openMigrated(t, dsnA)
			b := openMigrated(t, dsnB)
			check, err := sql.Open("mysql", dsns[2]+"&wsrep_sync_wait=15")
			if err != nil {
				t.Fatal(err)
			}
			defer check.Close()
			locker := newMemLocker()
			var retries atomic.Int64
			log := slog.New(retryCounter{Handler: slog.Default().Handler(), n: &retries})
			for _, s := range []*repo.Store{a, b} {
				if !s.Cluster() {
					t.Fatal("the store does not see a Galera cluster (wsrep_on)")
				}
			}
			shops := newShops(t, name, locker, service.Config{HandOffAfterCommit: !tc.handOffInCommit}, log, a, b)
			var phantoms, oversold, failures int
			for round := range rounds {
				if err := a.SetStock(context.Background(), 1, stock, repo.StockReset{ClearOrders: true}); err != nil {
					t.Fatal(err)
				}
				p, o, tally := galeraSale(t, shops, check, dsns[2], round, stock, buyers, concurrency)
				phantoms, oversold = phantoms+p, oversold+o
				for msg, n := range tally.failures {
					failures += n
					if !tc.conflictsLeft || !strings.Contains(msg, service.ErrConflict.Error()) {
						t.Errorf("round %d: %d buyers heard %s", round, n, msg)
					}
				}
			}
			t.Logf("%s, %d rounds of %d buyers: %d phantom sales, %d oversold, %d failures, %d purchases tried again after a conflict or a broken connection",
				tc.name, rounds, buyers, phantoms, oversold, failures, retries.Load())
		})
	}
}

// TestGaleraClaimSeesAResetThroughAnotherNode sets the stock through node 1
// and, at once, claims the row through node 2, a thousand times: every
// claim must read the stock just set. The claim is the sale's causal read
// (Store.beginSQL); before the wait moved onto the START TRANSACTION it was
// made inside the transaction, where MariaDB skips it, and about one claim
// in a hundred read the stock before (a buyer right after a restock heard
// 库存不够 through the other node; TestGaleraSalesAcrossNodesAreExact's
// hand-off round failed its history so, 1 run in 20 on a busy machine).
func TestGaleraClaimSeesAResetThroughAnotherNode(t *testing.T) {
	nodes := e2e.Galera(t)
	dsns := e2e.GaleraDatabase(t, nodes)
	a := openMigrated(t, dsns[0])
	b := openMigrated(t, dsns[1])
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	errRead := errors.New("read only")
	const tries = 1000
	stale := 0
	for i := range int32(tries) {
		if err := a.SetStock(ctx, 1, i+1, repo.StockReset{}); err != nil {
			t.Fatal(err)
		}
		sale, err := b.BeginSale(ctx, 1, 1)
		if err != nil {
			t.Fatalf("claim %d: %v", i, err)
		}
		read := sale.Goods()[1].Stock
		if err := sale.Abort(ctx, errRead); !errors.Is(err, errRead) {
			t.Fatalf("claim %d: %v", i, err)
		}
		if read != i+1 {
			if stale++; stale <= 5 {
				t.Errorf("claim %d through node 2 read stock %d, set to %d through node 1 before it", i, read, i+1)
			}
		}
	}
	if stale > 0 {
		t.Errorf("%d of %d claims read a stock older than the one set before them", stale, tries)
	}
}
