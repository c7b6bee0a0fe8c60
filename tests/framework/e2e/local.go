package e2e

// The local servers every integration test runs against: the real
// ZooKeeper and MariaDB, and the test's own paths and databases on them. A
// missing server fails the test with a how-to-start message: a failed
// test, never a skipped one.

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/go-zookeeper/zk"
)

const howToStart = "start the local stack with `make stack-up` (scripts/stack.sh up installs and starts ZooKeeper and MariaDB)"

// ZooKeeper returns the test ensemble's addresses (SECKILL_TEST_ZK, comma
// separated; default 127.0.0.1:2181) after checking that it answers ruok.
func ZooKeeper(t testing.TB) []string {
	t.Helper()
	Integration(t)
	servers := strings.Split(env("SECKILL_TEST_ZK", "127.0.0.1:2181"), ",")
	if err := ruok(servers[0]); err != nil {
		t.Fatalf("ZooKeeper at %s is not answering (%v): %s", servers[0], err, howToStart)
	}
	return servers
}

func ruok(addr string) error {
	answer, err := ask(addr, "ruok", 4)
	if err != nil {
		return err
	}
	if answer != "imok" {
		return fmt.Errorf("ruok answered %q, want imok (is 4lw.commands.whitelist set?)", answer)
	}
	return nil
}

// ask sends request to the server at addr and reads one packet of its
// answer, at most size bytes, within a few seconds.
func ask(addr, request string, size int) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(3 * time.Second)); err != nil {
		return "", err
	}
	if _, err := conn.Write([]byte(request)); err != nil {
		return "", err
	}
	buf := make([]byte, size)
	n, err := conn.Read(buf)
	if n == 0 {
		return "", err
	}
	return string(buf[:n]), nil
}

// Path returns a ZooKeeper path unique to this test run; whatever the test
// leaves under it (persistent nodes, say) is deleted at cleanup.
func Path(t testing.TB) string {
	t.Helper()
	p := "/seckill-test/" + sanitize(t.Name()) + "-" + randHex(4)
	servers := ZooKeeper(t)
	if err := openRoot(servers); err != nil {
		t.Fatalf("create /seckill-test: %v", err)
	}
	t.Cleanup(func() {
		if err := deleteTree(servers, p); err != nil {
			t.Logf("cleanup of %s: %v", p, err)
		}
	})
	return p
}

// openRoot makes /seckill-test a persistent node open to anyone, if it is
// not there: were a client with an identity (ZKDigest) the first to need
// it, it would make it with its ACL, and the other tests could not create
// their paths under it.
func openRoot(servers []string) error {
	rootMu.Lock()
	defer rootMu.Unlock()
	key := strings.Join(servers, ",")
	if rootOpened[key] {
		return nil // made (or found) once by this process: persistent, it stays
	}
	conn, _, err := zk.Connect(servers, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.Create("/seckill-test", nil, zk.FlagPersistent, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return err
	}
	rootOpened[key] = true
	return nil
}

var (
	rootMu     sync.Mutex
	rootOpened = map[string]bool{} // by servers: openRoot's work done
)

// ZKDigest is the digest identity ("user:password") of the tests whose
// clients close their nodes to strangers (zookeeper.auth); the cleanup of
// Path authenticates as it.
const ZKDigest = "seckill-test:not-a-secret-only-long-enough-for-the-rule"

// CreateNode creates the persistent node p with data, and its missing
// ancestors as persistent nodes; p itself must be new. The tests' common
// root may have been made a container by a lock (as Curator's recipes make
// parents), and the server reaps an empty container on its own schedule:
// an ancestor that vanishes between two creates is made again, a bounded
// number of times.
func CreateNode(t testing.TB, conn *zk.Conn, p string, data []byte) {
	t.Helper()
	acl := zk.WorldACL(zk.PermAll)
	for attempt := 0; attempt < 5; attempt++ {
		for i := 1; i < len(p); i++ {
			if p[i] != '/' {
				continue
			}
			if _, err := conn.Create(p[:i], nil, zk.FlagPersistent, acl); err != nil &&
				!errors.Is(err, zk.ErrNodeExists) && !errors.Is(err, zk.ErrNoNode) {
				t.Fatalf("create %s: %v", p[:i], err)
			}
		}
		_, err := conn.Create(p, data, zk.FlagPersistent, acl)
		if err == nil {
			return
		}
		if !errors.Is(err, zk.ErrNoNode) {
			t.Fatalf("create %s: %v", p, err)
		}
	}
	t.Fatalf("create %s: an ancestor kept vanishing (reaped container?)", p)
}

// deleteTree deletes p and everything below it, children first, as the
// tests' own identity: it may delete what a client of it created under an
// ACL (ZKDigest); open nodes need nothing.
func deleteTree(servers []string, p string) error {
	return DeleteTreeAs(servers, ZKDigest, p)
}

// DeleteTreeAs deletes p and everything below it, children first, as the
// digest identity (user:password).
func DeleteTreeAs(servers []string, digest, p string) error {
	conn, _, err := zk.Connect(servers, 10*time.Second, zk.WithLogInfo(false), zk.WithLogger(quiet{}))
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := conn.AddAuth("digest", []byte(digest)); err != nil {
		return err
	}
	var del func(string) error
	del = func(p string) error {
		kids, _, err := conn.Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, k := range kids {
			if err := del(p + "/" + k); err != nil {
				return err
			}
		}
		if err := conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		return nil
	}
	return del(p)
}

type quiet struct{}

func (quiet) Printf(string, ...any) {}

// Integration marks a test that needs a server (ZooKeeper, MariaDB, the
// Galera cluster, a server of its own, a browser or the load tools): it
// runs under go test and fails when the server is missing; go test -short
// (make unit) skips it, and says so. Every server accessor of the harness
// calls it, so a test need not.
func Integration(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs servers: skipped under -short (make unit); make test runs it")
	}
}

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

func env(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

func sanitize(s string) string { return unsafeChars.ReplaceAllString(s, "_") }

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b)
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

// Receive waits at most d for a value from ch, and fails the test, saying
// what it waited for, when none comes: a wait in a test has a bound, so a
// bug fails the test instead of hanging the binary.
func Receive[T any](t testing.TB, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("%s: nothing within %v", what, d)
		var zero T
		return zero
	}
}
