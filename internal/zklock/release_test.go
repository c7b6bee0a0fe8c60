package zklock_test

import (
	"context"
	"testing"

	"github.com/seckill-zk/seckill-zk/internal/zklock"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// Release with a context that has ended already must still delete the node
// (in the background): the doc promises it, and a node left behind would
// hold the lock for the rest of the session, every other waiter blocked.
func TestReleaseWithAnEndedContextDeletesTheNode(t *testing.T) {
	ctx := testCtx(t)
	c, observer := connect(t), connect(t)
	ended, cancel := context.WithCancel(ctx)
	cancel()
	gone := func(t *testing.T, node string) {
		t.Helper()
		waitFor(t, func() bool {
			ok, _, err := observer.Conn().Exists(node)
			return err == nil && !ok
		})
	}
	holdAndRelease := func(t *testing.T, m *zklock.Mutex) {
		t.Helper()
		if err := m.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		node := m.Node()
		if err := m.Release(ended); err != nil {
			t.Fatalf("Release with an ended context: %v", err)
		}
		gone(t, node)
		if m.IsHeld() {
			t.Error("still held after Release")
		}
	}
	t.Run("mutex", func(t *testing.T) {
		holdAndRelease(t, zklock.NewMutex(c, e2e.Path(t)))
	})
	t.Run("read/write lock", func(t *testing.T) {
		rw := zklock.NewReadWriteLock(c, e2e.Path(t))
		holdAndRelease(t, rw.ReadLock())
		holdAndRelease(t, rw.WriteLock())
	})
	t.Run("selector term", func(t *testing.T) {
		path := e2e.Path(t)
		leading := make(chan struct{})
		sel := zklock.NewLeaderSelector(c, path, "me", func(term context.Context) error {
			close(leading)
			<-term.Done() // the term ends with its context
			return term.Err()
		})
		if err := sel.Start(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-leading:
		case <-ctx.Done():
			t.Fatal("the selector never led")
		}
		kids, _, err := observer.Conn().Children(path)
		if err != nil || len(kids) != 1 {
			t.Fatalf("leader path holds %v (%v), want the leader's node", kids, err)
		}
		sel.Close() // ends the term's context: its release must not share that fate
		gone(t, path+"/"+kids[0])
	})
	t.Run("semaphore lease", func(t *testing.T) {
		lease, err := zklock.NewSemaphoreV2(c, e2e.Path(t), 1).Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := lease.Release(ended); err != nil {
			t.Fatalf("Release with an ended context: %v", err)
		}
		gone(t, lease.Node())
	})
}
