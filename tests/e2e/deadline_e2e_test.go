package e2e

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
	"github.com/seckill-zk/seckill-zk/tests/framework/history"
)

// The promise of X-Request-Timeout-Ms: past it the shop sells the buyer
// nothing and answers 503 timeout. Once a purchase's COMMIT has gone out the
// deadline no longer decides: the buyer hears 200 (or 503 outcome_unknown,
// if the database cannot say) whatever its deadline did meanwhile, and a
// buyer told timeout, or any other "nothing happened" answer, holds no
// order. Each strategy's histories go through the checker, whose model
// holds that rule (history.BuyResult: a refusal with an order row is
// illegal).

// deadlineStrategies are the strategies whose purchase paths are checked.
var deadlineStrategies = []string{"seed", "batch", "atomic", "allot"}

// isCommitOfSale matches the packet that carries a sale's COMMIT: the
// COMMIT with the count of its orders (seed, atomic, allot; batch on a
// cluster), or a batch's last writes with the COMMIT folded in (one
// server). A lease's grant, the sweeper's and the migration's commits
// name no order or stock table in their packet.
func isCommitOfSale(payload []byte) bool {
	return len(payload) > 0 && payload[0] == 0x03 && bytes.Contains(payload, []byte("COMMIT")) &&
		(bytes.Contains(payload, []byte("FROM order_info")) || bytes.Contains(payload, []byte("UPDATE goods_stock")))
}

// A purchase whose COMMIT reaches MySQL and is answered after the buyer's
// deadline: the COMMIT is held at a proxy until the deadline has passed,
// then sent on; MySQL commits and answers. The buyer must hear 200 with
// its order (it was sold a piece), never 503 timeout.
func TestADeadlineDuringTheCommitDoesNotHideTheSale(t *testing.T) {
	e2e.Integration(t)
	for _, strategy := range deadlineStrategies {
		t.Run(strategy, func(t *testing.T) {
			s := e2e.NewStack(t, e2e.WithStrategy(strategy), e2e.WithLockPath(e2e.Path(t)+"/locks/{goodsNo}"),
				e2e.WithPayTimeout(0), e2e.WithLogLevel("info"))
			s.Shop(t, "migrate")
			s.Shop(t, "stock", "set", "--goods", "1", "--stock", "10", "--clear-orders")
			db := e2e.NewMySQLProxy(t, e2e.MySQLAddr(t, s.DSN))
			in := s.Serve(t, e2e.WithSetting("mysql.dsn", e2e.ViaProxy(t, s.DSN, db.Addr())))

			const timeout = 1500 * time.Millisecond
			var rec history.Recorder
			commit := db.HoldPacket(isCommitOfSale, nil)
			done := make(chan e2e.Answer, 1)
			go func() {
				done <- e2e.Ask(http.MethodGet, in.URL+"/goods-stock/1", "X-Request-ID", "held-commit", "X-User-ID", "held-buyer",
					"X-Request-Timeout-Ms", strconv.Itoa(int(timeout.Milliseconds())))
			}()
			select {
			case <-commit.Held():
			case <-time.After(30 * time.Second):
				t.Fatalf("the sale's COMMIT never came\n%s", in.Logs())
			}
			time.Sleep(timeout + 300*time.Millisecond) // the buyer's deadline passes with the COMMIT in flight
			commit.Release()
			a := e2e.Await(t, "the buyer", done)
			rec.Add(buyOp(0, "held-commit", a))
			if a.Status != http.StatusOK && a.Code != "outcome_unknown" {
				t.Errorf("a purchase whose COMMIT was answered after its deadline heard %d %s, want 200 ok (or 503 outcome_unknown)", a.Status, a.Code)
			}
			checkHistory(t, s, rec.Ops(), 10)
		})
	}
}

// A crowd with deadlines of 1-60 ms (each buyer its own id) on one goods
// of 100: many deadlines strike inside the sale, some during its COMMIT.
// Every history is checked: no buyer told timeout (or busy, unavailable,
// lock_timeout, lock_lost) holds an order, every 200 has its order.
// DEADLINE_ROUNDS repeats it (make test: 1 round per strategy;
// make bench-shop's section (j): 10).
func TestBuyersWithShortDeadlinesHoldNoOrderTheyWereNotTold(t *testing.T) {
	e2e.Integration(t)
	rounds := 1
	if v := os.Getenv("DEADLINE_ROUNDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("DEADLINE_ROUNDS=%q: want a positive number", v)
		}
		rounds = n
	}
	const buyers, stock = 300, 100
	for _, strategy := range deadlineStrategies {
		t.Run(strategy, func(t *testing.T) {
			s := e2e.NewStack(t, e2e.WithStrategy(strategy), e2e.WithPayTimeout(0))
			s.Shop(t, "migrate")
			in := s.Serve(t)
			var told, holding int
			holdingBy := map[string]int{} // the codes the buyers who hold an order heard
			for round := range rounds {
				s.Shop(t, "stock", "set", "--goods", "1", "--stock", strconv.Itoa(stock), "--clear-orders")
				var rec history.Recorder
				var mu sync.Mutex
				codes := map[string]string{}
				var wg sync.WaitGroup
				start := make(chan struct{})
				for i := range buyers {
					ms := 1 + rand.IntN(60)
					wg.Go(func() {
						<-start
						rid := fmt.Sprintf("r%d-b%d", round, i)
						a := e2e.Ask(http.MethodGet, in.URL+"/goods-stock/1", "X-Request-ID", rid, "X-User-ID", fmt.Sprintf("buyer-%d-%d", round, i),
							"X-Request-Timeout-Ms", strconv.Itoa(ms))
						rec.Add(buyOp(i, rid, a))
						mu.Lock()
						codes[rid] = a.Code
						mu.Unlock()
					})
				}
				close(start)
				wg.Wait()
				ops := rec.Ops()
				rows := s.FinalRows(t)
				byRequest := map[string]bool{}
				for _, r := range rows.Orders {
					byRequest[r.RequestID] = true
				}
				for _, o := range ops {
					if o.Result == history.Refused {
						told++
						if byRequest[o.RequestID] {
							holding++
							holdingBy[codes[o.RequestID]]++
						}
					}
				}
				checkHistory(t, s, ops, stock)
			}
			t.Logf("%s, %d rounds of %d buyers (deadlines 1-60 ms) for %d pieces: %d told nothing was bought, %d of them hold an order",
				strategy, rounds, buyers, stock, told, holding)
			if holding > 0 {
				t.Errorf("%d buyers told nothing was bought hold an order (by the code they heard: %v)", holding, holdingBy)
			}
		})
	}
}

// buyOp is a purchase's answer as a history operation.
func buyOp(client int, rid string, a e2e.Answer) history.Op {
	op := history.Op{Client: client, Kind: history.Buy, Goods: 1, RequestID: rid, Result: history.BuyResult(answerOf(a)), Call: a.Start, Ret: a.End}
	if op.Result == history.OK {
		var body struct{ OrderID uint64 }
		if err := a.Decode(&body); err != nil || body.OrderID == 0 {
			op.Result = history.Unknown // a 200 without its order id: the rows will tell
		}
		op.Order = body.OrderID
	}
	return op
}

// checkHistory checks a sale's operations, completed with the stack's
// final rows, against the model from stock pieces of goods 1.
func checkHistory(t *testing.T, s e2e.Stack, ops []history.Op, stock int) {
	t.Helper()
	r := history.Check(ops, map[int32]int32{1: int32(stock)}, s.FinalRows(t), 2*time.Minute,
		e2e.InRoot(t, "out/history/"+strings.ReplaceAll(t.Name(), "/", "_")))
	if !r.Legal {
		t.Errorf("the history of %d operations is not the shop's: %q; porcupine's view: %v", r.Ops, r.Problems, r.HTML)
	}
}

// A payment whose UPDATE reached MySQL and whose answer was lost (the
// connection cut with it in flight): the shop reads the order again and
// answers 200, paid, rather than 503 for a payment that was made. One
// whose UPDATE never arrived is 503 unavailable, the order still unpaid.
func TestAPaymentWhoseAnswerWasLostIsToldHowItEnded(t *testing.T) {
	e2e.Integration(t)
	for _, reached := range []bool{true, false} {
		t.Run(map[bool]string{true: "the server paid", false: "the payment never arrived"}[reached], func(t *testing.T) {
			s := e2e.NewStack(t, e2e.WithLogLevel("info"))
			s.Shop(t, "migrate")
			s.Shop(t, "stock", "set", "--goods", "1", "--stock", "10", "--clear-orders")
			db := e2e.NewMySQLProxy(t, e2e.MySQLAddr(t, s.DSN))
			in := s.Serve(t, e2e.WithSetting("mysql.dsn", e2e.ViaProxy(t, s.DSN, db.Addr())))
			a, bought := e2e.AskJSON[struct{ OrderID uint64 }](t, http.MethodGet, in.URL+"/goods-stock/1")
			if a.Status != http.StatusOK || bought.OrderID == 0 {
				t.Fatalf("the purchase answered %d %s", a.Status, a.Code)
			}
			pay := db.HoldPacket(isStatement("UPDATE order_info FORCE INDEX (PRIMARY) SET status"), nil)
			done := make(chan e2e.Answer, 1)
			go func() { done <- e2e.Ask(http.MethodPost, fmt.Sprintf("%s/orders/%d/pay", in.URL, bought.OrderID)) }()
			select {
			case <-pay.Held():
			case <-time.After(30 * time.Second):
				t.Fatalf("the payment's UPDATE never came\n%s", in.Logs())
			}
			if reached {
				pay.ReleaseAndCut()
			} else {
				db.Cut()
			}
			// MySQL stays out of reach a moment longer, as after a real
			// blip: the shop's first read of the order fails (its idle
			// connections were cut too, new ones refused) and it must try
			// again rather than answer 503 for a payment that was made.
			time.Sleep(300 * time.Millisecond)
			db.Restore()
			ans := e2e.Await(t, "the payment", done)
			_, o := e2e.AskJSON[struct{ Status string }](t, http.MethodGet, fmt.Sprintf("%s/orders/%d", in.URL, bought.OrderID))
			want := map[bool]string{true: "paid", false: "unpaid"}[reached]
			if o.Status != want {
				t.Fatalf("the order is %q after the fault, want %q", o.Status, want)
			}
			switch {
			case reached && ans.Status != http.StatusOK:
				t.Errorf("a payment that was made answered %d %s, want 200", ans.Status, ans.Code)
			case !reached && ans.Code != "unavailable":
				t.Errorf("a payment that never arrived answered %d %s, want 503 unavailable", ans.Status, ans.Code)
			}
		})
	}
}
