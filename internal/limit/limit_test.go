package limit_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/limit"
)

func TestBurstThenRate(t *testing.T) {
	l := limit.New(limit.Options{Rate: 2, Burst: 3})
	t0 := time.Unix(1_000_000, 0)
	for i := range 3 {
		if ok, _ := l.Allow("bot", t0); !ok {
			t.Fatalf("request %d of the burst of 3 refused", i+1)
		}
	}
	ok, wait := l.Allow("bot", t0)
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("fourth request at once: allowed %v, retry after %v; want refused, 500ms (2 a second)", ok, wait)
	}
	if ok, _ := l.Allow("honest", t0); !ok {
		t.Fatal("another key is refused: buckets are per key")
	}
	if ok, _ := l.Allow("bot", t0.Add(499*time.Millisecond)); ok {
		t.Fatal("allowed before a token was earned")
	}
	if ok, _ := l.Allow("bot", t0.Add(500*time.Millisecond)); !ok {
		t.Fatal("refused after the wait it was told")
	}
	// Idle for an hour: the bucket is full again, not fuller.
	later := t0.Add(time.Hour)
	for i := range 3 {
		if ok, _ := l.Allow("bot", later); !ok {
			t.Fatalf("after an hour, request %d of 3 refused", i+1)
		}
	}
	if ok, _ := l.Allow("bot", later); ok {
		t.Fatal("an idle hour gave more than the burst")
	}
}

// A flood of distinct keys keeps at most MaxKeys buckets, and a key that
// keeps coming keeps its (empty) bucket through the flood.
func TestMemoryIsBounded(t *testing.T) {
	const maxKeys = 1024
	l := limit.New(limit.Options{Rate: 1, Burst: 1, MaxKeys: maxKeys})
	now := time.Unix(1_000_000, 0)
	l.Allow("bot", now)
	for i := range 200_000 {
		l.Allow(fmt.Sprint("key-", i), now)
		if i%100 == 0 {
			if ok, _ := l.Allow("bot", now); ok {
				t.Fatalf("the bot, seen every 100 keys, got a new token at key %d: its bucket was given up", i)
			}
		}
	}
	if n := l.Len(); n > maxKeys {
		t.Fatalf("%d buckets kept, bound %d", n, maxKeys)
	}
}

func TestConcurrentUseOfOneKey(t *testing.T) {
	l := limit.New(limit.Options{Rate: 0.001, Burst: 40})
	now := time.Unix(1_000_000, 0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	allowed := 0
	for range 400 {
		wg.Go(func() {
			if ok, _ := l.Allow("bot", now); ok {
				mu.Lock()
				allowed++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if allowed != 40 {
		t.Fatalf("%d of 400 concurrent requests allowed, want the burst, 40", allowed)
	}
}
