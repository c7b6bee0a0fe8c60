package zklock_test

import (
	"context"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/zklock"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"

	"github.com/seckill-zk/seckill-zk/internal/zk"
)

// What the recipes do when the ground moves under a participant: its node
// deleted by someone else, its session expired while it waits, its
// connection dropped for a moment.

// acquireAsync starts m.Acquire and returns its outcome's channel.
func acquireAsync(ctx context.Context, m *zklock.Mutex) <-chan error {
	done := make(chan error, 1)
	go func() { done <- m.Acquire(ctx) }()
	return done
}

// A waiter whose node is deleted by someone else queues again with a new
// node and gets the lock when the holder lets go: it must not take the
// hand-off shortcut into a hold without a node (a second waiter, behind it,
// would hold at the same time). Fails when the shortcut does not check the
// waiter's own node; with FetchTokenEarly (the shop's) the early read's
// watch is that check.
func TestMutexWaiterWhoseNodeIsDeletedQueuesAgain(t *testing.T) {
	for _, early := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "token read early"}[early], func(t *testing.T) {
			ctx := testCtx(t)
			p := e2e.NewZKProxy(t, e2e.ZooKeeper(t)[0])
			holderC, waiterC, observer := connect(t), connectThrough(t, p), connect(t)
			lockPath := e2e.Path(t)
			h := zklock.NewMutex(holderC, lockPath)
			if err := h.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
			watching := p.NoticeReply(func(op int32, path string) bool { return op == e2e.ZKOpGetData && path == h.Node() })
			w := zklock.NewMutex(waiterC, lockPath)
			if early {
				w.FetchTokenEarly()
			}
			done := acquireAsync(ctx, w)
			waitFor(t, func() bool { return len(children(t, observer, lockPath)) == 2 })
			kids := children(t, observer, lockPath)
			waiterNode := kids[0]
			if strings.HasSuffix(h.Node(), waiterNode) {
				waiterNode = kids[1]
			}
			awaitFault(t, watching, "the waiter's watch on the holder") // it waits: the shortcut's path
			if err := observer.Conn().Delete(path.Join(lockPath, waiterNode), -1); err != nil {
				t.Fatal(err)
			}
			release(t, h)
			if err := e2e.Receive(t, done, 10*time.Second, "the waiter whose node was deleted"); err != nil {
				t.Fatalf("the waiter whose node was deleted: %v", err)
			}
			if got := children(t, observer, lockPath); len(got) != 1 || got[0] == waiterNode {
				t.Fatalf("queue %v: want the waiter's new node only (its old one was %s)", got, waiterNode)
			}
			release(t, w)
		})
	}
}

// A waiter whose session expires while it waits queues again in the new
// session and gets the lock when the holder lets go. Fails when the waiter
// gives up on a lost session instead of queueing again.
func TestMutexWaiterWhoseSessionExpiresQueuesAgain(t *testing.T) {
	ctx := testCtx(t)
	p := e2e.NewZKProxy(t, e2e.ZooKeeper(t)[0])
	waiterC, observer := connectThrough(t, p), connect(t)
	lockPath := e2e.Path(t)
	h := zklock.NewMutex(observer, lockPath)
	if err := h.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	w := zklock.NewMutex(waiterC, lockPath)
	done := acquireAsync(ctx, w)
	waitFor(t, func() bool { return len(children(t, observer, lockPath)) == 2 })
	old := waiterC.Conn().SessionID()
	if err := p.ExpireSessions(); err != nil {
		t.Fatal(err)
	}
	// The waiter's node went with its session; it queues again as the new one.
	waitFor(t, func() bool {
		kids := children(t, observer, lockPath)
		return waiterC.Conn().SessionID() != old && len(kids) == 2
	})
	release(t, h)
	if err := e2e.Receive(t, done, 30*time.Second, "the waiter whose session expired"); err != nil {
		t.Fatalf("the waiter whose session expired: %v", err)
	}
	release(t, w)
}

// After a short drop that keeps the session, a new hold's Lost is open: the
// session's interruption was re-armed on the reconnect. Fails when it is
// not (every later Lost would be closed at once: in the shop, every
// purchase answered lock_lost).
func TestLostIsOpenForAHoldAfterAShortDrop(t *testing.T) {
	ctx := testCtx(t)
	p := newProxy(t)
	c, states := connectVia(t, p)
	p.Cut()
	waitFor(t, func() bool { return states.has(zk.StateSuspended) })
	p.Restore()
	waitFor(t, func() bool { return states.has(zk.StateSuspended, zk.StateReconnected) })
	m := zklock.NewMutex(c, e2e.Path(t))
	if err := m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Lost():
		t.Fatal("a hold taken after the reconnect is lost at once")
	case <-time.After(300 * time.Millisecond):
	}
	release(t, m)
}

// A leader whose connection drops for a moment (its session kept) leaves
// and rejoins the election at its end, as Curator's LeaderLatch resets: the
// participant that waited leads. Fails when the latch keeps its old node
// across the reconnect (it would lead again at once).
func TestLeaderLatchRequeuesAfterAShortDrop(t *testing.T) {
	ctx := testCtx(t)
	p := newProxy(t)
	c, states := connectVia(t, p)
	path := e2e.Path(t)
	la := zklock.NewLeaderLatch(c, path, "A")
	if err := la.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer closeLatch(la)
	waitFor(t, la.HasLeadership)
	lb := zklock.NewLeaderLatch(connect(t), path, "B")
	if err := lb.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer closeLatch(lb)
	waitFor(t, func() bool { ids, err := la.Participants(ctx); return err == nil && len(ids) == 2 })

	p.Cut()
	waitFor(t, func() bool { return states.has(zk.StateSuspended) })
	p.Restore()
	waitFor(t, func() bool { return states.has(zk.StateSuspended, zk.StateReconnected) })
	waitFor(t, lb.HasLeadership)
	waitFor(t, func() bool {
		ids, err := la.Participants(ctx)
		return err == nil && len(ids) == 2 && ids[0] == "B" && ids[1] == "A"
	})
	if la.HasLeadership() {
		t.Fatal("A leads as well as B")
	}
}
