package zklock_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/seckill-zk/seckill-zk/internal/zklock"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"

	"github.com/seckill-zk/seckill-zk/internal/zk"
)

// Deterministic fault tests: a proxy that reads ZooKeeper's framing strikes
// at the one request each test is about, every run.

// connectShortThrough connects through p with a short session (shortSession),
// for tests that make the client lose it, and logs its states.
func connectShortThrough(t *testing.T, p *e2e.ZKProxy) (*zklock.Client, *stateLog) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := dial(ctx, []string{p.Addr()}, zk.Options{
		SessionTimeout: shortSession,
		Retry:          zk.ExponentialBackoffRetry{BaseSleep: 50 * time.Millisecond, MaxRetries: 10, MaxSleep: 500 * time.Millisecond},
		Dial:           (&reconnectGate{}).dial, // see racegate_test.go
	}, zklock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	states := &stateLog{}
	c.Listen(states.add)
	return c, states
}

// connectStallable connects through p with a 4s session and the default
// retry policy, for the election tests that stall its connection until the
// server expires the session.
func connectStallable(t *testing.T, p *e2e.ZKProxy) *zklock.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := dial(ctx, []string{p.Addr()}, zk.Options{SessionTimeout: 4 * time.Second, Dial: (&reconnectGate{}).dial}, zklock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// queueBecomes waits at most 10s for the children of dir to satisfy ok, and
// fails saying why otherwise.
func queueBecomes(t *testing.T, c *zklock.Client, dir string, ok func(kids []string) bool, why string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		kids := children(t, c, dir)
		if ok(kids) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has %v after 10s: %s", dir, kids, why)
		}
	}
}

// connectThrough connects through p, with a session long enough to outlive the
// reconnect the fault forces.
func connectThrough(t *testing.T, p *e2e.ZKProxy) *zklock.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c, err := dial(ctx, []string{p.Addr()}, zk.Options{
		SessionTimeout: 10 * time.Second,
		Retry:          zk.ExponentialBackoffRetry{BaseSleep: 50 * time.Millisecond, MaxRetries: 10},
		Dial:           (&reconnectGate{}).dial, // go-zookeeper's reconnect race: see racegate_test.go
	}, zklock.Options{})
	if err != nil {
		t.Fatalf("connect through the proxy: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

func awaitFault(t *testing.T, f *e2e.ZKFault, what string) {
	t.Helper()
	select {
	case <-f.Hit():
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: the fault never struck", what)
	}
}

// The answer to the lock node's create is lost: the connection is cut when
// it comes back. The protected create then looks for its node: one node,
// the lock acquired, nothing left after release. Two cases: the create
// succeeded (the parent existed), and the very first create, whose answer
// was "no parent" (the parents are made after it). Guards the lookup after a
// connection loss: a blind retry leaves the first node, an orphan of a live
// session, at the head of the queue, and every waiter behind it blocks
// until the session ends; and a lookup that treats a missing parent as a
// failure fails the first acquire.
func TestCreateAnswerLostFindsTheProtectedNode(t *testing.T) {
	for _, parentExists := range []bool{true, false} {
		t.Run(map[bool]string{true: "created", false: "no parent yet"}[parentExists], func(t *testing.T) {
			ctx := testCtx(t)
			p := e2e.NewZKProxy(t, e2e.ZooKeeper(t)[0])
			c, observer := connectThrough(t, p), connect(t)
			lockPath := e2e.Path(t) + "/lock"
			if parentExists {
				warm := zklock.NewMutex(observer, lockPath) // makes the parents
				if err := warm.Acquire(ctx); err != nil {
					t.Fatal(err)
				}
				release(t, warm)
			}
			fault := p.CutBeforeReply(func(op int32, path string) bool {
				return (op == e2e.ZKOpCreate || op == e2e.ZKOpCreate2) && strings.HasPrefix(path, lockPath+"/_c_")
			})
			m := zklock.NewMutex(c, lockPath)
			done := make(chan error, 1)
			go func() { done <- m.Acquire(ctx) }()
			awaitFault(t, fault, "the lock node's create")
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Acquire after its create's answer was lost: %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Acquire did not return within 30s of the lost answer")
			}
			kids := children(t, observer, lockPath)
			if len(kids) != 1 || !strings.HasSuffix(m.Node(), kids[0]) {
				t.Fatalf("queue %v, holder %s: want exactly the holder's node (a second one is an orphan)", kids, m.Node())
			}
			release(t, m)
			waitFor(t, func() bool { return len(children(t, observer, lockPath)) == 0 })
		})
	}
}

// The connection is lost while Release's delete is on the wire (the server
// deleted the node, the client never heard): the node is gone once the
// connection is back, and the same handle acquires again (CURATOR-678).
func TestConnectionLostDuringReleaseDelete(t *testing.T) {
	ctx := testCtx(t)
	p := e2e.NewZKProxy(t, e2e.ZooKeeper(t)[0])
	c, observer := connectThrough(t, p), connect(t)
	lockPath := e2e.Path(t) + "/lock"
	m := zklock.NewMutex(c, lockPath)
	if err := m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	fault := p.CutBeforeReply(func(op int32, path string) bool {
		return op == e2e.ZKOpDelete && strings.HasPrefix(path, lockPath+"/")
	})
	if err := m.Release(ctx); err != nil {
		t.Fatalf("Release through a lost connection: %v", err)
	}
	awaitFault(t, fault, "the release's delete")
	waitFor(t, func() bool { return len(children(t, observer, lockPath)) == 0 })
	if err := m.Acquire(ctx); err != nil {
		t.Fatalf("the same handle again: %v", err)
	}
	release(t, m)
	waitFor(t, func() bool { return len(children(t, observer, lockPath)) == 0 })
}

// A lease whose holder's session is expired on demand is freed: another
// client gets the only lease.
func TestSemaphoreLeaseOfAnExpiredSessionIsFreed(t *testing.T) {
	ctx := testCtx(t)
	p := e2e.NewZKProxy(t, e2e.ZooKeeper(t)[0])
	holder, other := connectThrough(t, p), connect(t)
	path := e2e.Path(t)
	lease, err := zklock.NewSemaphoreV2(holder, path, 1).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ExpireSessions(); err != nil {
		t.Fatal(err)
	}
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	next, err := zklock.NewSemaphoreV2(other, path, 1).Acquire(actx)
	if err != nil {
		t.Fatalf("the lease of an expired session was not freed: %v", err)
	}
	defer next.Release(ctx)
	waitFor(t, func() bool { ok, _, err := other.Conn().Exists(lease.Node()); return err == nil && !ok })
}

// leadership records when a latch gained and lost leadership.
type leadership struct {
	mu    sync.Mutex
	spans [][2]time.Time // [from, to); to is zero while leading
}

func (l *leadership) listener() zklock.LatchListener {
	return zklock.LatchListener{
		IsLeader: func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.spans = append(l.spans, [2]time.Time{time.Now()})
		},
		NotLeader: func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if n := len(l.spans); n > 0 && l.spans[n-1][1].IsZero() {
				l.spans[n-1][1] = time.Now()
			}
		},
	}
}

func (l *leadership) snapshot() [][2]time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([][2]time.Time(nil), l.spans...)
}

// endAt ends a span still open at t: the participant's session ended then.
func (l *leadership) endAt(t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.spans); n > 0 && l.spans[n-1][1].IsZero() {
		l.spans[n-1][1] = t
	}
}

// overlap finds a span of a and one of b that overlap (an open span lasts
// until now): two leaders at once.
func overlap(a, b [][2]time.Time) (x, y [2]time.Time, found bool) {
	end := func(s [2]time.Time) time.Time {
		if s[1].IsZero() {
			return time.Now().Add(time.Hour)
		}
		return s[1]
	}
	for _, x := range a {
		for _, y := range b {
			if x[0].Before(end(y)) && y[0].Before(end(x)) {
				return x, y, true
			}
		}
	}
	return x, y, false
}

// A leader whose connection stalls is suspended and drops its leadership
// at once, while it is still stalled (not when the session is found lost
// or the connection comes back); its session expires meanwhile and the other
// latch leads. The timeline of who led when never has two leaders.
func TestLeaderLatchNeverHasTwoLeadersAcrossAStall(t *testing.T) {
	ctx := testCtx(t)
	p := e2e.NewZKProxy(t, e2e.ZooKeeper(t)[0])
	stalled := connectStallable(t, p)
	path := e2e.Path(t)
	var a, b leadership
	la := zklock.NewLeaderLatch(stalled, path, "A")
	la.Listen(a.listener())
	if err := la.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer closeLatch(la)
	waitFor(t, la.HasLeadership)
	lb := zklock.NewLeaderLatch(connect(t), path, "B")
	lb.Listen(b.listener())
	if err := lb.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer closeLatch(lb)

	p.Stall()
	defer p.Resume()                                       // before the latches close, should the test fail while stalled
	waitFor(t, func() bool { return !la.HasLeadership() }) // while stalled, at the suspension
	for deadline := time.Now().Add(30 * time.Second); !lb.HasLeadership(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) { // B leads once A's session expired on the server
			t.Fatal("B did not lead within 30s of A's stall")
		}
	}
	p.Resume()
	time.Sleep(500 * time.Millisecond) // A reconnects, learns its session is gone, queues behind B

	spansA, spansB := a.snapshot(), b.snapshot()
	if len(spansA) == 0 || len(spansB) == 0 || spansA[0][1].IsZero() {
		t.Fatalf("timeline A %v, B %v: want A leading then stopping, B leading", spansA, spansB)
	}
	if x, y, found := overlap(spansA, spansB); found {
		t.Fatalf("A led %v–%v and B %v–%v: two leaders at once", x[0], x[1], y[0], y[1])
	}
	if la.HasLeadership() {
		t.Error("A leads again after reconnecting behind B")
	}
}

// closeLatch leaves the election, for at most 10s.
func closeLatch(l *zklock.LeaderLatch) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = l.Close(ctx)
}

// The client treats its session as lost after a whole session timeout
// without a connection (Curator's rule), but the server kept the session: a
// keeper holds it, as a new ensemble leader does when it gives every session
// a fresh timeout. When the connection comes back, go-zookeeper resumes that
// same session. The holder was told its lock was lost and let go, and a
// create whose answer never came was given up; neither node may outlive the
// loss, or the waiters behind it wait as long as the process lives. Guards
// the sweep of resume.go: without it the waiter stays behind the lost
// holder's node. The waiter whose create's answer was lost gives up either
// before the session is resumed (the sweep looks for its node: without the
// sweep's look-up of lost creates the node stays in its queue) or after it
// it (its look-up then finds the node in the resumed session, which
// deletes it at once, and the waiter, whose session was lost, lets it go
// too: each of the two suffices, so taking out one leaves this test green).
func TestNodesOfALostSessionDoNotOutliveItsResumption(t *testing.T) {
	for _, tt := range []struct {
		name        string
		giveUpFirst bool
	}{{"waiter gives up before the resumption", true}, {"waiter gives up after the resumption", false}} {
		t.Run(tt.name, func(t *testing.T) { nodesOfALostSessionAfterItsResumption(t, tt.giveUpFirst) })
	}
}

func nodesOfALostSessionAfterItsResumption(t *testing.T, giveUpFirst bool) {
	ctx := testCtx(t)
	p := e2e.NewZKProxy(t, e2e.ZooKeeper(t)[0])
	c, states := connectShortThrough(t, p)
	observer := connect(t)
	lockPath, otherPath := e2e.Path(t)+"/lock", e2e.Path(t)+"/other"

	m := zklock.NewMutex(c, lockPath)
	if err := m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	lost := m.Lost()
	blocker := zklock.NewMutex(observer, otherPath) // makes the second lock's queue wait
	if err := blocker.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	blockerKids := children(t, observer, otherPath)
	// A waiter of c on the second lock, whose create's answer is lost and
	// whose session is then lost before it could find its node. It gives up
	// (its context is cancelled) once the session is back.
	fault := p.CutBeforeReply(func(op int32, path string) bool {
		return (op == e2e.ZKOpCreate || op == e2e.ZKOpCreate2) && strings.HasPrefix(path, otherPath+"/_c_")
	})
	p.ThenRefuse(fault) // the client cannot reconnect: its session will be lost
	waiting := make(chan error, 1)
	wctx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	go func() { waiting <- zklock.NewMutex(c, otherPath).Acquire(wctx) }()
	awaitFault(t, fault, "the waiter's create")
	// The node the cut create made, in the session about to be lost.
	var lostCreate string
	queueBecomes(t, observer, otherPath, func(kids []string) bool {
		for _, k := range kids {
			if !slices.Contains(blockerKids, k) {
				lostCreate = k
			}
		}
		return lostCreate != ""
	}, "the cut create made no node")
	sessionID := c.Conn().SessionID()
	stop, err := p.KeepSessions()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	w := zklock.NewMutex(observer, lockPath)
	acquired := make(chan error, 1)
	go func() { acquired <- w.Acquire(ctx) }()
	select {
	case <-lost:
	case <-time.After(30 * time.Second):
		t.Fatal("the holder was not told its lock was lost within 30s of the cut")
	}
	waitFor(t, func() bool { return states.has(zk.StateLost) })
	if err := m.Release(ctx); err != nil {
		t.Logf("release after the loss: %v", err)
	}

	giveUpWaiter := func() {
		giveUp()
		select {
		case err := <-waiting:
			if err == nil {
				t.Fatal("the second lock's waiter acquired while the lock was held by another client")
			}
		case <-time.After(30 * time.Second):
			t.Fatal("the second lock's waiter did not return within 30s of giving up")
		}
	}
	if giveUpFirst {
		giveUpWaiter()
	}
	p.Restore()
	waitFor(t, func() bool { return states.has(zk.StateLost, zk.StateReconnected) })
	if got := c.Conn().SessionID(); got != sessionID {
		t.Fatalf("the client came back with session %#x, not %#x: the server did not keep the session, so this test proves nothing", got, sessionID)
	}
	select {
	case err := <-acquired:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("the waiter is still behind %v 20s after the session came back: the lost holder's node outlived the loss", children(t, observer, lockPath))
	}
	release(t, w)
	// The node the lost session made is gone once the session is resumed,
	// whether its waiter gave up before (the sweep looks for it) or still
	// waits (its create's answer comes in the resumed session, and the node
	// is deleted at once: the waiter queues again with a node of its own).
	queueBecomes(t, observer, otherPath, func(kids []string) bool { return !slices.Contains(kids, lostCreate) },
		"the node of the create whose answer was lost outlived the loss")
	if !giveUpFirst {
		giveUpWaiter()
	}
	release(t, blocker)
	waitFor(t, func() bool { return len(children(t, observer, lockPath)) == 0 })
	queueBecomes(t, observer, otherPath, func(kids []string) bool { return len(kids) == 0 }, "its only other node left: the node of the create whose answer was lost outlived the loss")
	if err := m.Acquire(ctx); err != nil { // the same handle, in the resumed session
		t.Fatalf("acquire again after the session came back: %v", err)
	}
	release(t, m)
}

// A latch whose node is first in line but belongs to another session never
// leads (CURATOR-696: two leaders). Latch A queues behind B; its node is
// then replaced by a node of the same name owned by another session (as a
// node of A's old session, or anyone's, can sit under A's name). When B
// leaves, A finds "its" node first: it must not lead, and leads only once
// that node is gone and A has queued again with a node of its own. Guards
// the ephemeralOwner check of latch.go; without it A leads as soon as B
// leaves.
func TestLeaderLatchDoesNotLeadWithAnotherSessionsNode(t *testing.T) {
	ctx := testCtx(t)
	p := e2e.NewZKProxy(t, e2e.ZooKeeper(t)[0])
	observer := connect(t)
	path := e2e.Path(t)
	lb := zklock.NewLeaderLatch(connect(t), path, "B")
	if err := lb.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer closeLatch(lb)
	waitFor(t, lb.HasLeadership)
	var a leadership
	la := zklock.NewLeaderLatch(connectThrough(t, p), path, "A")
	la.Listen(a.listener())
	if err := la.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer closeLatch(la)

	var nodeA string
	for _, k := range children(t, observer, path) {
		data, _, err := observer.Conn().Get(path + "/" + k)
		if err != nil {
			t.Fatal(err)
		}
		if string(data) == "A" {
			nodeA = path + "/" + k
		}
	}
	if nodeA == "" {
		t.Fatalf("no node of A in %v", children(t, observer, path))
	}
	// A watches B's node, not its own: it does not see the swap.
	if err := observer.Conn().Delete(nodeA, -1); err != nil {
		t.Fatal(err)
	}
	if _, err := observer.Conn().Create(nodeA, []byte("A"), gozk.FlagEphemeral, gozk.WorldACL(gozk.PermAll)); err != nil {
		t.Fatal(err)
	}
	checked := p.NoticeReply(func(op int32, p string) bool { return op == e2e.ZKOpGetData && p == nodeA })
	closeLatch(lb)
	awaitFault(t, checked, "A's read of the first node after B left")
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if la.HasLeadership() {
			t.Fatal("A leads while the first node, under its name, belongs to another session")
		}
	}
	swappedOut := time.Now()
	if err := observer.Conn().Delete(nodeA, -1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, la.HasLeadership) // A queues again with a node of its own, alone: it leads
	if spans := a.snapshot(); len(spans) == 0 || spans[0][0].Before(swappedOut) {
		t.Fatalf("A led %v, before the other session's node left at %v", spans, swappedOut)
	}
}

// The answer to the lock node's create is held back until the caller has
// given up (its context ended): Acquire returns at once, and when the
// answer comes in, the node it names, which nobody will use, is deleted.
// Guards the late-answer handler of createProtected: without it the node,
// of a live session, blocks the queue until the session ends.
func TestCreateAnsweredAfterTheCallerGaveUpLeavesNoNode(t *testing.T) {
	ctx := testCtx(t)
	p := e2e.NewZKProxy(t, e2e.ZooKeeper(t)[0])
	c, observer := connectThrough(t, p), connect(t)
	lockPath := e2e.Path(t) + "/lock"
	warm := zklock.NewMutex(observer, lockPath) // makes the parents
	if err := warm.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	release(t, warm)
	held := p.HoldReply(func(op int32, path string) bool {
		return (op == e2e.ZKOpCreate || op == e2e.ZKOpCreate2) && strings.HasPrefix(path, lockPath+"/_c_")
	})
	actx, giveUp := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- zklock.NewMutex(c, lockPath).Acquire(actx) }()
	awaitFault(t, held, "the lock node's create")
	if kids := children(t, observer, lockPath); len(kids) != 1 {
		t.Fatalf("queue %v: want the node whose answer is held", kids)
	}
	giveUp()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Acquire succeeded after its context ended")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Acquire did not return within 10s of its context's end")
	}
	held.Release()
	queueBecomes(t, observer, lockPath, func(kids []string) bool { return len(kids) == 0 }, "the create's late answer came: the node nobody waits on was left behind")
	if err := warm.Acquire(ctx); err != nil { // the queue works
		t.Fatal(err)
	}
	release(t, warm)
}

// The answer to a lease node's create is lost (CURATOR-315/462: orphan lease
// nodes after a connection loss during acquire): the lease is found again
// by its protected name, one node, none left after Release. Fails when the
// retry creates blindly (an orphan lease counts against the limit for the
// rest of the session).
func TestSemaphoreLeaseCreateAnswerLost(t *testing.T) {
	ctx := testCtx(t)
	p := e2e.NewZKProxy(t, e2e.ZooKeeper(t)[0])
	c, observer := connectThrough(t, p), connect(t)
	semPath := e2e.Path(t)
	warm, err := zklock.NewSemaphoreV2(observer, semPath, 2).Acquire(ctx) // makes the parents: the create succeeds
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Release(ctx); err != nil {
		t.Fatal(err)
	}
	fault := p.CutBeforeReply(func(op int32, path string) bool {
		return (op == e2e.ZKOpCreate || op == e2e.ZKOpCreate2) && strings.HasPrefix(path, semPath+"/leases/_c_")
	})
	lease, err := zklock.NewSemaphoreV2(c, semPath, 2).Acquire(ctx)
	if err != nil {
		t.Fatalf("acquire through a lost create answer: %v", err)
	}
	awaitFault(t, fault, "the lease node's create")
	if kids := children(t, observer, semPath+"/leases"); len(kids) != 1 || !strings.HasSuffix(lease.Node(), kids[0]) {
		t.Fatalf("leases %v, ours %s: want exactly ours (another is an orphan lease)", kids, lease.Node())
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(children(t, observer, semPath+"/leases")) == 0 })
}

// AcquireN gives back the leases it took when it fails part-way: two of
// three are taken, the third waits (another client holds a lease of the
// three) until the caller gives up. Without the give-back the two stay out
// for the rest of the session.
func TestSemaphoreAcquireNGivesBackWhatItTookOnFailure(t *testing.T) {
	ctx := testCtx(t)
	c, other := connect(t), connect(t)
	semPath := e2e.Path(t)
	held, err := zklock.NewSemaphoreV2(other, semPath, 3).Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	actx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	done := make(chan error, 1)
	go func() {
		_, err := zklock.NewSemaphoreV2(c, semPath, 3).AcquireN(actx, 3)
		done <- err
	}()
	// The other's lease, two taken, the third waiting.
	waitFor(t, func() bool { return len(children(t, other, semPath+"/leases")) == 4 })
	giveUp()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("AcquireN got 3 leases while only 2 were free")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("AcquireN did not return within 10s of its context's end")
	}
	queueBecomes(t, other, semPath+"/leases", func(kids []string) bool { return len(kids) == 1 }, "AcquireN failed: want only the other client's lease")
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Never two holders while a lost holder's session lingers on the server
// (CURATOR-604, -206): the holder is cut off, the server keeps its session
// (a keeper holds it) and so its node. The holder is told at once that its
// lock is lost; the waiter gets the lock only when the server has expired
// the session and deleted the node, after that. When the holder's client
// comes back (in a new session), the same handle queues behind the waiter.
// Fails when the hold's watcher ignores the suspension and the session's
// loss (the cut-off holder is then never told).
func TestNeverTwoHoldersWhileALostSessionLingers(t *testing.T) {
	ctx := testCtx(t)
	p := e2e.NewZKProxy(t, e2e.ZooKeeper(t)[0])
	c, states := connectShortThrough(t, p)
	lockPath := e2e.Path(t)
	h := zklock.NewMutex(c, lockPath)
	if err := h.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	lost := h.Lost()
	w := zklock.NewMutex(connect(t), lockPath)
	acquired := make(chan time.Time, 1)
	go func() {
		if err := w.Acquire(ctx); err != nil {
			t.Errorf("the waiter: %v", err)
			close(acquired)
			return
		}
		acquired <- time.Now()
	}()
	waitFor(t, func() bool { return len(children(t, connect(t), lockPath)) == 2 })

	p.Cut()
	stop, err := p.KeepSessions()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var lostAt time.Time
	select {
	case <-lost:
		lostAt = time.Now()
	case <-time.After(30 * time.Second):
		t.Fatal("the holder was not told within 30s of the cut")
	}
	waitFor(t, func() bool { return states.has(zk.StateLost) }) // a whole session timeout later
	select {
	case <-acquired:
		t.Fatal("the waiter acquired while the holder's session, and node, were still on the server")
	case <-time.After(time.Second):
	}
	stop() // the server expires the session now, and deletes the node
	var acquiredAt time.Time
	select {
	case acquiredAt = <-acquired:
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter did not acquire within 30s of the lingering session's end")
	}
	if !lostAt.Before(acquiredAt) {
		t.Fatalf("the holder was told at %v, after the waiter acquired at %v", lostAt, acquiredAt)
	}
	if err := h.Release(ctx); err != nil {
		t.Logf("release after the loss: %v", err)
	}
	p.Restore()
	again := make(chan error, 1)
	go func() { again <- h.Acquire(ctx) }()
	select {
	case err := <-again:
		t.Fatalf("the old holder acquired (%v) while the waiter holds", err)
	case <-time.After(500 * time.Millisecond):
	}
	release(t, w)
	select {
	case err := <-again:
		if err != nil {
			t.Fatalf("the old holder's handle, in its new session: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the old holder's handle did not acquire within 30s of the waiter's release")
	}
	release(t, h)
}

// A selector whose connection stalls has its term's context ended at the
// suspension, while it is still cut off, so before the other selector's
// term can begin (which waits for the server to expire the stalled
// session). The timeline of terms never overlaps. Fails when the term
// follows only the session's loss, which the stalled client declares a
// whole session timeout after the suspension: later than the server's
// expiry.
func TestLeaderSelectorTermEndsBeforeAnotherBegins(t *testing.T) {
	p := e2e.NewZKProxy(t, e2e.ZooKeeper(t)[0])
	stalled := connectStallable(t, p)
	type span struct {
		who      string
		from, to time.Time
	}
	var mu sync.Mutex
	var spans []span
	term := func(who string, started chan<- struct{}) func(context.Context) error {
		return func(ctx context.Context) error {
			mu.Lock()
			i := len(spans)
			spans = append(spans, span{who: who, from: time.Now()})
			mu.Unlock()
			started <- struct{}{}
			<-ctx.Done()
			mu.Lock()
			spans[i].to = time.Now()
			mu.Unlock()
			return nil
		}
	}
	path := e2e.Path(t)
	aStarted, bStarted := make(chan struct{}, 4), make(chan struct{}, 4)
	a := zklock.NewLeaderSelector(stalled, path, "A", term("A", aStarted))
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	e2e.Receive(t, aStarted, 10*time.Second, "A's term")
	b := zklock.NewLeaderSelector(connect(t), path, "B", term("B", bStarted))
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	p.Stall()
	defer p.Resume() // before the selectors close, should the test fail while stalled
	e2e.Receive(t, bStarted, 30*time.Second, "B's term after A's stall")
	p.Resume()
	mu.Lock()
	defer mu.Unlock()
	if len(spans) != 2 || spans[0].who != "A" || spans[1].who != "B" {
		t.Fatalf("terms %+v: want A's, then B's", spans)
	}
	if spans[0].to.IsZero() || !spans[0].to.Before(spans[1].from) {
		t.Fatalf("A's term ran %v–%v, B's began %v: two leaders at once", spans[0].from, spans[0].to, spans[1].from)
	}
}

// The server reaps an empty container on its own schedule, so a recipe's
// parent can vanish between the create that made it and the next create
// under it. Here it is deleted while the answer to its create is held back:
// the lock's parent (the lock node's create then finds no parent), its
// grandparent (the parent's create finds none), and a shared count's parent.
// The recipe makes them again and goes on. Fails when the parents are made
// once, and when a walk that finds an ancestor gone is not started again.
func TestParentReapedBeforeTheNodeIsCreated(t *testing.T) {
	type recipe struct {
		name, gone string // gone: relative to the test's base
		use        func(ctx context.Context, c, observer *zklock.Client, base string) error
	}
	lock := func(ctx context.Context, c, observer *zklock.Client, base string) error {
		m := zklock.NewMutex(c, base+"/a/lock")
		if err := m.Acquire(ctx); err != nil {
			return err
		}
		if kids := children(t, observer, base+"/a/lock"); len(kids) != 1 {
			t.Errorf("queue %v: want the holder's node", kids)
		}
		return m.Release(ctx)
	}
	count := func(ctx context.Context, c, _ *zklock.Client, base string) error {
		n := zklock.NewSharedCount(c, base+"/a/count", 7)
		if err := n.Start(ctx); err != nil {
			return err
		}
		defer n.Close()
		if got := n.Count(); got != 7 {
			t.Errorf("count %d, want the seed 7", got)
		}
		return nil
	}
	for _, r := range []recipe{{"lock parent", "/a/lock", lock}, {"lock grandparent", "/a", lock}, {"count parent", "/a", count}} {
		t.Run(r.name, func(t *testing.T) {
			ctx := testCtx(t)
			p := e2e.NewZKProxy(t, e2e.ZooKeeper(t)[0])
			c, observer := connectThrough(t, p), connect(t)
			base := e2e.Path(t)
			held := p.HoldReply(func(op int32, p string) bool { return op == e2e.ZKOpCreateContainer && p == base+r.gone })
			done := make(chan error, 1)
			go func() { done <- r.use(ctx, c, observer, base) }()
			awaitFault(t, held, "the create of "+r.gone)
			if err := observer.Conn().Delete(base+r.gone, -1); err != nil { // as the reaper would
				t.Fatal(err)
			}
			held.Release()
			if err := e2e.Receive(t, done, 10*time.Second, r.name); err != nil {
				t.Fatalf("after %s vanished: %v", r.gone, err)
			}
		})
	}
}
