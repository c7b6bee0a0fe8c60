package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/zklock"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// The fencing token must grow from holder to holder, across sessions, and
// also after the lock's container parent was deleted and made again, when
// the nodes' sequence numbers start at 0 again: that is why the token is
// the node's create zxid and not its sequence.
func TestMutexTokensIncreaseFromHolderToHolder(t *testing.T) {
	for _, early := range []bool{false, true} {
		t.Run(map[bool]string{false: "read when asked", true: "read early"}[early], func(t *testing.T) {
			tokensIncrease(t, early)
		})
	}
}

func tokensIncrease(t *testing.T, early bool) {
	ctx := testCtx(t)
	clients := []*zklock.Client{connect(t), connect(t)}
	lockPath := e2e.Path(t) + "/lock"

	var last int64
	for round := range 6 {
		c := clients[round%2]
		m := zklock.NewMutex(c, lockPath)
		if early {
			m.FetchTokenEarly()
		}
		if err := m.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		tok, err := m.Token(ctx)
		if err != nil {
			t.Fatalf("round %d: token: %v", round, err)
		}
		_, stat, err := c.Conn().Exists(m.Node())
		if err != nil {
			t.Fatal(err)
		}
		if tok != stat.Czxid {
			t.Errorf("round %d: token %d, want the node's czxid %d", round, tok, stat.Czxid)
		}
		if again, err := m.Token(ctx); err != nil || again != tok {
			t.Errorf("round %d: second Token = %d, %v; want %d", round, again, err, tok)
		}
		if tok <= last {
			t.Errorf("round %d: token %d not above the previous holder's %d", round, tok, last)
		}
		last = tok
		node := m.Node()
		if err := m.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if round == 2 {
			// ZooKeeper deletes an empty container on its own schedule; do it
			// now, so that the next node's sequence starts again from 0.
			if err := c.Conn().Delete(lockPath, -1); err != nil {
				t.Fatalf("delete the empty lock parent: %v", err)
			}
		}
		if round == 3 && !strings.HasSuffix(node, "-lock-0000000000") {
			t.Errorf("round %d: node %s: the recreated parent should restart the sequence at 0", round, path.Base(node))
		}
	}
}

func TestMutexTokenWhenNotHeldOrLost(t *testing.T) {
	ctx := testCtx(t)
	c := connect(t)
	m := zklock.NewMutex(c, e2e.Path(t))
	if _, err := m.Token(ctx); !errors.Is(err, zklock.ErrNotHeld) {
		t.Errorf("Token before Acquire: %v, want ErrNotHeld", err)
	}
	if err := m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	// The hold is watched from the first Token or Lost call on, so deleting
	// the node first makes the watcher's first read find nothing.
	if err := c.Conn().Delete(m.Node(), -1); err != nil {
		t.Fatal(err)
	}
	if tok, err := m.Token(ctx); !errors.Is(err, zklock.ErrLost) {
		t.Errorf("Token after the node was deleted = %d, %v; want ErrLost", tok, err)
	}
	if err := m.Release(ctx); err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Release(ctx)
	if _, err := m.Token(canceled); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("Token with an ended context: %v, want a token or context.Canceled", err)
	}
}

func TestSemaphoreMutexTokensIncrease(t *testing.T) {
	ctx := testCtx(t)
	clients := []*zklock.Client{connect(t), connect(t)}
	p := e2e.Path(t)
	var last int64
	for round := range 4 {
		m := zklock.NewSemaphoreMutex(clients[round%2], p)
		if _, err := m.Token(ctx); !errors.Is(err, zklock.ErrNotHeld) {
			t.Errorf("Token before Acquire: %v, want ErrNotHeld", err)
		}
		if err := m.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		tok, err := m.Token(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if tok <= last {
			t.Errorf("round %d: token %d not above %d", round, tok, last)
		}
		last = tok
		if err := m.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// The write lock of a read/write lock is a Mutex on the shared path: writers
// are fenced like mutex holders, also when a reader held in between.
func TestWriteLockTokensIncrease(t *testing.T) {
	ctx := testCtx(t)
	clients := []*zklock.Client{connect(t), connect(t)}
	p := e2e.Path(t)
	var last int64
	for round := range 4 {
		rw := zklock.NewReadWriteLock(clients[round%2], p)
		if round == 2 { // a reader between two writers
			if err := rw.ReadLock().Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			if err := rw.ReadLock().Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		w := rw.WriteLock()
		if err := w.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		tok, err := w.Token(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if tok <= last {
			t.Errorf("writer %d: token %d not above %d", round, tok, last)
		}
		last = tok
		if err := w.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A holder that read its token early (FetchTokenEarly, as the shop does)
// watches its node with the watch that read set: its node is read once in
// all, whether the lock was free or it waited (the waiter's watch on its
// own node is the same), and Lost still closes when someone else deletes
// the node. Fails (two reads) when the hold reads its node again to watch
// it.
func TestAnEarlyTokenReadIsTheHoldsWatch(t *testing.T) {
	for _, waited := range []bool{false, true} {
		t.Run(fmt.Sprintf("waited=%v", waited), func(t *testing.T) {
			ctx := testCtx(t)
			proxy := e2e.NewZKProxy(t, e2e.ZooKeeper(t)[0])
			var mu sync.Mutex
			var reads []string // the paths of the getData requests through the proxy
			proxy.NoticeReply(func(op int32, p string) bool {
				if op == e2e.ZKOpGetData {
					mu.Lock()
					reads = append(reads, p)
					mu.Unlock()
				}
				return false
			})
			lockPath := e2e.Path(t)
			x, y := connect(t), connectThrough(t, proxy)
			ahead := zklock.NewMutex(x, lockPath)
			if waited {
				if err := ahead.Acquire(ctx); err != nil {
					t.Fatal(err)
				}
			}
			m := zklock.NewMutex(y, lockPath)
			m.FetchTokenEarly()
			done := acquireAsync(ctx, m)
			if waited {
				waitFor(t, func() bool { return len(children(t, x, lockPath)) == 2 })
				release(t, ahead)
			}
			if err := e2e.Receive(t, done, 10*time.Second, "the acquisition"); err != nil {
				t.Fatal(err)
			}
			lost := m.Lost()
			if _, err := m.Token(ctx); err != nil {
				t.Fatal(err)
			}
			node := m.Node()
			if err := x.Conn().Delete(node, -1); err != nil {
				t.Fatal(err)
			}
			select {
			case <-lost:
			case <-time.After(10 * time.Second):
				t.Fatal("Lost did not close when the held node was deleted")
			}
			if err := m.Release(ctx); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if countOf(reads, node) != 1 {
				t.Errorf("the held node was read %d times, want once: %v", countOf(reads, node), reads)
			}
		})
	}
}

// countOf is how many of xs are x.
func countOf(xs []string, x string) (n int) {
	for _, s := range xs {
		if s == x {
			n++
		}
	}
	return n
}
