package zklock_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/seckill-zk/seckill-zk/internal/zklock"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// BenchmarkUncontended compares one acquire+release of our Mutex and of
// go-zookeeper's gozk.Lock with the raw operations a lock needs (create
// ephemeral-sequential, list children, delete), on the same server, and the
// Mutex with its fencing token (one more read). The four are interleaved in
// every iteration, so that the server's fsync latency,
// which drifts, weighs on all of them alike; each reports its own ns/op and
// the ratios to the raw operations.
func BenchmarkUncontended(b *testing.B) {
	c := connect(b)
	ctx := context.Background()
	path := e2e.Path(b)
	conn := c.Conn()
	acl := gozk.WorldACL(gozk.PermAll)
	e2e.CreateNode(b, conn, path+"/raw", nil)
	e2e.CreateNode(b, conn, path+"/zklock", nil)
	m := zklock.NewMutex(c, path+"/mutex")
	fm := zklock.NewMutex(c, path+"/fenced")
	fm.FetchTokenEarly() // as the shop does
	l := gozk.NewLock(conn, path+"/zklock", acl)
	var raw, mutex, zkLock, fenced time.Duration
	var mutexEach, zkLockEach []time.Duration // for the percentiles
	for b.Loop() {
		t0 := time.Now()
		node, err := conn.Create(path+"/raw/_c_00000000-0000-0000-0000-000000000000-lock-", nil, gozk.FlagEphemeralSequential, acl)
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := conn.Children(path + "/raw"); err != nil {
			b.Fatal(err)
		}
		if err := conn.Delete(node, -1); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := m.Acquire(ctx); err != nil {
			b.Fatal(err)
		}
		if err := m.Release(ctx); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if err := l.Lock(); err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		// The fenced holder (the shop's): the token is read as soon as the
		// node exists, alongside the queue's listing.
		if err := fm.Acquire(ctx); err != nil {
			b.Fatal(err)
		}
		if _, err := fm.Token(ctx); err != nil {
			b.Fatal(err)
		}
		if err := fm.Release(ctx); err != nil {
			b.Fatal(err)
		}
		t4 := time.Now()
		raw, mutex, zkLock, fenced = raw+t1.Sub(t0), mutex+t2.Sub(t1), zkLock+t3.Sub(t2), fenced+t4.Sub(t3)
		mutexEach, zkLockEach = append(mutexEach, t2.Sub(t1)), append(zkLockEach, t3.Sub(t2))
	}
	n := float64(b.N)
	b.ReportMetric(float64(raw.Nanoseconds())/n, "raw-ns/op")
	b.ReportMetric(float64(mutex.Nanoseconds())/n, "mutex-ns/op")
	b.ReportMetric(float64(zkLock.Nanoseconds())/n, "zklock-ns/op")
	b.ReportMetric(mutex.Seconds()/raw.Seconds(), "mutex/raw")
	b.ReportMetric(zkLock.Seconds()/raw.Seconds(), "zklock/raw")
	b.ReportMetric(fenced.Seconds()/mutex.Seconds(), "fenced/mutex")
	pct := func(d []time.Duration, p int) float64 {
		slices.Sort(d)
		return float64(d[(len(d)-1)*p/100])
	}
	b.ReportMetric(pct(mutexEach, 50)/pct(zkLockEach, 50), "mutex-p50/zklock-p50")
	b.ReportMetric(pct(mutexEach, 99)/pct(zkLockEach, 99), "mutex-p99/zklock-p99")
}

// BenchmarkContended measures hand-offs per second with 20 and 200 waiters
// spread over 2 sessions, for our Mutex and for gozk.Lock on the same server.
// Each does b.N hand-offs (-benchtime 4000x: 4000 each), in slices that
// alternate between the two, each going first in every other slice, so that
// drift in the server's speed weighs on both alike; an untimed warm-up slice
// of each comes first. It reports both rates, their ratio, and for our Mutex
// per hand-off: watch notifications (1 means no herd), queue listings, and
// the hand-offs taken without listing again (handoff.go).
func BenchmarkContended(b *testing.B) {
	for _, waiters := range []int{20, 200} {
		b.Run(fmt.Sprintf("waiters=%d", waiters), func(b *testing.B) { benchContended(b, 2, waiters) })
	}
}

// BenchmarkContendedOneSession is BenchmarkContended with all waiters on one
// Client, as the buyers of one shop instance are: every hand-off is between
// handles of one session.
func BenchmarkContendedOneSession(b *testing.B) {
	b.Run("waiters=20", func(b *testing.B) { benchContended(b, 1, 20) })
}

func benchContended(b *testing.B, sessions, waiters int) {
	const slices = 8
	clients := make([]*zklock.Client, sessions)
	for i := range clients {
		clients[i] = connect(b)
	}
	path := e2e.Path(b)
	e2e.CreateNode(b, clients[0].Conn(), path+"/zklock", nil)
	ctx := context.Background()
	acl := gozk.WorldACL(gozk.PermAll)
	ours := func(w int) (func() error, func() error) {
		m := zklock.NewMutex(clients[w%sessions], path+"/mutex")
		return func() error { return m.Acquire(ctx) }, func() error { return m.Release(ctx) }
	}
	theirs := func(w int) (func() error, func() error) {
		l := gozk.NewLock(clients[w%sessions].Conn(), path+"/zklock", acl)
		return l.Lock, l.Unlock
	}
	stats := func() (s zklock.Stats) {
		for _, c := range clients {
			s = addStats(s, c.Stats(), 1)
		}
		return s
	}
	per := max(int64(b.N)/slices, 100) // each slice also ends with every queued waiter's turn
	contend(b, waiters, per, ours)     // warm-up, untimed
	contend(b, waiters, per, theirs)
	var oursN, theirsN int64
	var oursT, theirsT time.Duration
	var oursStats zklock.Stats
	b.ResetTimer()
	for i := range slices {
		var oursRate, theirsRate float64
		runOurs := func() {
			s0 := stats()
			n, d := contend(b, waiters, per, ours)
			oursN, oursT, oursRate = oursN+n, oursT+d, float64(n)/d.Seconds()
			oursStats = addStats(oursStats, addStats(stats(), s0, -1), 1)
		}
		runTheirs := func() {
			n, d := contend(b, waiters, per, theirs)
			theirsN, theirsT, theirsRate = theirsN+n, theirsT+d, float64(n)/d.Seconds()
		}
		if i%2 == 0 { // who goes first alternates too
			runOurs()
			runTheirs()
		} else {
			runTheirs()
			runOurs()
		}
		// One line per pair of neighbouring slices, for scripts/benchtable.sh
		// to give the ratio with its spread (visible with -test.v); not
		// for the framework's first, probing call (b.N = 1), whose
		// slices are too short to say anything.
		if b.N > 1 {
			b.Logf("slice-ratio sessions=%d waiters=%d %.4f", sessions, waiters, oursRate/theirsRate)
		}
	}
	b.StopTimer()
	oursRate, theirsRate := float64(oursN)/oursT.Seconds(), float64(theirsN)/theirsT.Seconds()
	b.ReportMetric(oursRate, "mutex-handoffs/s")
	b.ReportMetric(theirsRate, "zklock-handoffs/s")
	b.ReportMetric(oursRate/theirsRate, "mutex/zklock")
	b.ReportMetric(float64(oursStats.Wakeups)/float64(oursN), "wakeups/handoff")
	b.ReportMetric(float64(oursStats.Listings)/float64(oursN), "listings/handoff")
	b.ReportMetric(float64(oursStats.Shortcuts)/float64(oursN), "shortcuts/handoff")
}

// addStats returns a + sign*b, counter by counter.
func addStats(a, b zklock.Stats, sign int64) zklock.Stats {
	return zklock.Stats{
		Wakeups:   a.Wakeups + sign*b.Wakeups,
		Listings:  a.Listings + sign*b.Listings,
		Shortcuts: a.Shortcuts + sign*b.Shortcuts,
	}
}

// contend runs waiters goroutines that take and give back a lock until
// target hand-offs are done (those already queued then finish theirs) and
// returns how many there were and how long they took.
func contend(b *testing.B, waiters int, target int64, newLock func(w int) (lock, unlock func() error)) (int64, time.Duration) {
	b.Helper()
	var done atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := range waiters {
		lock, unlock := newLock(w)
		wg.Go(func() {
			for done.Load() < target {
				if err := lock(); err != nil {
					b.Error(err)
					return
				}
				done.Add(1)
				if err := unlock(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return done.Load(), time.Since(start)
}

// BenchmarkArrivalContended is BenchmarkContended for ArrivalMutex against
// Mutex, over two sessions, in alternating slices: what serving by arrival
// costs a hand-off (its listing and the turnstile's read and write).
func BenchmarkArrivalContended(b *testing.B) {
	b.Run("waiters=20", func(b *testing.B) { benchArrival(b, 20) })
}

func benchArrival(b *testing.B, waiters int) {
	const slices = 8
	clients := []*zklock.Client{connect(b), connect(b)}
	path := e2e.Path(b)
	ctx := context.Background()
	mutex := func(w int) (func() error, func() error) {
		m := zklock.NewMutex(clients[w%2], path+"/mutex")
		return func() error { return m.Acquire(ctx) }, func() error { return m.Release(ctx) }
	}
	arrival := func(w int) (func() error, func() error) {
		var m *zklock.ArrivalMutex
		lock := func() error {
			m = zklock.NewArrivalMutex(clients[w%2], path+"/arrival", time.Now())
			return m.Acquire(ctx)
		}
		return lock, func() error { return m.Release(ctx) }
	}
	per := max(int64(b.N)/slices, 100)
	contend(b, waiters, per, mutex) // warm-up, untimed
	contend(b, waiters, per, arrival)
	var mN, aN int64
	var mT, aT time.Duration
	b.ResetTimer()
	for i := range slices {
		runs := []func(){
			func() { n, d := contend(b, waiters, per, mutex); mN, mT = mN+n, mT+d },
			func() { n, d := contend(b, waiters, per, arrival); aN, aT = aN+n, aT+d },
		}
		runs[i%2]()
		runs[1-i%2]()
	}
	b.StopTimer()
	mRate, aRate := float64(mN)/mT.Seconds(), float64(aN)/aT.Seconds()
	b.ReportMetric(mRate, "mutex-handoffs/s")
	b.ReportMetric(aRate, "arrival-handoffs/s")
	b.ReportMetric(aRate/mRate, "arrival/mutex")
}
