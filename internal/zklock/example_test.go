package zklock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/zklock"

	"github.com/seckill-zk/seckill-zk/internal/zk"
)

// servers is where the examples find ZooKeeper: SECKILL_TEST_ZK or the local stack.
func servers() []string {
	if s := os.Getenv("SECKILL_TEST_ZK"); s != "" {
		return strings.Split(s, ",")
	}
	return []string{"127.0.0.1:2181"}
}

// examplePath is a path of this run's own, so that examples running at once
// elsewhere, or nodes left by an earlier run, cannot block them.
func examplePath(name string) string {
	return fmt.Sprintf("/seckill-examples/%d-%d/%s", os.Getpid(), time.Now().UnixNano(), name)
}

// exampleContext bounds an example: a bug fails it instead of hanging the
// test binary.
func exampleContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

func ExampleMutex() {
	ctx, cancel := exampleContext()
	defer cancel()
	conn, err := zk.Connect(ctx, servers(), zk.Options{SessionTimeout: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	client := zklock.New(conn, zklock.Options{})

	// One handle per goroutine of control: reentrancy is per handle.
	m := zklock.NewMutex(client, examplePath("mutex"))
	if err := m.Acquire(ctx); err != nil {
		log.Fatal(err)
	}
	// ... read, compute, and before writing make sure the lock is still ours:
	select {
	case <-m.Lost():
		fmt.Println("lock lost: abort, write nothing")
	default:
		fmt.Println("still holding: commit")
	}
	if err := m.Release(ctx); err != nil {
		log.Fatal(err)
	}
	// Output: still holding: commit
}

func ExampleReadWriteLock() {
	ctx, cancel := exampleContext()
	defer cancel()
	conn, err := zk.Connect(ctx, servers(), zk.Options{SessionTimeout: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	client := zklock.New(conn, zklock.Options{})

	lockPath := examplePath("rwlock")
	rw := zklock.NewReadWriteLock(client, lockPath)
	if err := rw.WriteLock().Acquire(ctx); err != nil {
		log.Fatal(err)
	}
	// Downgrade: take the read lock while writing, then let the write lock go.
	if err := rw.ReadLock().Acquire(ctx); err != nil {
		log.Fatal(err)
	}
	if err := rw.WriteLock().Release(ctx); err != nil {
		log.Fatal(err)
	}
	other := zklock.NewReadWriteLock(client, lockPath).ReadLock()
	fmt.Println("another reader:", other.TryAcquire(ctx))
	fmt.Println("upgrade:", rw.WriteLock().Acquire(ctx))
	for _, l := range []*zklock.Mutex{other, rw.ReadLock()} {
		if err := l.Release(ctx); err != nil {
			log.Fatal(err)
		}
	}
	// Output:
	// another reader: <nil>
	// upgrade: zklock: read lock cannot be upgraded to the write lock
}

func ExampleSemaphoreV2() {
	ctx, cancel := exampleContext()
	defer cancel()
	conn, err := zk.Connect(ctx, servers(), zk.Options{SessionTimeout: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	client := zklock.New(conn, zklock.Options{})

	sem := zklock.NewSemaphoreV2(client, examplePath("semaphore"), 2)
	leases, err := sem.AcquireN(ctx, 2)
	if err != nil {
		log.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancelShort()
	_, err = sem.Acquire(short)
	fmt.Println("third lease before the deadline:", !errors.Is(err, context.DeadlineExceeded))
	for _, l := range leases {
		if err := l.Release(ctx); err != nil {
			log.Fatal(err)
		}
	}
	// Output: third lease before the deadline: false
}

func ExampleLeaderLatch() {
	ctx, cancel := exampleContext()
	defer cancel()
	conn, err := zk.Connect(ctx, servers(), zk.Options{SessionTimeout: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	client := zklock.New(conn, zklock.Options{})

	latch := zklock.NewLeaderLatch(client, examplePath("latch"), "node-1")
	latch.Listen(zklock.LatchListener{
		IsLeader:  func() { fmt.Println("node-1 leads") },
		NotLeader: func() { fmt.Println("node-1 follows") },
	})
	if err := latch.Start(ctx); err != nil {
		log.Fatal(err)
	}
	if err := latch.Await(ctx); err != nil {
		log.Fatal(err)
	}
	if err := latch.Close(ctx); err != nil {
		log.Fatal(err)
	}
	// Output:
	// node-1 leads
	// node-1 follows
}

func ExampleLeaderSelector() {
	ctx, cancel := exampleContext()
	defer cancel()
	conn, err := zk.Connect(ctx, servers(), zk.Options{SessionTimeout: 10 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	client := zklock.New(conn, zklock.Options{})

	terms := make(chan string)
	sel := zklock.NewLeaderSelector(client, examplePath("selector"), "worker-1", func(ctx context.Context) error {
		// Lead until done or until ctx says leadership is gone
		// (connection suspended or lost, Interrupt, Close).
		terms <- "worker-1 leads"
		<-ctx.Done()
		return nil
	})
	if err := sel.Start(); err != nil {
		log.Fatal(err)
	}
	select {
	case term := <-terms:
		fmt.Println(term)
	case <-ctx.Done():
		log.Fatal("no term within the example's time")
	}
	sel.Close()
	fmt.Println("leading after Close:", sel.HasLeadership())
	// Output:
	// worker-1 leads
	// leading after Close: false
}
