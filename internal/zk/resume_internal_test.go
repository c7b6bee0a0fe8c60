package zk

import (
	"context"
	"path"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// The two late arrivals of a resumed session (resume.go), played on a real
// server: the client gave its session up (old, ended), the server kept it,
// and the next connection resumed it (handOver made cur old's successor).
// What old's recipes do after that must act as cur, since old is done:
//   - a create's answer that arrives after the hand-over: the node lives on
//     in cur and nobody holds it, so it is deleted at once (created);
//   - a protected create whose answer was lost after the hand-over: its node,
//     if any, is looked for and deleted as cur (lookFor), not as old, whose
//     background work stops at once.
//
// The proxy tests (zkfault_test.go) bring a session back for real; there the
// waiter's own Mutex also lets its node go, so these branches are played
// here directly on the session objects the client would hold.
func TestWorkOfALostSessionArrivingAfterItsResumption(t *testing.T) {
	servers := e2e.ZooKeeper(t)
	base := e2e.Path(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Connect(ctx, servers, Options{})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer c.Close()
	e2e.CreateNode(t, c.conn, base, nil)

	resumed := func(t *testing.T) (old, cur *Session) {
		t.Helper()
		cur, err := c.Session(ctx)
		if err != nil {
			t.Fatalf("session: %v", err)
		}
		old = newSession(cur.id) // the same server session, as the client held it before the loss
		old.end()
		if l := old.handOver(cur); len(l.owned)+len(l.unsure) != 0 {
			t.Fatalf("a fresh session left %v", l)
		}
		return old, cur
	}
	ephemeral := func(t *testing.T, name string) string {
		t.Helper()
		p, err := c.conn.Create(path.Join(base, name), nil, gozk.FlagEphemeralSequential, c.acl)
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		return p
	}
	gone := func(p string) bool {
		ok, _, err := c.conn.Exists(p)
		return err == nil && !ok
	}

	t.Run("a create answered after the hand-over", func(t *testing.T) {
		old, cur := resumed(t)
		node := ephemeral(t, "late-")
		c.created(old, node)
		if !waitFor(10*time.Second, func() bool { return gone(node) }) {
			t.Fatalf("%s, created in the resumed session after its hand-over, still exists: nobody will delete it", node)
		}
		if n := recorded(old, cur); n != 0 {
			t.Errorf("the deleted node is still recorded (%d)", n)
		}
	})

	t.Run("a protected create lost after the hand-over", func(t *testing.T) {
		old, cur := resumed(t)
		prefix := protectedPrefix()
		node := ephemeral(t, prefix+"lock-")
		other := ephemeral(t, protectedPrefix()+"lock-") // another create's: kept
		c.deleteProtectedOrphans(base, prefix, old)
		if !waitFor(10*time.Second, func() bool { return gone(node) }) {
			t.Fatalf("%s, the lost create's node, still exists in the resumed session: the queue behind it waits for good", node)
		}
		if gone(other) {
			t.Errorf("%s, another create's node, was deleted too", other)
		}
		if !waitFor(10*time.Second, func() bool { return recorded(old, cur) == 0 }) {
			t.Errorf("the create is still to be looked for (%d records)", recorded(old, cur))
		}
	})
}

// recorded counts what the sessions still record as created or unsure.
func recorded(ss ...*Session) int {
	n := 0
	for _, s := range ss {
		s.created.mu.Lock()
		n += len(s.created.owned) + len(s.created.unsure)
		s.created.mu.Unlock()
	}
	return n
}

// waitFor polls cond until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}
