package repo_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/repo"
	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// minusOne is the purchase's decision: one piece less.
func minusOne(g service.Goods) (int32, error) {
	if g.Stock < 1 {
		return 0, service.ErrSoldOut
	}
	return g.Stock - 1, nil
}

func noGuard() error { return nil }

func TestTheSeedsSale(t *testing.T) {
	ctx := context.Background()

	t.Run("sells under increasing tokens", func(t *testing.T) {
		s := newStore(t)
		for i, tok := range []int64{5, 5, 9} { // the same token again is the same holder
			o := &service.Order{GoodsNo: 1, RequestID: "r-" + string(rune('a'+i))}
			if err := sellFenced(ctx, s, 1, tok, o, minusOne, noGuard); err != nil {
				t.Fatalf("token %d: %v", tok, err)
			}
			if o.ID == 0 {
				t.Fatal("no order id")
			}
		}
		assertState(t, s, 97, 3)
	})

	t.Run("a token below the row's fence writes nothing", func(t *testing.T) {
		s := newStore(t)
		if err := sellFenced(ctx, s, 1, 1000, &service.Order{GoodsNo: 1, RequestID: "new"}, minusOne, noGuard); err != nil {
			t.Fatal(err)
		}
		decided := false
		err := sellFenced(ctx, s, 1, 999, &service.Order{GoodsNo: 1, RequestID: "old"},
			func(g service.Goods) (int32, error) { decided = true; return minusOne(g) }, noGuard)
		if !errors.Is(err, service.ErrFenced) || !errors.Is(err, service.ErrLockLost) {
			t.Fatalf("stale token: %v, want ErrFenced", err)
		}
		if decided {
			t.Error("the stale holder was shown the row: the fence must be checked before the read")
		}
		assertState(t, s, 99, 1)
	})

	t.Run("unknown goods, sold out, failed guard: nothing written, claim undone", func(t *testing.T) {
		s := newStore(t)
		if err := sellFenced(ctx, s, 42, 1, &service.Order{GoodsNo: 42, RequestID: "x"}, minusOne, noGuard); !errors.Is(err, service.ErrNotFound) {
			t.Fatalf("unknown goods: %v, want ErrNotFound", err)
		}
		if err := s.SetStock(ctx, 1, 0, repo.StockReset{}); err != nil {
			t.Fatal(err)
		}
		if err := sellFenced(ctx, s, 1, 50, &service.Order{GoodsNo: 1, RequestID: "y"}, minusOne, noGuard); !errors.Is(err, service.ErrSoldOut) {
			t.Fatalf("sold out: %v", err)
		}
		if err := s.SetStock(ctx, 1, 3, repo.StockReset{}); err != nil {
			t.Fatal(err)
		}
		guardErr := errors.New("guard says no")
		if err := sellFenced(ctx, s, 1, 60, &service.Order{GoodsNo: 1, RequestID: "z"}, minusOne, func() error { return guardErr }); !errors.Is(err, guardErr) {
			t.Fatalf("guard: %v", err)
		}
		assertState(t, s, 3, 0)
		// Neither rolled-back claim moved the fence: an older token still sells.
		if err := sellFenced(ctx, s, 1, 10, &service.Order{GoodsNo: 1, RequestID: "w"}, minusOne, noGuard); err != nil {
			t.Fatalf("after rolled-back claims: %v", err)
		}
	})

	t.Run("the claim waits for an earlier holder's transaction and reads its write", func(t *testing.T) {
		dsn := e2e.Database(t)
		s := openMigrated(t, dsn)
		inGuard, commit := make(chan struct{}), make(chan struct{})
		release := sync.OnceFunc(func() { close(commit) })
		t.Cleanup(release) // a failed test must not leave A's transaction open
		var wg sync.WaitGroup
		var errA error
		wg.Go(func() {
			errA = sellFenced(ctx, s, 1, 10, &service.Order{GoodsNo: 1, RequestID: "a"}, minusOne, func() error {
				close(inGuard)
				<-commit // A's commit is late: its lock has passed on meanwhile
				return nil
			})
		})
		<-inGuard
		var errB error
		var readByB int32
		wg.Go(func() {
			errB = sellFenced(ctx, s, 1, 20, &service.Order{GoodsNo: 1, RequestID: "b"},
				func(g service.Goods) (int32, error) { readByB = g.Stock; return minusOne(g) }, noGuard)
		})
		e2e.WaitForBlockedUpdate(t, dsn)
		release()
		wg.Wait()
		if errA != nil || errB != nil {
			t.Fatalf("A: %v, B: %v", errA, errB)
		}
		if readByB != 99 {
			t.Errorf("B read stock %d, want 99: the read must see the earlier holder's commit", readByB)
		}
		assertState(t, s, 98, 2)
	})
}

func openMigrated(t *testing.T, dsn string) *repo.Store {
	t.Helper()
	return openMigratedWith(t, dsn, repo.Options{})
}

func openMigratedWith(t *testing.T, dsn string, opts repo.Options) *repo.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := repo.Open(ctx, dsn, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}
