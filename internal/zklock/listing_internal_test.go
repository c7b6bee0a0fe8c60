package zklock

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/zk"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// A crowd joining a queue at once shares listings: while the first listing
// is on the wire, everyone who asks after it joins the next one. Here the
// first listing is held back until all the others have asked, so the whole
// crowd costs exactly two listings; one each (a listing per joiner, as
// Curator does) would be 20.
func TestJoinersShareQueueListings(t *testing.T) {
	const waiters = 20
	servers := e2e.ZooKeeper(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dial := func() *Client {
		zc, err := zk.Connect(ctx, servers, zk.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(zc.Close)
		return New(zc, Options{})
	}
	holderClient, c := dial(), dial()
	lockPath := e2e.Path(t) + "/lock"
	holder := NewMutex(holderClient, lockPath)
	if err := holder.Acquire(ctx); err != nil {
		t.Fatal(err)
	}

	release := make(chan struct{})
	var held sync.Once
	c.beforeListing = func(string) { held.Do(func() { <-release }) }
	pending := func() int { // waiters of the listing after the one held back
		c.listMu.Lock()
		defer c.listMu.Unlock()
		if q := c.lists[lockPath]; q != nil && q.next != nil {
			return q.next.waiters
		}
		return 0
	}

	var wg sync.WaitGroup
	var mu sync.Mutex
	holding := 0
	for range waiters {
		m := NewMutex(c, lockPath)
		wg.Go(func() {
			if err := m.Acquire(ctx); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			holding++
			if holding > 1 {
				t.Error("two waiters hold the lock at once")
			}
			holding--
			mu.Unlock()
			if err := m.Release(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	for deadline := time.Now().Add(30 * time.Second); pending() < waiters-1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			close(release)
			t.Fatalf("after 30s only %d of %d waiters asked for the next listing", pending(), waiters-1)
		}
	}
	close(release)
	// Every waiter watches its predecessor before the holder lets go, so
	// that no hand-off finds its watched node gone and lists again.
	for deadline := time.Now().Add(30 * time.Second); c.stats.watches.Load() < waiters; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 30s only %d of %d waiters watch their predecessor", c.stats.watches.Load(), waiters)
		}
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if got := c.Stats().Listings; got != 2 {
		t.Errorf("%d listings for %d waiters joining at once, want 2 (the one held back and one shared by the rest)", got, waiters)
	}
}
