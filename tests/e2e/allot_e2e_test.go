package e2e

import (
	"database/sql"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// allotStock is goods 1's stock in the allot fault tests: A's first grant
// takes an eighth of it (grantSize), ten pieces.
const allotStock = 80

// newAllotPair is a faultPair of allot instances on goods 1 of stock
// allotStock. A's first buyer makes A take ten pieces into its lease and buy
// one: nine are then A's, unsold, and the row has seventy.
func newAllotPair(t *testing.T, env ...e2e.Option) faultPair {
	t.Helper()
	p := newFaultPair(t, false, append([]e2e.Option{e2e.WithStrategy("allot")}, env...)...)
	p.Shop(t, "stock", "set", "--goods", "1", "--stock", strconv.Itoa(allotStock), "--clear-orders")
	p.first = e2e.Await(t, "A's first buyer", e2e.PurchaseAsync(p.a.URL))
	if p.first.Status != http.StatusOK {
		t.Fatalf("A's first buyer answered %d %s", p.first.Status, p.first.Code)
	}
	return p
}

// buyAll sends n buyers to base one after another and returns their answers.
func buyAll(t *testing.T, base string, n int) []e2e.Answer {
	t.Helper()
	var out []e2e.Answer
	for range n {
		out = append(out, e2e.Await(t, "a buyer", e2e.PurchaseAsync(base)))
	}
	return out
}

// An instance that dies holding stock does not take it with it. A holds
// nine unsold pieces of goods 1 and is killed (SIGKILL). B, kept busy all
// along by a crowd buying goods 2, sells goods 1's seventy from the row; its
// next buyers wait while A's lease may still sell the nine; once A's
// session has expired, B closes A's lease, the nine go back to the row, and
// B sells them: 79 200s, then sold out. Without the closing of dead owners'
// leases B's buyers would wait for A's stock until they time out; with the
// closing only when B's queue runs empty, the crowd would keep it from
// ever coming.
func TestAllotKilledOwnersStockComesBack(t *testing.T) {
	p := newAllotPair(t)
	p.Shop(t, "stock", "set", "--goods", "2", "--stock", "1000000")
	p.a.Kill(t)
	stop := make(chan struct{})
	var crowd sync.WaitGroup
	for range 3 * service.DefaultBatchMax { // more than a batch takes: B's queue is never empty
		crowd.Add(1)
		go func() {
			defer crowd.Done()
			c := e2e.NewConn(p.b.URL)
			defer c.Close()
			for {
				select {
				case <-stop:
					return
				default:
				}
				c.Purchase(2)
			}
		}()
	}
	answers := buyAll(t, p.b.URL, allotStock)
	close(stop)
	crowd.Wait()
	p.checkBSoldTheRest(t, answers, "A's nine came back")
}

// An ask never stalls the asker's sale. A holds nine unsold pieces, and
// the test locks A's lease row (SELECT ... FOR UPDATE in a transaction it
// keeps open, as a stalled owner's transaction would). B sells the row's
// seventy; its next buyer of goods 1 waits for A's nine, and B's ask to
// A's lease waits at the row lock. Meanwhile B's buyers of goods 2 are each
// answered 200 within 5 s; once the lock goes, the nine come back and B
// sells them. When the worker sent the ask itself, it waited at the lock
// for its operation's 10 s and goods 2's first buyer was not answered in 5 s.
func TestAllotAskDoesNotStallTheSale(t *testing.T) {
	p := newAllotPair(t, e2e.WithSetting("allot.keep", "10m"), e2e.WithAcquireTimeout(time.Minute))
	p.Shop(t, "stock", "set", "--goods", "2", "--stock", "1000")
	db, err := sql.Open("mysql", p.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var leaseA int64
	if err := db.QueryRow("SELECT id FROM stock_lease WHERE open = 1 AND allotted <> ''").Scan(&leaseA); err != nil {
		t.Fatalf("A's lease: %v", err)
	}
	stalled, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Rollback()
	if _, err := stalled.Exec("SELECT id FROM stock_lease WHERE id = ? FOR UPDATE", leaseA); err != nil {
		t.Fatal(err)
	}

	answers := buyAll(t, p.b.URL, allotStock-10) // the row's seventy
	waiting := e2e.PurchaseAsync(p.b.URL)        // waits for A's nine
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var asks int
		if err := db.QueryRow("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'UPDATE stock_lease SET wanted%'").Scan(&asks); err != nil {
			t.Fatal(err)
		}
		if asks > 0 {
			break // B's ask waits at A's lease row
		}
		if time.Now().After(deadline) {
			t.Fatalf("B never asked A's lease for its stock\n%s", p.b.Logs())
		}
	}
	for i := range 10 {
		select {
		case a := <-e2e.PurchaseOfAsync(p.b.URL, 2):
			if a.Status != http.StatusOK {
				t.Fatalf("B's buyer %d of goods 2 answered %d %s, want 200", i, a.Status, a.Code)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("B's buyer %d of goods 2 not answered in 5 s while its ask waits at another lease's row", i)
		}
	}
	if err := stalled.Rollback(); err != nil {
		t.Fatal(err)
	}
	answers = append(answers, e2e.Await(t, "B's buyer waiting for A's nine", waiting))
	answers = append(answers, buyAll(t, p.b.URL, 9)...)
	if err := p.b.Stop(t); err != nil { // its lease gives goods 2's share back (allot.keep is long)
		t.Fatalf("B did not stop cleanly: %v", err)
	}
	p.checkBSoldTheRest(t, answers, "A gave back its nine once its lease row was free")
}

// checkBSoldTheRest checks the answers of allotStock buyers of B after A's
// first: the row's seventy and A's nine sold (why: how the nine came back),
// then sold out, and no oversell.
func (p faultPair) checkBSoldTheRest(t *testing.T, answers []e2e.Answer, why string) {
	t.Helper()
	for i, a := range answers[:allotStock-1] {
		if a.Status != http.StatusOK {
			t.Fatalf("B's buyer %d answered %d %s, want 200: %s", i, a.Status, a.Code, why)
		}
	}
	if last := answers[allotStock-1]; last.Code != "sold_out" {
		t.Errorf("B's last buyer answered %d %s, want sold_out", last.Status, last.Code)
	}
	p.CheckNoOversell(t, allotStock, append(answers, p.first)...)
}

// Stock an instance keeps comes back when another instance asks for it. A
// holds nine unsold pieces of goods 1, and allot.keep is ten minutes: A
// would keep them that long. B sells the row's seventy; its next buyer
// finds the row out while A's lease holds nine, and B asks A's lease for
// them; A, none of whose buyers wants goods 1, gives them back, and B sells
// them: 79 200s, then sold out. Without the ask B's buyer would wait for
// A's stock until lock.acquireTimeout (5 s here): 503 lock_timeout.
func TestAllotAskedStockComesBack(t *testing.T) {
	p := newAllotPair(t, e2e.WithSetting("allot.keep", "10m"), e2e.WithAcquireTimeout(5*time.Second))
	p.checkBSoldTheRest(t, buyAll(t, p.b.URL, allotStock), "A gave back its nine when asked")
}

// The owner of a lease stops (SIGSTOP) with a batch on its way to MySQL
// (the proxy holds its packet: the lease's write and the order), for
// longer than its session. B closes A's lease, puts A's nine back and sells
// them with the rest. When A goes on, its batch's write of the lease finds
// it closed: A answers 503 lock_lost and its order is rolled back. Without
// the lease's check (open = 1) in that write A would sell a piece that B
// sold: this test then fails with OVERSOLD 1. (mysql.idleTransactionTimeout
// is set past the stop, so that A's transaction lives until its packet
// lands.)
func TestAllotStoppedOwnerIsFencedOff(t *testing.T) {
	p := newAllotPair(t, e2e.WithSetting("mysql.idleTransactionTimeout", "120s"))
	batch := p.db.HoldPacket(isStatement("batches = batches + 1"), nil)
	fromA := e2e.PurchaseAsync(p.a.URL)
	p.heldBy(t, batch, "A's batch")
	if err := p.a.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.a.Cmd.Process.Signal(syscall.SIGCONT) }) // never leave it stopped
	answers := buyAll(t, p.b.URL, allotStock-1)
	for i, a := range answers {
		if a.Status != http.StatusOK {
			t.Fatalf("B's buyer %d answered %d %s, want 200: A's lease was closed and its nine put back", i, a.Status, a.Code)
		}
	}
	if err := p.a.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	batch.Release()
	ansA := e2e.Await(t, "A", fromA)
	if ansA.Status == http.StatusOK {
		t.Errorf("A answered 200 after its lease was closed and B sold what it held")
	}
	p.CheckNoOversell(t, allotStock, append(answers, ansA, p.first)...)
}

// allot and the sale window. Before the start a buyer hears not_started
// and the lease takes no stock for it (the goods' row still has all ten:
// without grantSize's window check the grant took one and kept it for
// allot.keep); at the start the sale is open, though the shop let the
// first buyer in without reading the window (the grant reads it); once the
// window has ended, buyers hear ended within WindowFor (a second: allot
// reads the held goods' rows every half of it).
func TestAllotSaleWindow(t *testing.T) {
	s, buy, start := windowedSale(t, "+2s", "+5s", e2e.WithStrategy("allot"))
	db, err := sql.Open("mysql", s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var row int
	if err := db.QueryRow("SELECT stock FROM goods_stock WHERE goods_no = 1").Scan(&row); err != nil || row != 10 {
		t.Fatalf("the row's stock after a buyer before the start: %d (%v), want 10: nothing granted", row, err)
	}
	sleepUntil(start)
	if a := buy(); a.status != 200 {
		t.Fatalf("at the start: %+v, want 200", a)
	}
	end := start.Add(3 * time.Second)
	sleepUntil(end.Add(service.DefaultWindowFor))
	if a := buy(); a.status != 409 || a.Code != "ended" {
		t.Fatalf("a window's length after the end: %+v, want 409 ended", a)
	}
	if stock, orders := s.Counts(t); stock != 9 || orders != 1 {
		t.Errorf("stock %d with %d orders, want 9 and 1", stock, orders)
	}
}
