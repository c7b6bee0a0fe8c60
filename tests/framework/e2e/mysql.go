package e2e

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// The local MariaDB: a database of the test's own, dropped at cleanup.

// MySQLDSN is the admin DSN the tests use to create their databases
// (SECKILL_TEST_MYSQL_DSN; default the stack's seckill user).
func MySQLDSN() string {
	return env("SECKILL_TEST_MYSQL_DSN", "seckill:seckill@tcp(127.0.0.1:3306)/")
}

// Database creates a database of its own for the test, dropped at cleanup,
// and returns a DSN for it.
func Database(t testing.TB) string {
	t.Helper()
	Integration(t)
	return databaseAt(t, MySQLDSN(), howToStart)
}

// databaseAt creates a test database on the server of the admin DSN.
func databaseAt(t testing.TB, adminDSN, howToStart string) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(adminDSN)
	if err != nil {
		t.Fatalf("SECKILL_TEST_MYSQL_DSN: %v", err)
	}
	name := "seckill_t_" + randHex(6)
	admin, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatalf("open MySQL: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := admin.PingContext(ctx); err != nil {
		admin.Close()
		t.Fatalf("MySQL at %s is not answering (%v): %s", cfg.Addr, err, howToStart)
	}
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE `"+name+"` CHARACTER SET utf8mb4"); err != nil {
		admin.Close()
		t.Fatalf("create test database: %v (the stack script grants the seckill user seckill_* databases)", err)
	}
	t.Cleanup(func() {
		defer admin.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+name+"`"); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	cfg.DBName = name
	cfg.ParseTime = true
	return cfg.FormatDSN()
}

// WaitForBlockedUpdate returns once an UPDATE or a locking read (SELECT
// ... FOR UPDATE) on the database of dsn has been running for at least
// 200ms, which in these tests means it waits for a row lock; it fails the
// test if none does within 30s. (MariaDB lists a
// transaction waiting for its first row lock nowhere else, so the process
// list it is; reading other connections' rows there needs the PROCESS
// privilege, which the stack script grants.)
func WaitForBlockedUpdate(t testing.TB, dsn string) {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	seen := map[int64]time.Time{} // connection id -> first seen running an UPDATE
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		rows, err := db.Query(`SELECT id FROM information_schema.processlist
			WHERE db = DATABASE() AND id <> CONNECTION_ID() AND command IN ('Query', 'Execute')
			AND (info LIKE 'UPDATE%' OR info LIKE 'SELECT%FOR UPDATE%')`)
		if err != nil {
			t.Fatalf("read the process list: %v (the test user needs the PROCESS privilege: %s)", err, howToStart)
		}
		now := map[int64]time.Time{}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			if first, ok := seen[id]; ok {
				if time.Since(first) >= 200*time.Millisecond {
					rows.Close()
					return
				}
				now[id] = first
			} else {
				now[id] = time.Now()
			}
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		seen = now
	}
	t.Fatal("no UPDATE or locking read waited for a row lock within 30s")
}
