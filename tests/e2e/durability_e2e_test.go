package e2e

import (
	"strings"
	"testing"

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
