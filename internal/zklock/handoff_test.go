package zklock_test

import (
	"context"
	"path"
	"slices"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/zklock"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// queueOf returns the nodes of lockPath in sequence order (full paths).
func queueOf(t *testing.T, c *zklock.Client, lockPath string) []string {
	t.Helper()
	kids := children(t, c, lockPath)
	slices.SortFunc(kids, func(a, b string) int { return compareSeq(a, b) })
	for i, k := range kids {
		kids[i] = path.Join(lockPath, k)
	}
	return kids
}

// compareSeq orders node names by ZooKeeper's ten-digit sequence suffix.
func compareSeq(a, b string) int {
	sa, sb := a[len(a)-10:], b[len(b)-10:]
	switch {
	case sa < sb:
		return -1
	case sa > sb:
		return 1
	}
	return 0
}

// handoffScene is two processes on one lock: X's holder Q and X's waiter P
// ahead of Y's waiter W, which reads its token early (as the shop does, so
// it watches its own node and may take a hand-off without listing). Y talks
// through a proxy so that the test knows when W's watch on P is set.
type handoffScene struct {
	lockPath string
	x, y     *zklock.Client
	q, p, w  *zklock.Mutex
	pDone    <-chan error
	pCancel  context.CancelFunc
	wDone    <-chan error
	pNode    string
}

func newHandoffScene(t *testing.T) *handoffScene {
	t.Helper()
	ctx := testCtx(t)
	proxy := e2e.NewZKProxy(t, e2e.ZooKeeper(t)[0])
	sc := &handoffScene{lockPath: e2e.Path(t), x: connect(t), y: connectThrough(t, proxy)}
	sc.q = zklock.NewMutex(sc.x, sc.lockPath)
	if err := sc.q.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	sc.p = zklock.NewMutex(sc.x, sc.lockPath)
	pctx, cancel := context.WithCancel(ctx)
	sc.pCancel = cancel
	sc.pDone = acquireAsync(pctx, sc.p)
	waitFor(t, func() bool { return len(children(t, sc.x, sc.lockPath)) == 2 })
	sc.pNode = queueOf(t, sc.x, sc.lockPath)[1]
	watching := proxy.NoticeReply(func(op int32, p string) bool { return op == e2e.ZKOpGetData && p == sc.pNode })
	sc.w = zklock.NewMutex(sc.y, sc.lockPath)
	sc.w.FetchTokenEarly()
	sc.wDone = acquireAsync(ctx, sc.w)
	awaitFault(t, watching, "W's watch on P")
	return sc
}

// A waiter behind another process's node that its Client saw first in a
// listing takes the hand-off when that node goes without listing the queue
// again: the listing was the server's snapshot, and nothing can queue ahead
// of a node once it is first. Fails (one listing more) when only nodes of
// the waiter's own process count as having been first.
func TestWaiterTakesAnotherProcessesHandoffWithoutListing(t *testing.T) {
	ctx := testCtx(t)
	sc := newHandoffScene(t)
	release(t, sc.q)
	if err := e2e.Receive(t, sc.pDone, 10*time.Second, "P, once Q let go"); err != nil {
		t.Fatal(err)
	}
	// P holds. Another buyer of Y joins: its listing shows P first.
	before := sc.y.Stats()
	w2 := zklock.NewMutex(sc.y, sc.lockPath)
	w2.FetchTokenEarly()
	w2Done := acquireAsync(ctx, w2)
	waitFor(t, func() bool { return sc.y.Stats().Listings > before.Listings })
	before = sc.y.Stats()
	release(t, sc.p)
	if err := e2e.Receive(t, sc.wDone, 10*time.Second, "W, once P let go"); err != nil {
		t.Fatal(err)
	}
	after := sc.y.Stats()
	if after.Listings != before.Listings || after.Shortcuts != before.Shortcuts+1 {
		t.Errorf("W's hand-off: %d listings and %d shortcuts more, want 0 and 1",
			after.Listings-before.Listings, after.Shortcuts-before.Shortcuts)
	}
	release(t, sc.w)
	if err := e2e.Receive(t, w2Done, 10*time.Second, "W2, once W let go"); err != nil {
		t.Fatal(err)
	}
	release(t, w2)
}

// The other side: when another process's waiter ahead gives up while the
// holder ahead of it still holds, the waiter behind it lists and waits on
// the holder. Its Client saw the holder first, never the waiter that gave
// up. Fails when a listing's nodes other than the first are taken for
// having been first (W would hold beside Q).
func TestWaiterBehindAGiveUpDoesNotHoldBesideTheHolder(t *testing.T) {
	sc := newHandoffScene(t)
	before := sc.y.Stats()
	sc.pCancel() // P gives up: its node goes while Q holds
	if err := e2e.Receive(t, sc.pDone, 10*time.Second, "P giving up"); err == nil {
		t.Fatal("P acquired; want it to give up")
	}
	// W is woken by P's deletion; it must list again and wait on Q.
	waitFor(t, func() bool { return sc.y.Stats().Wakeups > before.Wakeups })
	select {
	case err := <-sc.wDone:
		t.Fatalf("W returned (err %v) while Q holds: it took P, which gave up, for having been first", err)
	case <-time.After(200 * time.Millisecond): // W settles: Q ahead
	}
	if s := sc.y.Stats(); s.Listings == before.Listings || s.Shortcuts != before.Shortcuts {
		t.Errorf("W after P gave up: %d listings and %d shortcuts more, want 1 or more and 0",
			s.Listings-before.Listings, s.Shortcuts-before.Shortcuts)
	}
	if got := queueOf(t, sc.x, sc.lockPath); len(got) != 2 || path.Base(got[0]) != path.Base(sc.q.Node()) {
		t.Fatalf("queue %v: want Q and W", got)
	}
	release(t, sc.q)
	if err := e2e.Receive(t, sc.wDone, 10*time.Second, "W, once Q let go"); err != nil {
		t.Fatal(err)
	}
	release(t, sc.w)
}
