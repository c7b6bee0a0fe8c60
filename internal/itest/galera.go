package itest

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

const howToStartGalera = "start the test cluster with `make galera-up` " +
	"(scripts/stack.sh galera .stack/galera: three MariaDB Galera nodes on 127.0.0.1:23301-23303, from Debian's galera-4 and mariadb-backup)"

// Galera returns the SQL addresses of the 3-node MariaDB Galera cluster the
// cluster tests write through (SECKILL_TEST_GALERA, comma separated;
// default the nodes `make galera-up` starts), after checking that every node
// answers as the shop's user and is Synced. A cluster that is not there
// fails the test with how to start it.
func Galera(t testing.TB) []string {
	t.Helper()
	nodes := strings.Split(env("SECKILL_TEST_GALERA", "127.0.0.1:23301,127.0.0.1:23302,127.0.0.1:23303"), ",")
	for _, addr := range nodes {
		if state, err := GaleraState(GaleraDSN(addr)); err != nil || state != "Synced" {
			t.Fatalf("Galera node %s: state %q, %v: %s", addr, state, err, howToStartGalera)
		}
	}
	return nodes
}

// GaleraDSN is the admin DSN of the test user on one node.
func GaleraDSN(addr string) string {
	cfg, err := mysql.ParseDSN(MySQLDSN())
	if err != nil {
		cfg = mysql.NewConfig()
	}
	cfg.Addr = addr
	cfg.Timeout = 3 * time.Second
	return cfg.FormatDSN()
}

// GaleraState is a node's wsrep_local_state_comment (Synced, Donor/Desynced,
// Joining, ...).
func GaleraState(dsn string) (string, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return "", err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var name, state string
	err = db.QueryRowContext(ctx, "SHOW STATUS LIKE 'wsrep_local_state_comment'").Scan(&name, &state)
	return state, err
}

// GaleraDatabase creates a database of the test's own in the cluster,
// through the first node (Galera replicates it to the others), dropped at
// cleanup, and returns a DSN for it on each node, in the order of nodes.
func GaleraDatabase(t testing.TB, nodes []string) []string {
	t.Helper()
	dsn := databaseAt(t, GaleraDSN(nodes[0]), howToStartGalera)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(nodes))
	for i, addr := range nodes {
		c := cfg.Clone()
		c.Addr = addr
		out[i] = c.FormatDSN()
	}
	return out
}
