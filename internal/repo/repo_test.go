package repo_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/seckill-zk/seckill-zk/internal/repo"
	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

func newStore(t testing.TB) *repo.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := repo.Open(ctx, e2e.Database(t), repo.Options{})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	for range 2 { // idempotent
		if _, err := s.Migrate(ctx); err != nil {
			t.Fatalf("migrate: %v", err)
		}
	}
	return s
}

func TestMigrateSeedsGoodsOneOnce(t *testing.T) {
	s := newStore(t)
	g, err := s.Goods(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	if g.Stock != 100 || g.IsActive != 1 {
		t.Fatalf("seed row = %+v, want stock 100, active", g)
	}
}

func TestGoodsNotFound(t *testing.T) {
	s := newStore(t)
	if _, err := s.Goods(context.Background(), 42); !errors.Is(err, service.ErrNotFound) {
		t.Fatalf("Goods(42) = %v, want ErrNotFound", err)
	}
}

func TestSell(t *testing.T) {
	ctx := context.Background()

	t.Run("writes stock and order together", func(t *testing.T) {
		s := newStore(t)
		g, _ := s.Goods(ctx, 1)
		o := &service.Order{GoodsNo: 1, RequestID: "r-1"}
		if err := s.Sell(ctx, g, g.Stock-1, o); err != nil {
			t.Fatal(err)
		}
		if o.ID == 0 {
			t.Error("order id not set")
		}
		assertState(t, s, 99, 1)
	})
	t.Run("an unchanged value still counts as written", func(t *testing.T) {
		s := newStore(t)
		g, _ := s.Goods(ctx, 1)
		if err := s.Sell(ctx, g, g.Stock, &service.Order{GoodsNo: 1, RequestID: "same"}); err != nil {
			t.Fatalf("sell with an unchanged stock: %v", err)
		}
		assertState(t, s, 100, 1)
	})
	t.Run("duplicate request id rolls back", func(t *testing.T) {
		s := newStore(t)
		g, _ := s.Goods(ctx, 1)
		if err := s.Sell(ctx, g, 99, &service.Order{GoodsNo: 1, RequestID: "dup"}); err != nil {
			t.Fatal(err)
		}
		err := s.Sell(ctx, g, 98, &service.Order{GoodsNo: 1, RequestID: "dup"})
		if !errors.Is(err, service.ErrDuplicateRequest) {
			t.Fatalf("second sell = %v, want ErrDuplicateRequest", err)
		}
		assertState(t, s, 99, 1)
	})
	t.Run("missing row fails", func(t *testing.T) {
		s := newStore(t)
		err := s.Sell(ctx, service.Goods{ID: 9999, GoodsNo: 1}, 1, &service.Order{GoodsNo: 1, RequestID: "x"})
		if !errors.Is(err, service.ErrPurchaseFailed) {
			t.Fatalf("sell = %v, want ErrPurchaseFailed", err)
		}
		assertState(t, s, 100, 0)
	})
}

func TestSetStock(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	g, _ := s.Goods(ctx, 1)
	if err := s.Sell(ctx, g, 99, &service.Order{GoodsNo: 1, RequestID: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetStock(ctx, 1, 50, repo.StockReset{ClearOrders: true}); err != nil {
		t.Fatal(err)
	}
	assertState(t, s, 50, 0)
	if err := s.SetStock(ctx, 7, 3, repo.StockReset{}); err != nil {
		t.Fatal(err)
	}
	if g, err := s.Goods(ctx, 7); err != nil || g.Stock != 3 || g.IsActive != 1 {
		t.Fatalf("new goods 7 = %+v, %v; want stock 3, active", g, err)
	}
}

func TestUnreachableMySQLIsUnavailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := repo.Open(ctx, "u:p@tcp(127.0.0.1:1)/x?timeout=1s", repo.Options{})
	if !errors.Is(err, service.ErrUnavailable) {
		t.Fatalf("open on a closed port = %v, want ErrUnavailable", err)
	}
}

func assertState(t *testing.T, s *repo.Store, stock int32, orders int64) {
	t.Helper()
	ctx := context.Background()
	g, err := s.Goods(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	n, err := s.CountOrders(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if g.Stock != stock || n != orders {
		t.Fatalf("stock %d with %d orders, want stock %d with %d orders", g.Stock, n, stock, orders)
	}
}

// Warm opens the connections a crowd would otherwise open at once and
// leaves them idle in their pools, each pool at most its own size (asking
// for more than a pool holds must not wait forever for one it cannot open);
// the server sees them open.
func TestWarmOpensThePoolsConnections(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn := e2e.Database(t)
	s := openMigratedWith(t, dsn, repo.Options{MaxOpenConns: 12, MaxIdleConns: 12, SaleConns: 5})
	if err := s.Warm(ctx, 1000); err != nil {
		t.Fatal(err)
	}
	reads, err := s.SQLDB()
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range map[string]*sql.DB{"reads": reads, "sales": s.SalesDB()} {
		st, want := p.Stats(), p.Stats().MaxOpenConnections
		if st.OpenConnections != want || st.Idle != want {
			t.Errorf("%s pool: %d open, %d idle after Warm, want %d and %d", name, st.OpenConnections, st.Idle, want, want)
		}
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	check, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer check.Close()
	var n int
	if err := check.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()", cfg.DBName).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 12+5 {
		t.Errorf("the server has %d connections of the store's, want 17 (12 reads, 5 sales)", n)
	}
}

// SetStocks sets many goods in chunks, a transaction each: the rows made
// or updated, their orders cleared, progress after each chunk; ended
// between chunks, the goods before are set and the rest untouched, and the
// error says so.
func TestSetStocksInChunks(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := s.SellAtomic(ctx, &service.Order{GoodsNo: 1, RequestID: "before"}); err != nil {
		t.Fatal(err)
	}
	const n = 1200
	many := make([]repo.GoodsStock, n)
	for i := range many {
		many[i] = repo.GoodsStock{GoodsNo: int32(i + 1), Stock: int32(i % 7)}
	}
	var progress []int
	if err := s.SetStocks(ctx, many, repo.StockReset{ClearOrders: true}, func(done int) { progress = append(progress, done) }); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(progress) != "[500 1000 1200]" {
		t.Errorf("progress %v, want after each chunk of 500", progress)
	}
	for _, g := range []int32{1, 7, 501, 1200} {
		got, err := s.Goods(ctx, g)
		if err != nil || got.Stock != (g-1)%7 {
			t.Errorf("goods %d: %+v %v, want stock %d", g, got, err, (g-1)%7)
		}
	}
	if orders, err := s.CountOrders(ctx, 1); err != nil || orders != 0 {
		t.Errorf("goods 1's orders after --clear-orders: %d %v", orders, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	big := make([]repo.GoodsStock, n)
	for i := range big {
		big[i] = repo.GoodsStock{GoodsNo: int32(i + 1), Stock: 99}
	}
	err := s.SetStocks(cctx, big, repo.StockReset{}, func(done int) { cancel() })
	if err == nil || !strings.Contains(err.Error(), "goods 501 to 1000") || !strings.Contains(err.Error(), "the 500 goods before them are set") {
		t.Fatalf("interrupted after the first chunk: %v", err)
	}
	if g, _ := s.Goods(ctx, 500); g.Stock != 99 {
		t.Errorf("goods 500 (first chunk): stock %d, want 99", g.Stock)
	}
	if g, _ := s.Goods(ctx, 501); g.Stock != 500%7 {
		t.Errorf("goods 501 (second chunk, not run): stock %d, want it unchanged (%d)", g.Stock, 500%7)
	}
}
