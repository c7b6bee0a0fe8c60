package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/zklock"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

func TestReadWriteLock(t *testing.T) {
	ctx := testCtx(t)
	a, b := connect(t), connect(t)
	path := e2e.Path(t)

	t.Run("readers share", func(t *testing.T) {
		r1 := zklock.NewReadWriteLock(a, path).ReadLock()
		r2 := zklock.NewReadWriteLock(b, path).ReadLock()
		if err := r1.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		if err := r2.TryAcquire(ctx); err != nil {
			t.Fatalf("second reader: %v, want the lock shared", err)
		}
		release(t, r1, r2)
	})
	t.Run("a writer excludes readers and writers", func(t *testing.T) {
		w := zklock.NewReadWriteLock(a, path).WriteLock()
		if err := w.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		other := zklock.NewReadWriteLock(b, path)
		if err := other.ReadLock().TryAcquire(ctx); !errors.Is(err, zklock.ErrLocked) {
			t.Fatalf("reader while writing: %v, want ErrLocked", err)
		}
		if err := other.WriteLock().TryAcquire(ctx); !errors.Is(err, zklock.ErrLocked) {
			t.Fatalf("writer while writing: %v, want ErrLocked", err)
		}
		release(t, w)
	})
	t.Run("a reader waits for the writer ahead and a writer for the readers", func(t *testing.T) {
		r := zklock.NewReadWriteLock(a, path).ReadLock()
		if err := r.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		w := zklock.NewReadWriteLock(b, path).WriteLock()
		got := make(chan error, 1)
		go func() { got <- w.Acquire(ctx) }()
		waitFor(t, func() bool { return len(children(t, a, path)) == 2 })
		// A new reader queues behind the waiting writer: fair, no writer starvation.
		if err := zklock.NewReadWriteLock(a, path).ReadLock().TryAcquire(ctx); !errors.Is(err, zklock.ErrLocked) {
			t.Fatalf("reader behind a waiting writer: %v, want ErrLocked", err)
		}
		select {
		case err := <-got:
			t.Fatalf("writer got the lock while a reader held it (%v)", err)
		case <-time.After(200 * time.Millisecond):
		}
		release(t, r)
		if err := e2e.Receive(t, got, 10*time.Second, "the writer after the reader"); err != nil {
			t.Fatal(err)
		}
		release(t, w)
	})
	// notYet fails if ch delivers within a moment: its acquirer must wait.
	notYet := func(t *testing.T, ch <-chan error, who string) {
		t.Helper()
		select {
		case err := <-ch:
			t.Fatalf("%s got the lock (%v) too early", who, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
	acquire := func(m *zklock.Mutex) <-chan error {
		ch := make(chan error, 1)
		go func() { ch <- m.Acquire(ctx) }()
		return ch
	}
	t.Run("a reader behind a waiting writer and a reader waits for the writer", func(t *testing.T) {
		r1 := zklock.NewReadWriteLock(a, path).ReadLock()
		if err := r1.Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		w := zklock.NewReadWriteLock(b, path).WriteLock()
		wGot := acquire(w)
		waitFor(t, func() bool { return len(children(t, a, path)) == 2 })
		r2 := zklock.NewReadWriteLock(a, path).ReadLock() // queue: r1 (holds), w, r2
		r2Got := acquire(r2)
		waitFor(t, func() bool { return len(children(t, a, path)) == 3 })
		notYet(t, r2Got, "the reader behind the writer")
		release(t, r1)
		if err := e2e.Receive(t, wGot, 10*time.Second, "the writer"); err != nil {
			t.Fatal(err)
		}
		notYet(t, r2Got, "the reader behind the holding writer")
		release(t, w)
		if err := e2e.Receive(t, r2Got, 10*time.Second, "the reader after the writer"); err != nil {
			t.Fatal(err)
		}
		release(t, r2)
	})
	// The writer watches the reader just ahead of it, which holds without
	// having been first: when that reader leaves, the hand-off shortcut must
	// not drop the reader ahead of it too (it may only when the node that
	// left had been first). Fails when a holding node is always marked as
	// having been first.
	t.Run("two readers and a writer of one session", func(t *testing.T) {
		r1, r2 := zklock.NewReadWriteLock(a, path).ReadLock(), zklock.NewReadWriteLock(a, path).ReadLock()
		for _, r := range []*zklock.Mutex{r1, r2} {
			if err := r.Acquire(ctx); err != nil {
				t.Fatal(err)
			}
		}
		w := zklock.NewReadWriteLock(a, path).WriteLock()
		wGot := acquire(w)
		waitFor(t, func() bool { return len(children(t, a, path)) == 3 })
		release(t, r2)
		notYet(t, wGot, "the writer while the first reader holds")
		release(t, r1)
		if err := e2e.Receive(t, wGot, 10*time.Second, "the writer after both readers"); err != nil {
			t.Fatal(err)
		}
		release(t, w)
	})
	t.Run("downgrade works, upgrade is refused", func(t *testing.T) {
		l := zklock.NewReadWriteLock(a, path)
		if err := l.WriteLock().Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		if err := l.ReadLock().TryAcquire(ctx); err != nil {
			t.Fatalf("read while holding write: %v", err)
		}
		release(t, l.WriteLock())
		if !l.ReadLock().IsHeld() {
			t.Fatal("read lock lost by the downgrade")
		}
		if err := l.WriteLock().Acquire(ctx); !errors.Is(err, zklock.ErrUpgrade) {
			t.Fatalf("write while holding read = %v, want ErrUpgrade", err)
		}
		release(t, l.ReadLock())
	})
	t.Run("node names follow Curator", func(t *testing.T) {
		l := zklock.NewReadWriteLock(a, path)
		if err := l.ReadLock().Acquire(ctx); err != nil {
			t.Fatal(err)
		}
		name := l.ReadLock().Node()[len(path)+1:]
		if !strings.HasPrefix(name, "_c_") || name[40:48] != "__READ__" || len(name) != 58 {
			t.Fatalf("reader node %q, want _c_<uuid>-__READ__<seq>", name)
		}
		release(t, l.ReadLock())
	})
	if kids := children(t, a, path); len(kids) != 0 {
		t.Fatalf("nodes left: %v", kids)
	}
}

func TestSemaphoreNeverExceedsItsLeases(t *testing.T) {
	ctx := testCtx(t)
	clients := []*zklock.Client{connect(t), connect(t)}
	path := e2e.Path(t)
	const leases, workers = 3, 9
	var inside, maxInside atomic.Int32
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			sem := zklock.NewSemaphoreV2(clients[w%2], path, leases)
			for range 3 {
				l, err := sem.Acquire(ctx)
				if err != nil {
					t.Errorf("acquire: %v", err)
					return
				}
				n := inside.Add(1)
				for {
					m := maxInside.Load()
					if n <= m || maxInside.CompareAndSwap(m, n) {
						break
					}
				}
				time.Sleep(5 * time.Millisecond)
				inside.Add(-1)
				if err := l.Release(ctx); err != nil {
					t.Errorf("release: %v", err)
				}
			}
		})
	}
	wg.Wait()
	if m := maxInside.Load(); m > leases {
		t.Fatalf("%d leases out at once, want at most %d", m, leases)
	}
	if kids := children(t, clients[0], path+"/leases"); len(kids) != 0 {
		t.Fatalf("lease nodes left: %v", kids)
	}
}

// Exactly maxLeases leases are granted: with five acquirers of three leases
// (on two clients), three get one without anyone letting go, the other two
// wait, and each lease returned lets exactly one more in.
func TestSemaphoreGrantsExactlyItsLeases(t *testing.T) {
	ctx := testCtx(t)
	clients := []*zklock.Client{connect(t), connect(t)}
	path := e2e.Path(t)
	const leases, acquirers = 3, 5
	got := make(chan *zklock.Lease, acquirers)
	for i := range acquirers {
		go func() {
			l, err := zklock.NewSemaphoreV2(clients[i%2], path, leases).Acquire(ctx)
			if err != nil {
				t.Errorf("acquire: %v", err)
				return
			}
			got <- l
		}()
	}
	var out []*zklock.Lease
	for range leases {
		out = append(out, e2e.Receive(t, got, 10*time.Second, "one of the first leases"))
	}
	for range acquirers - leases {
		select {
		case <-got:
			t.Fatalf("a lease beyond the %d while all of them are out", leases)
		case <-time.After(300 * time.Millisecond):
		}
		if err := out[0].Release(ctx); err != nil {
			t.Fatal(err)
		}
		out = append(out[1:], e2e.Receive(t, got, 10*time.Second, "the lease given back"))
	}
	for _, l := range out {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { return len(children(t, clients[0], path+"/leases")) == 0 })
}

func TestSemaphoreTimesOutWithoutALeaseLeftBehind(t *testing.T) {
	ctx := testCtx(t)
	c := connect(t)
	path := e2e.Path(t)
	sem := zklock.NewSemaphoreV2(c, path, 1)
	l, err := sem.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := sem.Acquire(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second acquire = %v, want deadline exceeded", err)
	}
	waitFor(t, func() bool { return len(children(t, c, path+"/leases")) == 1 })
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestSemaphoreFollowsSharedCount(t *testing.T) {
	ctx := testCtx(t)
	c := connect(t)
	path := e2e.Path(t)
	count := zklock.NewSharedCount(c, path+"/count", 1)
	if err := count.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer count.Close()
	sem := zklock.NewSemaphoreV2WithCount(c, path+"/sem", count)
	first, err := sem.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	go func() {
		l, err := sem.Acquire(ctx)
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("second lease granted with max 1 (%v)", err)
	case <-time.After(200 * time.Millisecond):
	}
	// Another client raises the count: the waiter must notice and get its lease.
	if err := zklock.NewSharedCount(connect(t), path+"/count", 0).SetCount(ctx, 2); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("raising the shared count did not let the waiter in")
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestSemaphoreMutexIsNotReentrant(t *testing.T) {
	ctx := testCtx(t)
	c := connect(t)
	path := e2e.Path(t)
	m := zklock.NewSemaphoreMutex(c, path)
	if err := m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Acquire(ctx); !errors.Is(err, zklock.ErrNotReentrant) {
		t.Fatalf("second acquire = %v, want ErrNotReentrant", err)
	}
	other := zklock.NewSemaphoreMutex(connect(t), path)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := other.Acquire(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("other handle = %v, want to wait", err)
	}
	if err := m.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Release(ctx); !errors.Is(err, zklock.ErrNotHeld) {
		t.Fatalf("second release = %v, want ErrNotHeld", err)
	}
	if err := other.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestSharedCount(t *testing.T) {
	ctx := testCtx(t)
	path := e2e.Path(t) + "/count"
	a := zklock.NewSharedCount(connect(t), path, 7)
	b := zklock.NewSharedCount(connect(t), path, 99) // the seed of the first creator wins
	for _, sc := range []*zklock.SharedCount{a, b} {
		if err := sc.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer sc.Close()
	}
	if a.Count() != 7 || b.Count() != 7 {
		t.Fatalf("counts %d, %d; want the first seed, 7", a.Count(), b.Count())
	}
	heard := make(chan int32, 10)
	b.Listen(func(v int32) { heard <- v })

	stale := a.Versioned()
	if ok, err := a.TrySetCount(ctx, stale, 8); !ok || err != nil {
		t.Fatalf("first CAS = %v, %v; want success", ok, err)
	}
	if ok, err := b.TrySetCount(ctx, stale, 100); ok || err != nil {
		t.Fatalf("CAS on a stale version = %v, %v; want refused", ok, err)
	}
	select {
	case v := <-heard:
		if v != 8 {
			t.Fatalf("listener heard %d, want 8", v)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the other client did not hear the change")
	}
	waitFor(t, func() bool { return b.Count() == 8 })
}

func TestLeaderLatchElectsExactlyOne(t *testing.T) {
	ctx := testCtx(t)
	path := e2e.Path(t)
	const n = 4
	clients := make([]*zklock.Client, n)
	latches := make([]*zklock.LeaderLatch, n)
	var changes atomic.Int32
	var timeline [n]leadership // who led when: never two at once
	for i := range n {
		clients[i] = connect(t)
		latches[i] = zklock.NewLeaderLatch(clients[i], path, fmt.Sprintf("p%d", i))
		latches[i].Listen(zklock.LatchListener{IsLeader: func() { changes.Add(1) }})
		latches[i].Listen(timeline[i].listener())
		if err := latches[i].Start(ctx); err != nil {
			t.Fatal(err)
		}
	}
	leader := func() int {
		t.Helper()
		var found int
		waitFor(t, func() bool {
			count := 0
			for i, l := range latches {
				if l != nil && l.HasLeadership() {
					count++
					found = i
				}
			}
			return count == 1
		})
		return found
	}
	first := leader()
	if err := latches[first].Await(ctx); err != nil {
		t.Fatal(err)
	}
	ids, err := latches[0].Participants(ctx)
	if err != nil || len(ids) != n || ids[0] != latches[first].ID() {
		t.Fatalf("participants %v, %v; want %d with p%d first", ids, err, n, first)
	}
	// The leader's session ends: a new leader within the session timeout.
	// Its leadership ends when it closes: another latch may lead as soon as
	// Close has ended the session, before Close returns.
	timeline[first].endAt(time.Now())
	clients[first].Close()
	latches[first] = nil
	start := time.Now()
	second := leader()
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("new leader after %v, want within the 10s session timeout", d)
	}
	// A latch that closes hands over too.
	if err := latches[second].Close(ctx); err != nil {
		t.Fatal(err)
	}
	if latches[second].HasLeadership() {
		t.Fatal("leadership kept after Close")
	}
	latches[second] = nil
	third := leader()
	for _, l := range latches {
		if l != nil && l != latches[third] {
			short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			if err := l.Await(short); !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("a follower's Await = %v, want to block", err)
			}
			cancel()
		}
	}
	if got := changes.Load(); got != 3 {
		t.Fatalf("%d isLeader notifications, want 3 (one per leader)", got)
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			if x, y, found := overlap(timeline[i].snapshot(), timeline[j].snapshot()); found {
				t.Fatalf("p%d led %v–%v and p%d %v–%v: two leaders at once", i, x[0], x[1], j, y[0], y[1])
			}
		}
	}
}

func TestLeaderSelectorRequeues(t *testing.T) {
	path := e2e.Path(t)
	var mu sync.Mutex
	var terms []string
	var leading atomic.Int32
	selectors := make([]*zklock.LeaderSelector, 3)
	for i := range selectors {
		id := fmt.Sprintf("s%d", i)
		selectors[i] = zklock.NewLeaderSelector(connect(t), path, id, func(ctx context.Context) error {
			if n := leading.Add(1); n != 1 {
				t.Errorf("%d leaders at once", n)
			}
			defer leading.Add(-1)
			mu.Lock()
			terms = append(terms, id)
			mu.Unlock()
			select {
			case <-time.After(20 * time.Millisecond):
			case <-ctx.Done():
			}
			return nil
		})
		selectors[i].AutoRequeue()
	}
	for _, s := range selectors {
		if err := s.Start(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(terms) >= 9 })
	for _, s := range selectors {
		s.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	seen := map[string]int{}
	for _, id := range terms {
		seen[id]++
	}
	if len(seen) != 3 {
		t.Fatalf("terms %v: with auto-requeue every participant should lead in turn", terms)
	}
	if kids := children(t, connect(t), path); len(kids) != 0 {
		t.Fatalf("nodes left after Close: %v", kids)
	}
}

func TestLeaderSelectorInterruptAndRequeue(t *testing.T) {
	ctx := testCtx(t)
	started := make(chan struct{}, 4)
	ended := make(chan error, 4)
	s := zklock.NewLeaderSelector(connect(t), e2e.Path(t), "only", func(ctx context.Context) error {
		started <- struct{}{}
		<-ctx.Done()
		ended <- ctx.Err()
		return ctx.Err()
	})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e2e.Receive(t, started, 10*time.Second, "the term")
	if !s.HasLeadership() {
		t.Fatal("not leading during the term")
	}
	s.Interrupt()
	if err := e2e.Receive(t, ended, 10*time.Second, "the interrupted term's end"); !errors.Is(err, context.Canceled) {
		t.Fatalf("term ended with %v", err)
	}
	waitFor(t, func() bool { return !s.HasLeadership() })
	select {
	case <-started:
		t.Fatal("requeued without AutoRequeue")
	case <-time.After(200 * time.Millisecond):
	}
	if !s.Requeue() {
		t.Fatal("Requeue refused")
	}
	select {
	case <-started:
	case <-ctx.Done():
		t.Fatal("no new term after Requeue")
	}
}

func TestMutexRevocation(t *testing.T) {
	ctx := testCtx(t)
	c := connect(t)
	path := e2e.Path(t)
	holder := zklock.NewMutex(c, path)
	revoked := make(chan struct{}, 1)
	holder.MakeRevocable(func() {
		revoked <- struct{}{}
		if err := holder.Release(context.Background()); err != nil {
			t.Errorf("release on revoke: %v", err)
		}
	})
	if err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if data, _, err := c.Conn().Get(holder.Node()); err != nil || len(data) != 0 {
		t.Fatalf("revocable node data %q, %v; want empty as in Curator", data, err)
	}
	other := connect(t)
	nodes, err := zklock.NewMutex(other, path).ParticipantNodes(ctx)
	if err != nil || len(nodes) != 1 {
		t.Fatalf("participants %v, %v", nodes, err)
	}
	if err := zklock.AttemptRevoke(ctx, other, nodes[0]); err != nil {
		t.Fatal(err)
	}
	select {
	case <-revoked:
	case <-time.After(10 * time.Second):
		t.Fatal("the holder did not hear the revocation")
	}
	m := zklock.NewMutex(other, path)
	if err := m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	release(t, m)
}

func release(t *testing.T, ms ...*zklock.Mutex) {
	t.Helper()
	for _, m := range ms {
		if err := m.Release(context.Background()); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
}

// A lease, like a Mutex's hold, reports its loss: a SemaphoreMutex that
// holds nothing is lost already; a held one is not, until its lease's node
// is deleted by someone else; then Lost closes, and Release still returns
// it.
func TestALeaseIsLostWhenItsNodeGoes(t *testing.T) {
	ctx := testCtx(t)
	c := connect(t)
	path := e2e.Path(t)
	m := zklock.NewSemaphoreMutex(c, path)
	select {
	case <-m.Lost():
	default:
		t.Fatal("Lost of a semaphore mutex that holds nothing is open")
	}
	if err := m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	lost := m.Lost()
	if tok, err := m.Token(ctx); err != nil || tok <= 0 {
		t.Fatalf("token %d, %v: want a positive token", tok, err)
	}
	select {
	case <-lost:
		t.Fatal("the lease is lost while its node is there")
	case <-time.After(200 * time.Millisecond):
	}
	kids := children(t, c, path+"/leases")
	if len(kids) != 1 {
		t.Fatalf("lease nodes %v, want one", kids)
	}
	if err := connect(t).Conn().Delete(path+"/leases/"+kids[0], -1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-lost:
	case <-time.After(10 * time.Second):
		t.Fatal("the lease was not lost within 10 s of its node's deletion")
	}
	if err := m.Release(ctx); err != nil {
		t.Fatalf("release of a lost lease: %v", err)
	}
}
