package e2e

import (
	"database/sql"
	"net"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/go-zookeeper/zk"
)

// ZKConn is a raw go-zookeeper connection, closed at cleanup, for tests that
// read the lock's nodes.
func ZKConn(t testing.TB, servers []string) *zk.Conn {
	t.Helper()
	conn, _, err := zk.Connect(servers, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// ViaProxy returns the DSN with its address replaced by addr.
func ViaProxy(t *testing.T, dsn, addr string) string {
	t.Helper()
	return changeDSN(t, dsn, func(c *mysql.Config) { c.Addr = addr })
}

// changeDSN is dsn changed by change.
func changeDSN(t *testing.T, dsn string, change func(*mysql.Config)) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	change(cfg)
	return cfg.FormatDSN()
}

// AsUser returns the DSN with its user replaced by user: on a server that
// skips its grant tables (StartMariaDB), a name that tells a client's
// connections apart in information_schema.PROCESSLIST, whose HOST is empty
// there.
func AsUser(t *testing.T, dsn, user string) string {
	t.Helper()
	return changeDSN(t, dsn, func(c *mysql.Config) { c.User = user })
}

// MySQLAddr is the host:port of a DSN.
func MySQLAddr(t *testing.T, dsn string) string {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Addr
}

// OpenDB opens dsn, closed at cleanup.
func OpenDB(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Chromium finds Debian's Chromium, or fails saying how to install it.
func Chromium(t *testing.T) string {
	t.Helper()
	Integration(t)
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("Chromium is not installed: the dashboard's browser test needs Debian's chromium " +
		"(scripts/stack.sh up installs it, or: apt-get install chromium)")
	return ""
}

// FreeAddrs are n loopback addresses with a port free a moment ago.
func FreeAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ln.Addr().String())
		defer ln.Close()
	}
	return out
}

// FreePorts returns n loopback ports nothing listens on now.
func FreePorts(t *testing.T, n int) []string {
	t.Helper()
	var ports []string
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		_, p, _ := net.SplitHostPort(ln.Addr().String())
		ports = append(ports, p)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

// BuiltRoot is the checkout's root, once make build has built bin/.
func BuiltRoot(t *testing.T) string {
	t.Helper()
	Integration(t)
	for _, b := range []string{"bin/shop", "bin/loadtest"} {
		if _, err := os.Stat(InRoot(t, b)); err != nil {
			t.Fatalf("%s is missing: make build", b)
		}
	}
	return Root(t)
}

// WaitUntil polls cond every 50ms for at most d.
func WaitUntil(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(50 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// ClosedAddr is a loopback address nothing listens on.
func ClosedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}
