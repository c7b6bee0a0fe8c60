package zklock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/zklock"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"

	"github.com/seckill-zk/seckill-zk/internal/zk"
)

type lockEvent struct {
	acquired bool
	path     string
	d        time.Duration
}

type recorder struct {
	mu     sync.Mutex
	events []lockEvent
}

func (r *recorder) LockAcquired(path string, waited time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, lockEvent{true, path, waited})
}

func (r *recorder) LockReleased(path string, held time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, lockEvent{false, path, held})
}

// The observer hears each hold once, with how long its owner waited (here
// behind another client's hold) and how long it held; reentrant
// acquisitions are not holds of their own.
func TestObserverHearsWaitsAndHolds(t *testing.T) {
	ctx := testCtx(t)
	rec := &recorder{}
	cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	observed, err := dial(cctx, e2e.ZooKeeper(t), zk.Options{SessionTimeout: 10 * time.Second}, zklock.Options{Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	defer observed.Close()
	path := e2e.Path(t) + "/lock"
	other := zklock.NewMutex(connect(t), path)
	if err := other.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	const blocked = 300 * time.Millisecond
	go func() {
		time.Sleep(blocked)
		_ = other.Release(context.Background())
	}()
	m := zklock.NewMutex(observed, path)
	if err := m.Acquire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := m.Acquire(ctx); err != nil { // reentrant
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	for range 2 {
		if err := m.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.events) != 2 || !rec.events[0].acquired || rec.events[1].acquired {
		t.Fatalf("events %+v, want one acquisition then one release", rec.events)
	}
	for _, e := range rec.events {
		if e.path != path {
			t.Errorf("event on %q, want %q", e.path, path)
		}
	}
	if w := rec.events[0].d; w < blocked {
		t.Errorf("waited %v, but the other hold lasted %v", w, blocked)
	}
	if h := rec.events[1].d; h < 50*time.Millisecond {
		t.Errorf("held %v, want at least the 50ms it was held", h)
	}
}
