package repo

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// MySQL's lock wait timeout (1205) and deadlock (1213), produced by a real
// server, are "unavailable" (503, try again): the statement or its
// transaction was given up, nothing was written. Fails when either number is
// missing from translate (the buyer would get a 500).
func TestLockWaitTimeoutAndDeadlockAreUnavailable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := sql.Open("mysql", e2e.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{"CREATE TABLE t (id INT PRIMARY KEY) ENGINE=InnoDB", "INSERT INTO t VALUES (1), (2)"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	begin := func(t *testing.T) *sql.Tx {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tx.Rollback() }) // ends what a failed test left open
		return tx
	}
	lock := func(tx *sql.Tx, id int) error {
		_, err := tx.ExecContext(ctx, "SELECT id FROM t WHERE id = ? FOR UPDATE", id)
		return err
	}
	mustLock := func(t *testing.T, tx *sql.Tx, id int) {
		if err := lock(tx, id); err != nil {
			t.Fatal(err)
		}
	}
	unavailable := func(t *testing.T, what string, err error, number uint16) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		if got := translate(err); !errors.Is(got, service.ErrUnavailable) {
			t.Fatalf("%s: translate(%v) = %v, want ErrUnavailable", what, err, got)
		}
		if me := (*mysql.MySQLError)(nil); !errors.As(err, &me) || me.Number != number {
			t.Fatalf("%s: %v is not MySQL's error %d: the test did not make the fault it is about", what, err, number)
		}
	}

	t.Run("lock wait timeout", func(t *testing.T) {
		holder, waiter := begin(t), begin(t)
		mustLock(t, holder, 1)
		if _, err := waiter.ExecContext(ctx, "SET SESSION innodb_lock_wait_timeout = 1"); err != nil {
			t.Fatal(err)
		}
		unavailable(t, "a row lock waited for past the timeout", lock(waiter, 1), erLockWaitTimeout)
		_ = holder.Rollback()
		_ = waiter.Rollback()
	})
	t.Run("deadlock", func(t *testing.T) {
		a, b := begin(t), begin(t)
		mustLock(t, a, 1)
		mustLock(t, b, 2)
		aDone := make(chan error, 1)
		go func() { aDone <- lock(a, 2) }() // waits for b
		time.Sleep(200 * time.Millisecond)  // a is waiting (the deadlock is found either way)
		bErr := lock(b, 1)
		var aErr error
		select {
		case aErr = <-aDone:
		case <-time.After(30 * time.Second):
			t.Fatal("no deadlock found within 30s")
		}
		victim := bErr // InnoDB rolls back one of the two
		if victim == nil {
			victim = aErr
		}
		unavailable(t, "the deadlock's victim", victim, erLockDeadlock)
		_ = a.Rollback()
		_ = b.Rollback()
	})
}

// The caller's own end is passed on as such, never taken for an unreachable
// server; a missing row is ErrNotFound.
func TestTranslateKeepsTheCallersOwnEnd(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"canceled", fmt.Errorf("query: %w", context.Canceled), context.Canceled},
		{"deadline", fmt.Errorf("query: %w", context.DeadlineExceeded), context.DeadlineExceeded},
		{"no row", gorm.ErrRecordNotFound, service.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := translate(tt.err)
			if !errors.Is(got, tt.want) || errors.Is(got, service.ErrUnavailable) && tt.want != service.ErrUnavailable {
				t.Fatalf("translate(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}
