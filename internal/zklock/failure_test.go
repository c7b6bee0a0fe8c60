package zklock_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/seckill-zk/seckill-zk/internal/zklock"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"

	"github.com/seckill-zk/seckill-zk/internal/zk"
)

func newProxy(t *testing.T) *e2e.Proxy { return e2e.NewProxy(t, e2e.ZooKeeper(t)[0]) }

// stateLog records a client's state changes.
type stateLog struct {
	mu     sync.Mutex
	states []zk.State
}

func (s *stateLog) add(st zk.State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.states = append(s.states, st)
}

func (s *stateLog) snapshot() []zk.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.states)
}

func (s *stateLog) has(want ...zk.State) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := 0
	for _, st := range s.states {
		if i < len(want) && st == want[i] {
			i++
		}
	}
	return i == len(want)
}

const shortSession = 4 * time.Second // ZooKeeper's default minimum (2 ticks of 2s)

func connectVia(t *testing.T, p *e2e.Proxy) (*zklock.Client, *stateLog) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	gate := &reconnectGate{} // see racegate_test.go
	c, err := dial(ctx, []string{p.Addr()}, zk.Options{
		Dial:           gate.dial,
		SessionTimeout: shortSession,
		Retry:          zk.ExponentialBackoffRetry{BaseSleep: 50 * time.Millisecond, MaxRetries: 10, MaxSleep: 500 * time.Millisecond},
	}, zklock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	log := &stateLog{}
	c.Listen(log.add)
	return c, log
}

func TestSessionExpiryWhileHoldingFiresLostAndFreesTheLock(t *testing.T) {
	ctx := testCtx(t)
	p := newProxy(t)
	c, states := connectVia(t, p)
	observer := connect(t)
	path := e2e.Path(t)

	m := zklock.NewMutex(c, path)
	if err := m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	sess, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node := m.Node()

	p.Cut()
	select {
	case <-m.Lost():
		// At the suspension, not a session timeout later when the client
		// gives the session up (by then the server may have handed the lock on).
		select {
		case <-sess.Done():
			t.Fatal("Lost fired with the session's loss, not at the suspension")
		default:
		}
	case <-time.After(2 * shortSession):
		t.Fatal("Lost did not fire when the connection dropped")
	}
	// The server expires the session: its node goes, and someone else gets the lock.
	waitFor(t, func() bool { ok, _, _ := observer.Conn().Exists(node); return !ok })
	other := zklock.NewMutex(observer, path)
	if err := other.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sess.Done():
	case <-time.After(2 * shortSession):
		t.Fatal("the session was not reported lost")
	}

	p.Restore()
	waitFor(t, func() bool { return states.has(zk.StateSuspended, zk.StateLost, zk.StateReconnected) })
	if err := m.Release(ctx); err != nil {
		t.Fatalf("release of a lost lock: %v", err)
	}
	release(t, other)
	again, err := c.Session(ctx)
	if err != nil || again.ID() == sess.ID() {
		t.Fatalf("after expiry: session %v, %v; want a new one", again, err)
	}
	if err := m.Acquire(ctx); err != nil {
		t.Fatalf("acquire on the new session: %v", err)
	}
	release(t, m)
}

func TestConnectionLossLeavesNoOrphans(t *testing.T) {
	ctx := testCtx(t)
	p := newProxy(t)
	c, states := connectVia(t, p)
	observer := connect(t)
	path := e2e.Path(t)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var acquired, failed int64
	var mu sync.Mutex
	for range 8 {
		wg.Go(func() {
			m := zklock.NewMutex(c, path)
			for {
				select {
				case <-stop:
					return
				default:
				}
				actx, cancel := context.WithTimeout(ctx, time.Second)
				err := m.Acquire(actx)
				cancel()
				mu.Lock()
				if err != nil {
					failed++
				} else {
					acquired++
				}
				mu.Unlock()
				if err == nil {
					time.Sleep(time.Millisecond)
					if err := m.Release(ctx); err != nil {
						t.Errorf("release: %v", err)
					}
				}
			}
		})
	}
	time.Sleep(300 * time.Millisecond)
	for range 3 { // drop the connection mid-traffic, shorter than the session timeout
		p.Cut()
		time.Sleep(300 * time.Millisecond)
		p.Restore()
		time.Sleep(500 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	t.Logf("%d acquisitions, %d failures across 3 connection drops", acquired, failed)
	if !states.has(zk.StateSuspended, zk.StateReconnected) {
		t.Fatalf("states %v: the drops were not seen", states.snapshot())
	}
	if acquired == 0 {
		t.Fatal("no acquisition succeeded")
	}
	// The client is still open: any node left now would be an orphan of a live session.
	waitFor(t, func() bool {
		kids, _, err := observer.Conn().Children(path)
		return err == nil && len(kids) == 0
	})
}

func TestCloseLeavesNoGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx := testCtx(t)
	ctxNoCleanup, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := dial(ctxNoCleanup, e2e.ZooKeeper(t), zk.Options{SessionTimeout: 10 * time.Second}, zklock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := e2e.Path(t)
	m := zklock.NewMutex(c, path+"/mutex")
	if err := m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	waiter := make(chan error, 1)
	go func() {
		short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		waiter <- zklock.NewMutex(c, path+"/mutex").Acquire(short)
	}()
	if err := <-waiter; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiter = %v", err)
	}
	count := zklock.NewSharedCount(c, path+"/count", 1)
	if err := count.Start(ctx); err != nil {
		t.Fatal(err)
	}
	latch := zklock.NewLeaderLatch(c, path+"/latch", "a")
	if err := latch.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := latch.Await(ctx); err != nil {
		t.Fatal(err)
	}
	sel := zklock.NewLeaderSelector(c, path+"/sel", "a", func(ctx context.Context) error { <-ctx.Done(); return nil })
	if err := sel.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, sel.HasLeadership)
	lease, err := zklock.NewSemaphoreV2(c, path+"/sem", 2).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// Close everything; the goroutines must be gone afterwards.
	sel.Close()
	if err := latch.Close(ctx); err != nil {
		t.Fatal(err)
	}
	count.Close()
	if err := m.Release(ctx); err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func TestStatesOfAReconnect(t *testing.T) {
	p := newProxy(t)
	c, states := connectVia(t, p)
	ctx := testCtx(t)
	sess, err := c.Session(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p.Cut()
	waitFor(t, func() bool { return states.has(zk.StateSuspended) })
	p.Restore()
	waitFor(t, func() bool { return states.has(zk.StateSuspended, zk.StateReconnected) })
	again, err := c.Session(ctx)
	if err != nil || again != sess {
		t.Fatalf("a short drop should keep the session: %v, %v", again, err)
	}
	select {
	case <-sess.Done():
		t.Fatal("session reported lost after a short drop")
	default:
	}
	if got := states.snapshot(); slices.Contains(got, zk.StateLost) {
		t.Fatalf("states %v: lost after a short drop", got)
	}
}

func TestLeaderLatchAndSelectorStepDownOnSuspension(t *testing.T) {
	ctx := testCtx(t)
	p := newProxy(t)
	c, _ := connectVia(t, p)
	path := e2e.Path(t)

	latch := zklock.NewLeaderLatch(c, path+"/latch", "via-proxy")
	if err := latch.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := latch.Await(ctx); err != nil {
		t.Fatal(err)
	}
	termEnded := make(chan error, 1)
	leading := make(chan struct{}, 1)
	sel := zklock.NewLeaderSelector(c, path+"/selector", "via-proxy", func(ctx context.Context) error {
		leading <- struct{}{}
		<-ctx.Done()
		termEnded <- ctx.Err()
		return nil
	})
	if err := sel.Start(); err != nil {
		t.Fatal(err)
	}
	defer sel.Close()
	e2e.Receive(t, leading, 10*time.Second, "the selector's term")

	p.Cut()
	waitFor(t, func() bool { return !latch.HasLeadership() })
	select {
	case <-termEnded:
	case <-time.After(10 * time.Second):
		t.Fatal("the selector's term was not canceled when the connection dropped")
	}
	p.Restore()
	if err := latch.Await(ctx); err != nil {
		t.Fatalf("no leadership again after reconnecting: %v", err)
	}
	if err := latch.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
