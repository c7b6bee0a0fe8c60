package zklock_test

import (
	"context"
	"errors"
	"path"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/zk"
	"github.com/seckill-zk/seckill-zk/internal/zklock"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// base is an arrival time for the tests' participants: base(n) is n ms
// after a fixed instant.
func base(n int) time.Time {
	return time.Unix(1_800_000_000, 0).Add(time.Duration(n) * time.Millisecond)
}

// holding returns a participant on c that arrived at base(at) and holds
// the lock at lockPath.
func holding(t *testing.T, c *zklock.Client, lockPath string, at int) *zklock.ArrivalMutex {
	t.Helper()
	m := zklock.NewArrivalMutex(c, lockPath, base(at))
	if err := m.Acquire(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return m
}

// whenHeld starts a goroutine (in wg) that acquires m, runs held and
// releases m.
func whenHeld(t *testing.T, ctx context.Context, wg *sync.WaitGroup, m *zklock.ArrivalMutex, held func()) {
	wg.Go(func() {
		if err := m.Acquire(ctx); err != nil {
			t.Error(err)
			return
		}
		held()
		if err := m.Release(ctx); err != nil {
			t.Error(err)
		}
	})
}

// queued waits until lockPath holds n arrival nodes.
func queued(t *testing.T, c *zklock.Client, lockPath string, n int) {
	t.Helper()
	waitFor(t, func() bool {
		k := 0
		for _, name := range children(t, c, lockPath) {
			if strings.Contains(name, "arrival-") {
				k++
			}
		}
		return k == n
	})
}

// Waiters queued in one order, by two clients (two instances), are served
// in the order of their arrivals, and each token is larger than the last.
func TestArrivalMutexServesWaitersByArrival(t *testing.T) {
	ctx := testCtx(t)
	clients := []*zklock.Client{connect(t), connect(t)}
	lockPath := e2e.Path(t)
	h := holding(t, clients[0], lockPath, 0)
	created := []int{50, 30, 90, 10, 70, 20, 80, 40, 60}
	var mu sync.Mutex
	var served []int
	var tokens []int64
	var wg sync.WaitGroup
	for i, at := range created {
		m := zklock.NewArrivalMutex(clients[i%2], lockPath, base(at))
		whenHeld(t, ctx, &wg, m, func() {
			tok, err := m.Token(ctx)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			served, tokens = append(served, at), append(tokens, tok)
			mu.Unlock()
		})
		queued(t, clients[0], lockPath, i+2) // created in this order
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if want := slices.Sorted(slices.Values(created)); !slices.Equal(served, want) {
		t.Fatalf("served in the order %v, want the arrivals' %v", served, want)
	}
	if !slices.IsSorted(tokens) || len(slices.Compact(slices.Clone(tokens))) != len(tokens) {
		t.Fatalf("tokens %v: want strictly increasing from holder to holder", tokens)
	}
}

// A newcomer that arrived before the waiters goes ahead of them, never
// ahead of the holder.
func TestArrivalMutexNewcomerGoesAheadOfWaitersNotTheHolder(t *testing.T) {
	ctx := testCtx(t)
	c, other := connect(t), connect(t)
	lockPath := e2e.Path(t)
	h := holding(t, c, lockPath, 100)
	order := make(chan string, 2)
	run := func(name string, m *zklock.ArrivalMutex) {
		go func() {
			if err := m.Acquire(ctx); err != nil {
				t.Error(err)
				order <- "error"
				return
			}
			order <- name
			if err := m.Release(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	run("waiter", zklock.NewArrivalMutex(other, lockPath, base(200)))
	queued(t, c, lockPath, 2)
	run("newcomer", zklock.NewArrivalMutex(other, lockPath, base(50)))
	queued(t, c, lockPath, 3)
	select {
	case got := <-order:
		t.Fatalf("%s acquired while the holder held the lock", got)
	case <-time.After(300 * time.Millisecond):
	}
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if first, second := <-order, <-order; first != "newcomer" || second != "waiter" {
		t.Fatalf("served %s then %s: want the newcomer (arrived first) then the waiter", first, second)
	}
}

// Many participants over two clients, arrivals at random: never two
// holders at once, every one served.
func TestArrivalMutexExcludes(t *testing.T) {
	ctx := testCtx(t)
	clients := []*zklock.Client{connect(t), connect(t)}
	lockPath := e2e.Path(t)
	var inside, most, served int
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range 40 {
		m := zklock.NewArrivalMutex(clients[i%2], lockPath, base((i*37)%40))
		if i%8 == 0 {
			// Now and then the queue empties: the turnstile is deleted by
			// its last holder or tidied, while others come and make it again.
			wg.Wait()
		}
		whenHeld(t, ctx, &wg, m, func() {
			mu.Lock()
			inside++
			most = max(most, inside)
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			inside--
			served++
			mu.Unlock()
		})
	}
	wg.Wait()
	if most != 1 || served != 40 {
		t.Fatalf("at most %d holders at once, %d of 40 served: want 1 and 40", most, served)
	}
	// The last holder found nobody behind it: it deleted the turnstile, and
	// the idle lock path is empty (its container is the server's to reap).
	waitFor(t, func() bool {
		kids, _, err := clients[0].Conn().Children(lockPath)
		return errors.Is(err, zk.ErrNoNode) || err == nil && len(kids) == 0
	})
}

// The holder's session ends without a release (its client closed): the
// turnstile still names its node, which is gone, and the next waiter takes
// the lock with a larger token.
func TestArrivalMutexPassesOnWhenTheHolderDies(t *testing.T) {
	ctx := testCtx(t)
	dying, c := connect(t), connect(t)
	lockPath := e2e.Path(t)
	h := holding(t, dying, lockPath, 0)
	before, err := h.Token(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := zklock.NewArrivalMutex(c, lockPath, base(1))
	done := make(chan error, 1)
	go func() { done <- w.Acquire(ctx) }()
	queued(t, c, lockPath, 2)
	dying.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the waiter did not take the lock of a holder whose session ended")
	}
	after, err := w.Token(ctx)
	if err != nil || after <= before {
		t.Fatalf("token %d after %d (%v): want larger", after, before, err)
	}
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A waiter that gives up leaves no node behind; one that finds another
// recipe's node on the path refuses to queue there.
func TestArrivalMutexLeavesNothingAndRefusesOtherRecipes(t *testing.T) {
	ctx := testCtx(t)
	c := connect(t)
	lockPath := e2e.Path(t)
	h := holding(t, c, lockPath, 0)
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if err := zklock.NewArrivalMutex(c, lockPath, base(1)).Acquire(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire past its deadline: %v, want context.DeadlineExceeded", err)
	}
	queued(t, c, lockPath, 1)
	if err := h.Release(ctx); err != nil {
		t.Fatal(err)
	}
	m := zklock.NewMutex(c, lockPath)
	if err := m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	defer release(t, m)
	if err := zklock.NewArrivalMutex(c, lockPath, base(2)).Acquire(ctx); !errors.Is(err, zklock.ErrOtherRecipe) {
		t.Fatalf("Acquire beside a Mutex's node: %v, want ErrOtherRecipe", err)
	}
}

// The answer to the turnstile's write is lost (the connection cut as it
// comes back): the write was applied, the retry finds its version moved
// and the turnstile naming us, and the lock is held, once.
func TestArrivalMutexTurnstileAnswerLost(t *testing.T) {
	ctx := testCtx(t)
	p := e2e.NewZKProxy(t, e2e.ZooKeeper(t)[0])
	c, observer := connectThrough(t, p), connect(t)
	lockPath := e2e.Path(t)
	warm := zklock.NewArrivalMutex(observer, lockPath, base(0)) // makes the path and the turnstile
	if err := warm.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := warm.Release(ctx); err != nil {
		t.Fatal(err)
	}
	fault := p.CutBeforeReply(func(op int32, p string) bool {
		return op == e2e.ZKOpSetData && p == path.Join(lockPath, "turnstile")
	})
	m := zklock.NewArrivalMutex(c, lockPath, base(1))
	done := make(chan error, 1)
	go func() { done <- m.Acquire(ctx) }()
	awaitFault(t, fault, "the turnstile's write")
	acquiredWithin30s(t, done, "after its turnstile write's answer was lost")
	other := zklock.NewArrivalMutex(observer, lockPath, base(2))
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if err := other.Acquire(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second participant's Acquire while the first holds: %v, want it to wait", err)
	}
	if err := m.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Waiters behind a holder give up (their deadline) while it holds: the
// turnstile, which the holder clears at release, is deleted once nobody is
// left, so that an idle lock path leaves no node behind.
func TestArrivalMutexLeavesNoTurnstileWhenItsWaitersGaveUp(t *testing.T) {
	ctx := testCtx(t)
	c, other := connect(t), connect(t)
	lockPath := e2e.Path(t)
	first := holding(t, c, lockPath, 0)
	holder := zklock.NewArrivalMutex(c, lockPath, base(1))
	held := make(chan error, 1)
	go func() { held <- holder.Acquire(ctx) }()
	queued(t, c, lockPath, 2)
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- zklock.NewArrivalMutex(other, lockPath, base(2)).Acquire(short) }()
	queued(t, c, lockPath, 3)
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-held; err != nil { // it took the lock with a waiter behind it
		t.Fatal(err)
	}
	if err := <-gaveUp; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the waiter behind: %v, want its deadline", err)
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		kids, _, err := c.Conn().Children(lockPath)
		return errors.Is(err, zk.ErrNoNode) || err == nil && len(kids) == 0
	})
}

// The turnstile is tidied away (deleted) between a participant's read of
// it and its write: the write finds no node, and the participant makes the
// turnstile again and takes it, rather than fail. The reply to its read is
// held while another client deletes the turnstile. Fails when take treats
// the missing node as an error ("acquire: node does not exist").
func TestArrivalMutexTurnstileTidiedBetweenReadAndWrite(t *testing.T) {
	ctx := testCtx(t)
	p := e2e.NewZKProxy(t, e2e.ZooKeeper(t)[0])
	c, observer := connectThrough(t, p), connect(t)
	lockPath := e2e.Path(t)
	ts := path.Join(lockPath, "turnstile")
	e2e.CreateNode(t, observer.Conn(), lockPath, nil)
	e2e.CreateNode(t, observer.Conn(), ts, nil) // free, as a release with waiters leaves it
	read := p.HoldReply(func(op int32, p string) bool { return op == e2e.ZKOpGetData && p == ts })
	m := zklock.NewArrivalMutex(c, lockPath, base(1))
	done := make(chan error, 1)
	go func() { done <- m.Acquire(ctx) }()
	awaitFault(t, read, "the participant's read of the turnstile")
	if err := observer.Conn().Delete(ts, -1); err != nil { // tidied, as the last to leave does
		t.Fatal(err)
	}
	read.Release()
	acquiredWithin30s(t, done, "when the turnstile went between its read and its write")
	if err := m.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// acquiredWithin30s fails t unless done, an Acquire's result, comes
// without an error within 30 s; when says in what case.
func acquiredWithin30s(t *testing.T, done <-chan error, when string) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Acquire %s: %v", when, err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Acquire %s did not return within 30s", when)
	}
}
