package repo_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// The purchase under the lock runs its statements in batches on a
// connection of the sale pool (a tx). Whatever ends it early must roll the
// claim back and give the row free: a connection returned to the pool with
// its transaction open would keep the row locked for everyone else (and
// commit it later, inside some other purchase). Each case ends with a sale
// through the other pool, bounded: it waits for the row lock.
func TestSaleTransactionLeavesNothingOpen(t *testing.T) {
	ctx := context.Background()
	rowFree := func(t *testing.T, sell func(context.Context) error) {
		t.Helper()
		bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := sell(bctx); err != nil {
			t.Fatalf("a sale after the failed one: %v (the failed one left the row locked?)", err)
		}
	}

	t.Run("a request id used before", func(t *testing.T) {
		s := openMigrated(t, e2e.Database(t))
		if err := sellFenced(ctx, s, 1, 1, &service.Order{GoodsNo: 1, RequestID: "a"}, minusOne, noGuard); err != nil {
			t.Fatal(err)
		}
		err := sellFenced(ctx, s, 1, 1, &service.Order{GoodsNo: 1, RequestID: "a"}, minusOne, noGuard)
		if !errors.Is(err, service.ErrDuplicateRequest) {
			t.Fatalf("second sale under request id a: %v, want ErrDuplicateRequest", err)
		}
		assertState(t, s, 99, 1)
		rowFree(t, func(ctx context.Context) error { return s.SellAtomic(ctx, &service.Order{GoodsNo: 1, RequestID: "b"}) })
		assertState(t, s, 98, 2)
	})

	t.Run("a buyer who holds an order of the goods", func(t *testing.T) {
		s := openMigrated(t, e2e.Database(t))
		first := &service.Order{GoodsNo: 1, RequestID: "a", UserID: "u1", OnePerBuyer: true}
		if err := sellFenced(ctx, s, 1, 1, first, minusOne, noGuard); err != nil {
			t.Fatal(err)
		}
		err := sellFenced(ctx, s, 1, 1, &service.Order{GoodsNo: 1, RequestID: "b", UserID: "u1", OnePerBuyer: true}, minusOne, noGuard)
		if !errors.Is(err, service.ErrAlreadyBought) {
			t.Fatalf("second order of buyer u1: %v, want ErrAlreadyBought", err)
		}
		got, found, err := s.OrderByRequestID(ctx, first.Key())
		if err != nil || !found || got.ID != first.ID || got.UserID != "u1" || !got.OnePerBuyer || got.Status != service.OrderUnpaid {
			t.Fatalf("the first order as stored: %+v found %v err %v; as sold: %+v", got, found, err, first)
		}
		rowFree(t, func(ctx context.Context) error { return s.SellAtomic(ctx, &service.Order{GoodsNo: 1, RequestID: "c"}) })
		assertState(t, s, 98, 2)
	})

	t.Run("the request ends while the row is claimed", func(t *testing.T) {
		s := openMigrated(t, e2e.Database(t))
		rctx, cancel := context.WithCancel(ctx)
		err := sellFenced(rctx, s, 1, 1, &service.Order{GoodsNo: 1, RequestID: "a"},
			func(g service.Goods) (int32, error) { cancel(); return minusOne(g) }, noGuard)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("sale whose request ended: %v, want context.Canceled", err)
		}
		assertState(t, s, 100, 0)
		rowFree(t, func(ctx context.Context) error {
			return sellFenced(ctx, s, 1, 1, &service.Order{GoodsNo: 1, RequestID: "b"}, minusOne, noGuard)
		})
		rowFree(t, func(ctx context.Context) error { return s.SellAtomic(ctx, &service.Order{GoodsNo: 1, RequestID: "c"}) })
		assertState(t, s, 98, 2)
	})

	t.Run("the connection is killed while the row is claimed", func(t *testing.T) {
		dsn := e2e.Database(t)
		s := openMigrated(t, dsn)
		admin, err := sql.Open("mysql", dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer admin.Close()
		kill := func(g service.Goods) (int32, error) {
			// The one transaction open in this test's database is the
			// sale's (other packages' tests run their own meanwhile).
			var id int64
			err := admin.QueryRowContext(ctx, `SELECT t.trx_mysql_thread_id FROM information_schema.innodb_trx t
				JOIN information_schema.processlist p ON p.id = t.trx_mysql_thread_id
				WHERE p.db = DATABASE() AND p.id <> CONNECTION_ID()`).Scan(&id)
			if err != nil {
				return 0, err
			}
			if _, err := admin.ExecContext(ctx, "KILL CONNECTION ?", id); err != nil {
				return 0, err
			}
			return minusOne(g)
		}
		err = sellFenced(ctx, s, 1, 1, &service.Order{GoodsNo: 1, RequestID: "a"}, kill, noGuard)
		if !errors.Is(err, service.ErrUnavailable) || errors.Is(err, service.ErrCommitUnknown) {
			t.Fatalf("sale on a killed connection: %v, want ErrUnavailable (not a commit of unknown outcome)", err)
		}
		assertState(t, s, 100, 0)
		for _, id := range []string{"b", "c", "d"} { // the pool holds no dead connection
			rowFree(t, func(ctx context.Context) error {
				return sellFenced(ctx, s, 1, 1, &service.Order{GoodsNo: 1, RequestID: id}, minusOne, noGuard)
			})
		}
		assertState(t, s, 97, 3)
	})
}
