package e2e

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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
	Integration(t)
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
		if i > 0 {
			seeDatabase(t, addr, cfg.DBName)
		}
	}
	return out
}

// seeDatabase waits until the node at addr has the database name. The
// first node answers CREATE DATABASE once the cluster has ordered it; the
// others apply it a moment later, and on a busy machine a test that
// connects to one of them at once can find no such database (Error 1049).
// A read with wsrep_sync_wait=1 first applies everything ordered before it.
func seeDatabase(t testing.TB, addr, name string) {
	t.Helper()
	cfg, err := mysql.ParseDSN(GaleraDSN(addr))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	cfg.Params["wsrep_sync_wait"] = "1"
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		var n int
		err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).Scan(&n)
		cancel()
		if err == nil && n == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Galera node %s does not see database %s 30 s after the first node created it (count %d, %v): %s", addr, name, n, err, howToStartGalera)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// GaleraCluster is a 3-node Galera cluster of the test's own, started by
// scripts/stack.sh in a directory of the test's; its nodes are killed by
// PID and restarted by the test, and stopped at cleanup.
type GaleraCluster struct {
	nodes
	base  string
	Nodes []string // SQL addresses of nodes 1..3
}

// StartGalera starts a cluster whose node N serves SQL on 127.0.0.1:base+N
// (and uses base+10+N, +20+N, +30+N for replication and state transfer).
// It takes about half a minute.
func StartGalera(t testing.TB, base int) *GaleraCluster {
	t.Helper()
	return StartGaleraIn(t, base, nil)
}

// StartGaleraIn starts the cluster with node n in hosts[n-1] of a Network,
// on its address, or on loopback if hosts is nil.
func StartGaleraIn(t testing.TB, base int, hosts []*Host) *GaleraCluster {
	t.Helper()
	Integration(t)
	c := &GaleraCluster{base: strconv.Itoa(base)}
	c.nodes = nodes{dir: t.TempDir(), prefix: "node", what: "Galera node", env: hostsEnv(hosts),
		restart: func(n int) []string { return []string{"galera-node", c.dir, strconv.Itoa(n), c.base} }}
	t.Cleanup(func() {
		if out, err := c.script(t, "galera-down", c.dir).CombinedOutput(); err != nil {
			t.Errorf("stop the test's Galera cluster: %v\n%s", err, out)
		}
	})
	out, err := c.script(t, "galera", c.dir, c.base).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("start a Galera cluster (scripts/stack.sh galera %s %s): %v\n%s", c.dir, c.base, err, stderr)
	}
	c.Nodes = strings.Split(strings.TrimSpace(string(out)), ",")
	return c
}

// CrashAll SIGKILLs the three nodes by their PIDs as close together as
// it can (all signals first, then the waits): a whole-cluster crash. It
// returns how far apart the first and the last signal were.
func (c *GaleraCluster) CrashAll(t testing.TB) time.Duration {
	t.Helper()
	pids := make([]int, 3)
	for n := range 3 {
		var err error
		if pids[n], err = c.pid(n + 1); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	for n, pid := range pids {
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill Galera node %d (pid %d): %v", n+1, pid, err)
		}
	}
	spread := time.Since(start)
	for n, pid := range pids {
		KillPID(t, pid, fmt.Sprintf("Galera node %d", n+1)) // waits until it is gone (a second SIGKILL is harmless)
		_ = os.Remove(filepath.Join(c.dir, fmt.Sprintf("node%d", n+1), "pid"))
	}
	return spread
}

// Recover restarts a cluster whose nodes all crashed as an operator would
// (scripts/stack.sh galera-recover: the most advanced node bootstraps, the
// others rejoin) and returns the script's report (each node's recovered
// seqno, which bootstrapped).
func (c *GaleraCluster) Recover(t testing.TB) string {
	t.Helper()
	out, err := c.script(t, "galera-recover", c.dir, c.base).CombinedOutput()
	if err != nil {
		t.Fatalf("recover the Galera cluster: %v\n%s", err, out)
	}
	return string(out)
}

// SetGlobal runs SET GLOBAL setting on every node, as root over its socket.
func (c *GaleraCluster) SetGlobal(t testing.TB, setting string) {
	t.Helper()
	client, err := exec.LookPath("mariadb")
	if err != nil {
		client = "mysql"
	}
	for n := 1; n <= 3; n++ {
		sock := filepath.Join(c.dir, fmt.Sprintf("node%d", n), "mysqld.sock")
		if out, err := exec.Command(client, "--no-defaults", "-uroot", "--socket="+sock, "-e", "SET GLOBAL "+setting).CombinedOutput(); err != nil {
			t.Fatalf("SET GLOBAL %s on Galera node %d: %v\n%s", setting, n, err, out)
		}
	}
}

// script is scripts/stack.sh with args, in the cluster's environment.
func (c *GaleraCluster) script(t testing.TB, args ...string) *exec.Cmd {
	cmd := exec.Command(InRoot(t, "scripts/stack.sh"), args...)
	cmd.Env = c.env
	return cmd
}

// ViewChanges are the lines of node n's error log (1..3) that tell of its
// membership: the nodes it suspects, each new view and whether it is
// Primary; for a test that wants to say when a partition took effect.
func (c *GaleraCluster) ViewChanges(n int) []string {
	b, err := os.ReadFile(filepath.Join(c.dir, fmt.Sprintf("node%d", n), "error.log"))
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		for _, m := range []string{"suspecting node", "New cluster view", "view(view_id(", "declaring inactive", "Primary"} {
			if strings.Contains(line, m) {
				out = append(out, line)
				break
			}
		}
	}
	return out
}
