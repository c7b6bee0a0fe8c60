package e2e

import (
	"database/sql"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// TestTheShopSaysWhenMySQLCanLoseCommits: on a MariaDB that acknowledges
// commits before flushing them (innodb_flush_log_at_trx_commit=2, as many
// Galera guides advise, or 0) the shop warns at start, naming the server and
// the setting, and seckill_mysql_durable_commits is 0; on one that flushes
// each commit (the project's stack) it is 1 and nothing is said.
func TestTheShopSaysWhenMySQLCanLoseCommits(t *testing.T) {
	for _, flush := range []string{"2", "0"} {
		t.Run("innodb_flush_log_at_trx_commit="+flush, func(t *testing.T) {
			db := e2e.StartMariaDBWith(t, false, []string{"--innodb-flush-log-at-trx-commit=" + flush})
			s := e2e.NewStackOn(t, db.DSN, e2e.ZooKeeper(t))
			s.Shop(t, "migrate")
			in := s.Serve(t)
			if n := e2e.MetricValue(t, in.URL, "seckill_mysql_durable_commits"); n != 0 {
				t.Errorf("seckill_mysql_durable_commits %v, want 0", n)
			}
			if logs := in.Logs(); !strings.Contains(logs, "mysql acknowledges commits a crash can lose") ||
				!strings.Contains(logs, "innodb_flush_log_at_trx_commit="+flush) {
				t.Errorf("no warning naming innodb_flush_log_at_trx_commit=%s in the log:\n%s", flush, logs)
			}
		})
	}
	t.Run("the stack's", func(t *testing.T) {
		s := e2e.NewStack(t)
		s.Shop(t, "migrate")
		in := s.Serve(t)
		if n := e2e.MetricValue(t, in.URL, "seckill_mysql_durable_commits"); n != 1 {
			t.Errorf("seckill_mysql_durable_commits %v on the stack's MariaDB, want 1", n)
		}
		if strings.Contains(in.Logs(), "commits a crash can lose") {
			t.Errorf("a warning on a MariaDB that flushes each commit")
		}
	})
}

// TestAcknowledgedCommitsSurviveSIGKILL is the fact the history checker's
// Crash rests on (tests/framework/history): a MariaDB SIGKILLed under
// sixteen writers of one counter keeps every commit it acknowledged, while
// a reader may have seen a few that it did not keep. InnoDB makes a commit
// visible before its redo log is written; a commit that had not returned
// to its client is the only kind a process crash can take back. The test
// asserts the first and reports the second, which shows in about one round
// in five on this machine.
func TestAcknowledgedCommitsSurviveSIGKILL(t *testing.T) {
	for round := range 3 {
		db := e2e.StartMariaDB(t)
		c, err := sql.Open("mysql", db.DSN)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec("CREATE TABLE counter (id INT PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec("INSERT INTO counter VALUES (1, 0)"); err != nil {
			t.Fatal(err)
		}
		var acked, seen atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		// until runs f until stop closes.
		until := func(f func()) {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
						f()
					}
				}
			})
		}
		for range 16 {
			until(func() {
				if _, err := c.Exec("UPDATE counter SET n = n + 1 WHERE id = 1"); err == nil {
					acked.Add(1)
				}
			})
		}
		until(func() {
			var n int64
			if c.QueryRow("SELECT n FROM counter WHERE id = 1").Scan(&n) == nil && n > seen.Load() {
				seen.Store(n)
			}
		})
		time.Sleep(2 * time.Second)
		db.Kill(t)
		close(stop)
		wg.Wait()
		c.Close()
		db.Start(t)
		c, err = sql.Open("mysql", db.DSN)
		if err != nil {
			t.Fatal(err)
		}
		var kept int64
		if err := c.QueryRow("SELECT n FROM counter WHERE id = 1").Scan(&kept); err != nil {
			t.Fatal(err)
		}
		c.Close()
		db.Kill(t)
		t.Logf("round %d: %d commits acknowledged, %d kept, the highest read %d: %d seen and then lost",
			round, acked.Load(), kept, seen.Load(), max(0, seen.Load()-kept))
		if kept < acked.Load() {
			t.Errorf("round %d: %d commits acknowledged but %d kept after SIGKILL", round, acked.Load(), kept)
		}
	}
}
