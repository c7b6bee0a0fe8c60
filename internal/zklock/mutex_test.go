package zklock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/zklock"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"

	"github.com/seckill-zk/seckill-zk/internal/zk"
)

func connect(t testing.TB) *zklock.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := dial(ctx, e2e.ZooKeeper(t), zk.Options{SessionTimeout: 10 * time.Second}, zklock.Options{})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func children(t *testing.T, c *zklock.Client, p string) []string {
	t.Helper()
	kids, _, err := c.Conn().Children(p)
	if err != nil {
		t.Fatalf("children of %s: %v", p, err)
	}
	return kids
}

func TestMutexExcludesAcrossSessions(t *testing.T) {
	ctx := testCtx(t)
	clients := []*zklock.Client{connect(t), connect(t)}
	path := e2e.Path(t)

	const workers, rounds = 10, 5
	var inside, maxInside atomic.Int32
	counter := 0 // guarded by the ZooKeeper lock only; -race checks it
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			m := zklock.NewMutex(clients[w%len(clients)], path)
			for range rounds {
				if err := m.Acquire(ctx); err != nil {
					t.Errorf("acquire: %v", err)
					return
				}
				n := inside.Add(1)
				if n > maxInside.Load() {
					maxInside.Store(n)
				}
				v := counter
				time.Sleep(time.Millisecond)
				counter = v + 1
				inside.Add(-1)
				if err := m.Release(ctx); err != nil {
					t.Errorf("release: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got := maxInside.Load(); got != 1 {
		t.Errorf("at most %d holders at once, want 1", got)
	}
	if counter != workers*rounds {
		t.Errorf("counter = %d, want %d: an update was lost", counter, workers*rounds)
	}
	if kids := children(t, clients[0], path); len(kids) != 0 {
		t.Errorf("nodes left behind: %v", kids)
	}
}

// queueInTurn queues n waiters on path behind the lock first holds, waiter
// i through clientOf(i), strictly one after another (queued(i) reports
// that waiter i is in the queue); released (called between the queueing
// and the hand-offs, may be nil) is told before first releases. It returns
// the waiters in the order they held the lock.
func queueInTurn(t *testing.T, ctx context.Context, first *zklock.Mutex, path string, n int, clientOf func(int) *zklock.Client, queued func(int) bool, released func()) []int {
	t.Helper()
	order := make(chan int, n)
	var wg sync.WaitGroup
	for i := range n {
		m := zklock.NewMutex(clientOf(i), path)
		wg.Go(func() {
			if err := m.Acquire(ctx); err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			order <- i
			if err := m.Release(ctx); err != nil {
				t.Errorf("waiter %d release: %v", i, err)
			}
		})
		waitFor(t, func() bool { return queued(i) })
	}
	if released != nil {
		released()
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(order)
	var got []int
	for i := range order {
		got = append(got, i)
	}
	return got
}

func TestMutexIsFairAndWakesOneWaiterPerHandoff(t *testing.T) {
	ctx := testCtx(t)
	holderClient, waiterClient := connect(t), connect(t)
	path := e2e.Path(t)

	first := zklock.NewMutex(holderClient, path)
	if err := first.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	const waiters = 8
	var before zklock.Stats
	// Queue strictly one after another: wait until its node is there and it
	// has listed the queue (so it knows its node, and the next waiter lists
	// after that).
	order := queueInTurn(t, ctx, first, path, waiters, func(int) *zklock.Client { return waiterClient }, func(i int) bool {
		return len(children(t, holderClient, path)) == i+2 && waiterClient.Stats().Listings == int64(i+1)
	}, func() { before = waiterClient.Stats() })
	for turn, got := range order {
		if got != turn {
			t.Errorf("waiter %d got the lock in turn %d: not FIFO", got, turn)
		}
	}
	after := waiterClient.Stats()
	if got := after.Wakeups - before.Wakeups; got != waiters {
		t.Errorf("%d watch notifications for %d hand-offs, want exactly one each (no herd)", got, waiters)
	}
	// The first waiter had only the holder ahead; each later one had the
	// waiters of its own session ahead, which it saw hold: no hand-off
	// needed a second listing.
	if got := after.Listings - before.Listings; got != 0 {
		t.Errorf("%d queue listings during the hand-offs, want 0", got)
	}
	if got := after.Shortcuts - before.Shortcuts; got != waiters {
		t.Errorf("%d hand-offs without re-listing, want %d", got, waiters)
	}
}

// Waiters of two clients (two instances of a shop), queued one after
// another in turn, are served in the order they queued: Curator's order,
// the sequence of their nodes, whichever client each came through.
func TestMutexServesWaitersInArrivalOrderAcrossClients(t *testing.T) {
	ctx := testCtx(t)
	holderClient := connect(t)
	clients := []*zklock.Client{connect(t), connect(t)}
	path := e2e.Path(t)
	first := zklock.NewMutex(holderClient, path)
	if err := first.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	order := queueInTurn(t, ctx, first, path, 10, func(i int) *zklock.Client { return clients[i%2] },
		func(i int) bool { return len(children(t, holderClient, path)) == i+2 }, nil)
	for turn, got := range order {
		if got != turn {
			t.Errorf("waiter %d (client %d) got the lock in turn %d: not in arrival order", got, got%2, turn)
		}
	}
	if len(order) != 10 {
		t.Errorf("%d of 10 waiters held the lock", len(order))
	}
}

// A waiter whose predecessor in its own session gives up (it never held)
// must not take the lock from the holder further ahead.
func TestMutexWaiterBehindAGivenUpNodeWaitsForTheHolder(t *testing.T) {
	ctx := testCtx(t)
	holderClient, waiterClient := connect(t), connect(t)
	path := e2e.Path(t)

	holder := zklock.NewMutex(holderClient, path)
	if err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	quitter, quit := context.WithCancel(ctx)
	quitterDone := make(chan error, 1)
	go func() { quitterDone <- zklock.NewMutex(waiterClient, path).Acquire(quitter) }()
	waitFor(t, func() bool { return len(children(t, holderClient, path)) == 2 })

	acquired := make(chan error, 1)
	waiter := zklock.NewMutex(waiterClient, path)
	go func() { acquired <- waiter.Acquire(ctx) }()
	waitFor(t, func() bool { return len(children(t, holderClient, path)) == 3 })

	// Both waiters have listed the queue once when they joined.
	waitFor(t, func() bool { return waiterClient.Stats().Listings == 2 })
	quit()
	if err := <-quitterDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("the quitter's acquire = %v, want canceled", err)
	}
	// The quitter's node is deleted; the waiter, woken by that (or finding
	// it gone when it sets its watch), must list again and go on waiting.
	deadline := time.After(10 * time.Second)
	for waiterClient.Stats().Listings < 3 {
		select {
		case err := <-acquired:
			t.Fatalf("the waiter took the lock while it was held (err %v)", err)
		case <-deadline:
			t.Fatal("the waiter did not list the queue again after the quitter left")
		case <-time.After(5 * time.Millisecond):
		}
	}
	select {
	case err := <-acquired:
		t.Fatalf("the waiter took the lock while it was held (err %v)", err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-acquired; err != nil {
		t.Fatalf("acquire after the holder released: %v", err)
	}
	release(t, waiter)
}

func TestMutexGivingUpLeavesNoNode(t *testing.T) {
	c := connect(t)
	path := e2e.Path(t)
	holder := zklock.NewMutex(c, path)
	if err := holder.Acquire(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		err := zklock.NewMutex(c, path).Acquire(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("acquire = %v, want deadline exceeded", err)
		}
		waitFor(t, func() bool { return len(children(t, c, path)) == 1 })
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		go func() { time.Sleep(100 * time.Millisecond); cancel() }()
		err := zklock.NewMutex(c, path).Acquire(ctx)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("acquire = %v, want canceled", err)
		}
		waitFor(t, func() bool { return len(children(t, c, path)) == 1 })
	})
	t.Run("try", func(t *testing.T) {
		err := zklock.NewMutex(c, path).TryAcquire(testCtx(t))
		if !errors.Is(err, zklock.ErrLocked) {
			t.Fatalf("try acquire = %v, want ErrLocked", err)
		}
		waitFor(t, func() bool { return len(children(t, c, path)) == 1 })
	})
}

func TestMutexReentrancyAndMisuse(t *testing.T) {
	ctx := testCtx(t)
	c := connect(t)
	path := e2e.Path(t)
	m := zklock.NewMutex(c, path)
	if err := m.Release(ctx); !errors.Is(err, zklock.ErrNotHeld) {
		t.Fatalf("release before acquire = %v, want ErrNotHeld", err)
	}
	for range 3 {
		if err := m.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(children(t, c, path)); n != 1 {
		t.Fatalf("%d nodes for a reentrant lock, want 1", n)
	}
	other := zklock.NewMutex(c, path)
	if err := other.TryAcquire(ctx); !errors.Is(err, zklock.ErrLocked) {
		t.Fatalf("other handle try = %v, want ErrLocked", err)
	}
	if err := other.Release(ctx); !errors.Is(err, zklock.ErrNotHeld) {
		t.Fatalf("release by non-holder = %v, want ErrNotHeld", err)
	}
	for i := range 3 {
		if !m.IsHeld() {
			t.Fatalf("not held after %d of 3 releases", i)
		}
		if err := m.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if m.IsHeld() {
		t.Fatal("still held after as many releases as acquires")
	}
	if n := len(children(t, c, path)); n != 0 {
		t.Fatalf("%d nodes after the last release, want 0", n)
	}
	select {
	case <-m.Lost():
	default:
		t.Fatal("Lost of a handle that holds nothing must be closed")
	}
}

func TestMutexNodeFollowsCuratorNaming(t *testing.T) {
	ctx := testCtx(t)
	c := connect(t)
	path := e2e.Path(t)
	m := zklock.NewMutex(c, path)
	if err := m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Release(ctx)
	name := strings.TrimPrefix(m.Node(), path+"/")
	// _c_ + 36-character UUID + "-lock-" + 10-digit sequence
	if len(name) != 40+len("lock-")+10 || !strings.HasPrefix(name, "_c_") || name[39] != '-' || name[40:45] != "lock-" {
		t.Fatalf("node name %q does not follow Curator's _c_<uuid>-lock-<seq>", name)
	}
	nodes, err := m.ParticipantNodes(ctx)
	if err != nil || len(nodes) != 1 || nodes[0] != m.Node() {
		t.Fatalf("participants = %v, %v; want [%s]", nodes, err, m.Node())
	}
}

func TestMutexLostWhenNodeDeleted(t *testing.T) {
	ctx := testCtx(t)
	c := connect(t)
	m := zklock.NewMutex(c, e2e.Path(t))
	if err := m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Lost():
		t.Fatal("lost right after acquiring")
	case <-time.After(100 * time.Millisecond):
	}
	if err := c.Conn().Delete(m.Node(), -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-m.Lost():
	case <-time.After(10 * time.Second):
		t.Fatal("Lost did not fire after the lock node was deleted")
	}
	if err := m.Release(ctx); err != nil {
		t.Fatalf("release after loss: %v", err)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// dial connects a ZooKeeper client and returns the recipes' client on it,
// as a service would: zk.Connect, then zklock.New.
func dial(ctx context.Context, servers []string, zopts zk.Options, opts zklock.Options) (*zklock.Client, error) {
	zc, err := zk.Connect(ctx, servers, zopts)
	if err != nil {
		return nil, err
	}
	return zklock.New(zc, opts), nil
}
