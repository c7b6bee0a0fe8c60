// Package e2e is the tests' one harness, after etcd's tests/framework/e2e:
// it starts every server a test runs against and gives a suite one way to
// talk to the shop. The packages' own integration tests (internal/repo,
// internal/zklock, ...) and the end-to-end suites (tests/e2e) use it alike;
// no other test starts a server (internal/arch holds that).
//
//   - The local servers (local.go): ZooKeeper and MariaDB, with a path
//     and a database of the test's own on them (Path, Database), the
//     Galera cluster (Galera, GaleraDatabase), Redis; a missing server
//     fails the test with how to start it. Servers of the test's own: a
//     ZooKeeper ensemble (StartEnsemble), a Galera cluster (StartGalera),
//     a MariaDB (StartMariaDB); a node is killed by its PID and started
//     again (nodes.go).
//   - The faults: a TCP proxy that stalls, cuts and refuses (NewProxy),
//     one that holds a MySQL packet (NewMySQLProxy), one that reads
//     ZooKeeper's wire and expires or keeps sessions (NewZKProxy).
//   - The shop: built once per test binary, with and without the race
//     detector (ShopBinary, ShopBinaryNoRace); a Stack is a database and a
//     lock path of the test's own with the shop's environment pointing at
//     them, Stack.Shop runs a command, Stack.Serve an instance.
//   - The buyer: Ask (one request, its Answer), Conn (a keep-alive
//     connection for load), Buy (a crowd) and the checks every fault test
//     makes (Stack.CheckNoOversell, CheckPerGoods, CheckNoOrphans).
//
// It sits below every package whose tests use it (internal/zk's among
// them), so it imports only leaves: ZooKeeper and MySQL through their
// drivers, metrics through internal/metrics/scrape.
//
// A suite's TestMain is os.Exit(e2e.Main(m)). Under go test -short the
// servers' tests skip (Integration) and nothing is built.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sync"
	"testing"
)

var (
	buildDir  string
	builds    sync.Map // buildKey -> *build
	rootOnce  sync.Once
	rootPath  string
	rootError error
)

type buildKey struct {
	pkg  string
	race bool
}

type build struct {
	once sync.Once
	path string
	err  error
}

// Main runs a suite's tests and removes the binaries built for them.
func Main(m *testing.M) int {
	if h := os.Getenv(helperEnv); h != "" {
		return runHelper(h) // the test binary, run in a host of a Network
	}
	dir, err := os.MkdirTemp("", "shop-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	buildDir = dir
	defer os.RemoveAll(dir)
	return m.Run()
}

// ShopBinary is cmd/shop built with the race detector, once per test
// binary, for the end-to-end tests.
func ShopBinary(t testing.TB) string { return buildBinary(t, "cmd/shop", true) }

// ShopBinaryNoRace is the same program without the race detector, for the
// tests whose faults make every ZooKeeper client reconnect, and for the
// benchmarks. go-zookeeper v1.0.4 races with itself on a reconnect (it
// reads lastZxid to re-register watches while its new receive loop writes
// it; go-zookeeper/zk#35, unmerged); an instance forgives that report and no
// other (races.go), but these tests would show little else under -race and
// run slower. zklock's own reconnect tests run under -race through a gate
// that orders the two (see internal/zklock/racegate_test.go).
func ShopBinaryNoRace(t testing.TB) string { return buildBinary(t, "cmd/shop", false) }

// PeerBinary is tests/redispeer, the benchmark's Redis + Lua peer, built
// once per test binary without the race detector. It runs on a Stack as
// the shop does (Stack.Binary), PEER_MODE saying which design.
func PeerBinary(t testing.TB) string { return buildBinary(t, "tests/redispeer", false) }

// binary builds the module's package pkg (a slash path) once per test binary.
func buildBinary(t testing.TB, pkg string, race bool) string {
	t.Helper()
	Integration(t)
	if buildDir == "" {
		t.Fatal("e2e: the suite's TestMain must call e2e.Main")
	}
	v, _ := builds.LoadOrStore(buildKey{pkg, race}, &build{})
	b := v.(*build)
	b.once.Do(func() {
		name, args := path.Base(pkg)+"-norace", []string{"build"}
		if race {
			name, args = path.Base(pkg), []string{"build", "-race"}
		}
		b.path = filepath.Join(buildDir, name)
		cmd := exec.Command("go", append(args, "-o", b.path, "./"+pkg)...)
		cmd.Dir = Root(t)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go %v: %v\n%s", cmd.Args[1:], err, out)
		}
	})
	if b.err != nil {
		t.Fatalf("build %s: %v", pkg, b.err)
	}
	return b.path
}

// Root is the module's root directory, where go.mod is, found from the
// working directory up.
func Root(t testing.TB) string {
	t.Helper()
	rootOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			rootError = err
			return
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				rootPath = dir
				return
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				rootError = fmt.Errorf("no go.mod above the working directory")
				return
			}
			dir = parent
		}
	})
	if rootError != nil {
		t.Fatalf("e2e: %v", rootError)
	}
	return rootPath
}

// InRoot is path (slash-separated, relative to the module's root) made
// absolute.
func InRoot(t testing.TB, path string) string {
	t.Helper()
	return filepath.Join(Root(t), filepath.FromSlash(path))
}
