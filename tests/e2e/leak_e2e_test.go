package e2e

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"golang.org/x/sync/errgroup"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// leakGoods is how many goods the leak test's sales touch; leakSlack is how
// much the heap may grow from the first half of them to the second (state
// of 100 bytes per goods would be twice that).
const (
	leakGoods = 20_000
	leakSlack = 1 << 20
)

// A sale of 10 000 goods leaves nothing per goods behind in an instance:
// no worker or other goroutine, no lock node, no watch, no cache entry that
// grows with the goods (memory returns to about where it was). Each
// strategy that locks or holds stock, with the lock path the README
// recommends for it. seed's sale (a lock hold and a transaction per buyer)
// takes about as long as batch's and allot's together: it runs beside them,
// each on a stack and a lock path of its own, and they one after the other.
func TestASaleOfManyGoodsLeavesNothingBehind(t *testing.T) {
	t.Run("seed", func(t *testing.T) {
		t.Parallel()
		leaveNothingBehind(t, "seed")
	})
	t.Run("batch_then_allot", func(t *testing.T) {
		t.Parallel()
		for _, strategy := range []string{"batch", "allot"} {
			t.Run(strategy, func(t *testing.T) { leaveNothingBehind(t, strategy) })
		}
	})
}

// leaveNothingBehind is TestASaleOfManyGoodsLeavesNothingBehind for one
// strategy.
func leaveNothingBehind(t *testing.T, strategy string) {
	lockPath := manyLockPath(t, strategy)
	s := e2e.NewStack(t, e2e.WithStrategy(strategy), e2e.WithLockPath(lockPath),
		e2e.WithMaxSleep(0), e2e.WithPayTimeout(time.Hour), e2e.WithAcquireTimeout(2*time.Minute))
	s.Binary = e2e.ShopBinaryNoRace(t) // the race detector's shadow memory would hide the instance's own
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", fmt.Sprintf("1-%d", leakGoods), "--stock", "1", "--clear-orders")
	// GOGC=10: the heap in use stays near the live heap once a few
	// collections ran (gc below makes them).
	in := s.Serve(t, e2e.WithEnv("GOGC=10"))
	// Warm up on goods the sale does not touch again: pools, the
	// session, the first lock paths.
	warm, _ := closedLoadOf([]string{in.URL}, 200, 20, func(i int) int32 { return int32(i%20 + 1) })
	for _, a := range warm {
		if a.Err != nil {
			t.Fatalf("warm-up: %v", a.Err)
		}
	}
	time.Sleep(2 * time.Second) // the warm-up's timers and idle connections settle
	goroutines, heap := leakGauges(t, in.URL)

	// Two sales of half the goods each, every goods bought twice
	// (one buyer gets its piece, one hears it is sold out). The
	// first fills the pools and the bounded caches; per-goods state
	// that is not bounded grows again with the second.
	half := (leakGoods - 20) / 2
	sell := func(from int) {
		answers, _ := closedLoadOf([]string{in.URL}, 2*half, 200, func(i int) int32 { return int32(from + i%half) })
		codes := map[string]int{}
		for _, a := range answers {
			if a.Err != nil {
				t.Fatalf("sale: %v", a.Err)
			}
			codes[a.Code]++
		}
		if codes["ok"] != half || codes["sold_out"] != half {
			t.Fatalf("answers %v, want %d ok and as many sold_out", codes, half)
		}
	}
	sell(21)
	time.Sleep(2 * time.Second)
	goroutines1, heap1 := leakGauges(t, in.URL)
	sell(21 + half)

	// The goroutines come back, within a generous time, to where they
	// were before the sales; the heap to where it was after the first.
	var g, h float64
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		g, h = leakGauges(t, in.URL)
		if g <= goroutines+5 && h <= heap1+leakSlack || time.Now().After(deadline) {
			break
		}
	}
	t.Logf("%s: goroutines %.0f before the sales of %d goods, %.0f after the first, %.0f after the second; heap in use %.1f MB, %.1f MB, %.1f MB",
		strategy, goroutines, 2*half, goroutines1, g, heap/(1<<20), heap1/(1<<20), h/(1<<20))
	if g > goroutines+5 {
		t.Errorf("goroutines: %.0f before the sales, %.0f after", goroutines, g)
	}
	if h > heap1+leakSlack {
		t.Errorf("heap in use: %.1f MB after the sale of %d goods, %.1f MB after %d more", heap1/(1<<20), half, h/(1<<20), half)
	}
	if n := lockNodesLeft(t, lockPath); n != 0 {
		t.Errorf("%d lock nodes left under %s", n, lockPath)
	}
	if w := watchesUnder(t, e2e.ZooKeeper(t)[0], strings.TrimSuffix(lockPath, "/{goodsNo}")); len(w) != 0 {
		t.Errorf("%d watches left on lock paths, e.g. %s", len(w), w[0])
	}
}

// leakGauges reads an instance's goroutines, less one per open database
// connection (the driver's watcher: the pools are bounded, and keep their
// idle connections), and its heap in use after a few collections, which
// requests to /healthz bring about: the least of three readings each.
func leakGauges(t *testing.T, base string) (goroutines, heap float64) {
	t.Helper()
	goroutines, heap = math.Inf(1), math.Inf(1)
	for range 3 {
		answers, _ := closedLoadOfPath([]string{base}, 1500, 10, "/healthz")
		for _, a := range answers {
			if a.Err != nil || a.Status != http.StatusOK {
				t.Fatalf("GET /healthz: %d %v", a.Status, a.Err)
			}
		}
		goroutines = min(goroutines, e2e.MetricValue(t, base, "go_goroutines")-
			e2e.MetricValue(t, base, `go_sql_open_connections{db_name="seckill"}`)-
			e2e.MetricValue(t, base, `go_sql_open_connections{db_name="seckill_sales"}`))
		heap = min(heap, e2e.MetricValue(t, base, "go_memstats_heap_inuse_bytes"))
	}
	return goroutines, heap
}

// lockNodesLeft counts the lock nodes under the lock path template p: its
// own children, or for a path per goods the children of each goods' lock.
func lockNodesLeft(t *testing.T, p string) int {
	t.Helper()
	conn, _, err := zk.Connect(e2e.ZooKeeper(t), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	dir, perGoods := strings.CutSuffix(p, "/{goodsNo}")
	kids, _, err := conn.Children(dir)
	if err != nil && err != zk.ErrNoNode {
		t.Fatalf("children of %s: %v", dir, err)
	}
	if !perGoods {
		return len(kids)
	}
	// One exists per goods' lock, 32 in flight on the one session: one
	// after another, 20 000 of them took half a minute.
	var n atomic.Int64
	var g errgroup.Group
	g.SetLimit(32)
	for _, k := range kids {
		g.Go(func() error {
			_, st, err := conn.Exists(dir + "/" + k)
			if err != nil {
				return fmt.Errorf("exists %s/%s: %w", dir, k, err)
			}
			if st != nil {
				n.Add(int64(st.NumChildren))
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	return int(n.Load())
}

// watchesUnder lists the watched paths under prefix, from the server's
// wchc (watches by session).
func watchesUnder(t *testing.T, server, prefix string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(fourLetterWord(t, server, "wchc"), "\n") {
		if p := strings.TrimSpace(line); strings.HasPrefix(p, prefix) {
			out = append(out, p)
		}
	}
	return out
}

// fourLetterWord sends ZooKeeper's four-letter command word to server and
// returns the whole answer (the server closes the connection after it).
func fourLetterWord(t testing.TB, server, word string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", server, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, word); err != nil {
		t.Fatal(err)
	}
	answer, err := io.ReadAll(conn)
	if err != nil {
		t.Fatalf("%s: %v", word, err)
	}
	return string(answer)
}

// TestLockNodesLeftCountsEveryGoodsLock: the leak test's count of lock
// nodes finds a node under any goods' lock, and under a shared lock.
func TestLockNodesLeftCountsEveryGoodsLock(t *testing.T) {
	root := e2e.Path(t)
	conn, _, err := zk.Connect(e2e.ZooKeeper(t), 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, p := range []string{root, root + "/goods", root + "/all"} {
		if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	for g := 1; g <= 100; g++ {
		if _, err := conn.Create(fmt.Sprintf("%s/goods/%d", root, g), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if n := lockNodesLeft(t, root+"/goods/{goodsNo}"); n != 0 {
		t.Fatalf("%d lock nodes counted under 100 empty goods' locks, want 0", n)
	}
	for _, p := range []string{"/goods/7/a", "/goods/100/a", "/goods/100/b", "/all/a"} {
		if _, err := conn.Create(root+p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
	}
	if n := lockNodesLeft(t, root+"/goods/{goodsNo}"); n != 3 {
		t.Fatalf("%d lock nodes counted under the goods' locks, want 3", n)
	}
	if n := lockNodesLeft(t, root+"/all"); n != 1 {
		t.Fatalf("%d lock nodes counted under the shared lock, want 1", n)
	}
}
