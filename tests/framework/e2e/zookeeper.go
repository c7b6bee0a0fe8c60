package e2e

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
)

// The local ZooKeeper: the test ensemble, and a path of the test's own on
// it, deleted at cleanup.

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
