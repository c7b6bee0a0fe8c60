package e2e

// The local servers every integration test runs against: the real
// ZooKeeper (zookeeper.go) and MariaDB (mysql.go), and the test's own
// paths and databases on them. A missing server fails the test with a
// how-to-start message: a failed test, never a skipped one. Here: what
// they share.

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"regexp"
	"testing"
	"time"
)

const howToStart = "start the local stack with `make stack-up` (scripts/stack.sh up installs and starts ZooKeeper and MariaDB)"

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
