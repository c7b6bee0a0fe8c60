package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/loadgen"
	"github.com/seckill-zk/seckill-zk/internal/zk"
	"github.com/seckill-zk/seckill-zk/internal/zklock"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// holdLock takes the stack's lock as a participant of the test's own, as
// the shop's (lock.order arrival) does, and keeps it, a holder that never
// finishes: the shop's buyers wait behind it until release lets it go.
func holdLock(t testing.TB, s e2e.Stack) (release func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := zk.Connect(ctx, s.ZKServers, zk.Options{SessionTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	m := zklock.NewArrivalMutex(zklock.New(conn, zklock.Options{}), s.LockPath, time.Now())
	if err := m.Acquire(ctx); err != nil {
		t.Fatalf("the test's hold of %s: %v", s.LockPath, err)
	}
	return func() {
		if err := m.Release(context.Background()); err != nil {
			t.Fatalf("release the test's hold: %v", err)
		}
	}
}

// orderOf counts the order rows of a request id.
func orderOf(t *testing.T, s e2e.Stack, requestID string) int {
	t.Helper()
	var n int
	if err := e2e.OpenDB(t, s.DSN).QueryRow("SELECT COUNT(*) FROM order_info WHERE request_id = ?", requestID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A buyer who is gone before its purchase commits is sold nothing: one
// whose connection closed while it waited for the lock, and one whose
// X-Request-Timeout-Ms passed while it waited (it hears 503 timeout). The
// lock is held by the test meanwhile; once it is let go, the next buyer
// buys the one piece the two did not take. Without the shop honouring
// X-Request-Timeout-Ms the second buyer waits out lock.acquireTimeout (10 s)
// and hears lock_timeout, long after it said it would no longer wait; and
// without a batch letting a buyer who gave up leave its queue, the same.
func TestABuyerWhoLeftBeforeTheCommitIsNotSold(t *testing.T) {
	for _, strategy := range []string{"seed", "batch"} {
		t.Run(strategy, func(t *testing.T) {
			s := e2e.NewStack(t, e2e.WithStrategy(strategy), e2e.WithLogLevel("info"))
			s.Shop(t, "migrate")
			s.Shop(t, "stock", "set", "--goods", "1", "--stock", "10", "--clear-orders")
			in := s.Serve(t)
			release := holdLock(t, s)

			gone, err := net.Dial("tcp", strings.TrimPrefix(in.URL, "http://"))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := io.WriteString(gone, "GET /goods-stock/1 HTTP/1.1\r\nHost: shop\r\nX-Request-ID: left-early\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			s.WaitForQueue(t, 2) // the test's node and the buyer's (or its batch's)
			gone.Close()

			timedOut := e2e.Ask(http.MethodGet, in.URL+"/goods-stock/1", "X-Request-ID", "gave-300ms", "X-Request-Timeout-Ms", "300")
			if timedOut.Status != http.StatusServiceUnavailable || timedOut.Code != "timeout" {
				t.Errorf("a buyer who would wait 300 ms behind a held lock: %d %s %s, want 503 timeout", timedOut.Status, timedOut.Code, timedOut.Body)
			}
			release()
			if a := e2e.Ask(http.MethodGet, in.URL+"/goods-stock/1", "X-Request-ID", "stayed"); a.Status != http.StatusOK {
				t.Fatalf("the buyer after the lock was let go: %d %s %s\n%s", a.Status, a.Code, a.Body, in.Logs())
			}
			for _, id := range []string{"left-early", "gave-300ms"} {
				if n := orderOf(t, s, id); n != 0 {
					t.Errorf("the buyer %s, gone before its purchase, has %d order rows", id, n)
				}
			}
			if stock, orders := s.Counts(t); stock != 9 || orders != 1 {
				t.Errorf("stock %d with %d order rows, want 9 and 1: the buyer who stayed alone bought", stock, orders)
			}
		})
	}
}

// The shop past its capacity, in an open loop: buyers arrive at four times
// what two instances of the seed's purchase serve (their closed-loop rate,
// measured first), each waiting at most 5 s. With the admission on
// (purchase.queueTarget) the excess is refused at once with 503 busy and
// Retry-After, no buyer waits out its timeout, every 200 has its order and
// no order goes to a buyer who did not get its 200. With a fixed bound of
// 1 000 waiting instead (queueTarget 0) the queue outgrows the buyers'
// patience: they time out, and some of those are sold to.
func TestPastCapacityTheExcessIsRefusedFast(t *testing.T) {
	s := e2e.NewStack(t, e2e.WithStrategy("seed"), e2e.WithMaxSleep(4*time.Millisecond), e2e.WithQueueTarget(300*time.Millisecond),
		e2e.WithAcquireTimeout(time.Minute), e2e.WithRoom(false)) // the admission alone; room_e2e_test.go has the room past capacity
	s.Binary = e2e.ShopBinaryNoRace(t) // the race detector's cost would be the capacity measured
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "1000000", "--clear-orders")
	in1, in2 := s.Serve(t), s.Serve(t)
	urls := []string{in1.URL, in2.URL}

	warm, start := closedLoad(urls, 600, 20)
	capacity := tally(warm, start, nil).purchasesPerSec
	if capacity <= 0 {
		t.Fatalf("the closed loop sold nothing: %+v", tally(warm, start, nil))
	}
	_, ordersBefore := s.Counts(t)
	rate := 4 * capacity
	r, err := loadgen.Open(context.Background(), loadgen.OpenOptions{
		Targets: urls, Profile: loadgen.Profile{Rate: rate, Duration: 4 * time.Second},
		Connections: 3000, Timeout: 5 * time.Second, SendTimeout: true, Record: true,
		Request: func(int) (string, []string) { return "/goods-stock/1", nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	if why := r.Behind(); why != "" {
		t.Fatalf("the load generator did not keep %.0f requests/s, so the shop was not tested: %s", rate, why)
	}
	_, ordersAfter := s.Counts(t)
	t.Logf("capacity %.0f purchases/s (closed loop); offered %.0f/s: %d ok (%.0f/s), %d refused, p99 of the 200s %.0f ms, of the refusals %.1f ms; by code %v",
		capacity, r.Offered(), r.OK, r.Goodput(), r.Refused(), loadgen.Ms(r.OKLatency, 99), loadgen.Ms(r.RefusedLatency, 99), r.ByCode)
	if r.ClientTimeouts+r.Errors > 0 {
		t.Errorf("%d buyers timed out and %d exchanges failed: past capacity every buyer should hear an answer", r.ClientTimeouts, r.Errors)
	}
	for _, rec := range r.Records {
		switch {
		case rec.Err != nil || rec.Sent.IsZero():
		case rec.Status == http.StatusOK:
		case rec.Status == http.StatusServiceUnavailable && rec.Code == "busy":
			if rec.Header.Get("Retry-After") == "" {
				t.Fatalf("a 503 busy without Retry-After")
			}
		default:
			t.Fatalf("a buyer was answered %d %s: %s", rec.Status, rec.Code, rec.Body)
		}
	}
	if r.ByCode["busy"] == 0 {
		t.Errorf("nobody was refused busy at four times the capacity: %v", r.ByCode)
	}
	if sold := ordersAfter - ordersBefore; sold != r.OK {
		t.Errorf("%d order rows for %d buyers told 200: %d sold to buyers who had gone", sold, r.OK, sold-r.OK)
	}
	for _, in := range []*e2e.Instance{in1, in2} {
		t.Logf("%s: admission limit %.0f, refused %.0f, peak RSS %d MB", in.URL, e2e.MetricValue(t, in.URL, "seckill_admission_limit"),
			e2e.MetricValue(t, in.URL, "seckill_admission_refused_total"), peakRSS(in)>>20)
	}
}
