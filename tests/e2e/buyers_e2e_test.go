package e2e

import (
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// buyerAnswer is a purchase's answer as a buyer reads it.
type buyerAnswer struct {
	status    int
	Code      string     `json:"code"`
	OrderID   uint64     `json:"orderId"`
	Replayed  bool       `json:"replayed"`
	SaleStart *time.Time `json:"saleStart"`
}

// purchaseAs buys goods with the given headers (name, value, ...).
func purchaseAs(t *testing.T, method, url string, hdr ...string) buyerAnswer {
	t.Helper()
	a, body := e2e.AskJSON[buyerAnswer](t, method, url, hdr...)
	body.status = a.Status
	return body
}

// One per buyer, under every strategy, across two instances: 50 buyers try
// 4 times each, 200 purchases at once. Each buyer gets one order; every
// other try is 409 already_bought naming that order, or 429
// too_many_requests when it came while the buyer's purchase was under way
// in that instance (one at a time per buyer): across the instances the
// database's rule is what keeps a buyer to one order.
func TestOnePerBuyerUnderEveryStrategy(t *testing.T) {
	for _, strategy := range []string{"seed", "batch", "atomic"} {
		t.Run(strategy, func(t *testing.T) {
			s := e2e.NewStack(t, e2e.WithStrategy(strategy), e2e.WithMaxSleep(2*time.Millisecond), e2e.WithAcquireTimeout(2*time.Minute))
			s.Shop(t, "migrate")
			s.Shop(t, "stock", "set", "--goods", "1", "--stock", "100", "--clear-orders")
			a, b := s.Serve(t), s.Serve(t)
			const buyers, tries = 50, 4
			answers := make([]buyerAnswer, buyers*tries)
			var wg sync.WaitGroup
			start := make(chan struct{})
			for i := range answers {
				wg.Go(func() {
					<-start
					base := []string{a.URL, b.URL}[i%2]
					method := []string{http.MethodGet, http.MethodPost}[i/2%2]
					answers[i] = purchaseAs(t, method, base+"/goods-stock/1", "X-User-ID", fmt.Sprint("buyer-", i%buyers))
				})
			}
			close(start)
			wg.Wait()
			orderOf := map[int]uint64{}
			for i, ans := range answers {
				if ans.status == http.StatusOK {
					if _, twice := orderOf[i%buyers]; twice {
						t.Fatalf("buyer %d bought twice", i%buyers)
					}
					orderOf[i%buyers] = ans.OrderID
				}
			}
			for i, ans := range answers {
				switch {
				case ans.status == http.StatusOK:
				case ans.status == http.StatusTooManyRequests && ans.Code == "too_many_requests":
				case ans.status == http.StatusConflict && ans.Code == "already_bought":
					if ans.OrderID == 0 || ans.OrderID != orderOf[i%buyers] {
						t.Errorf("buyer %d told already_bought with order %d, bought order %d", i%buyers, ans.OrderID, orderOf[i%buyers])
					}
				default:
					t.Errorf("buyer %d: %d %s", i%buyers, ans.status, ans.Code)
				}
			}
			if len(orderOf) != buyers {
				t.Errorf("%d buyers bought, want %d", len(orderOf), buyers)
			}
			if stock, orders := s.Counts(t); stock != 100-buyers || orders != buyers {
				t.Errorf("stock %d with %d orders, want %d and %d", stock, orders, 100-buyers, buyers)
			}
		})
	}
}

// A retried purchase whose answer was lost gets the same order back
// (replayed), never a second one; the request id reused for another goods
// is a conflict. A sold-out goods does not hide the replay. A retry and a
// new buyer at once: under batch and allot the INSERT of the retry's batch
// finds its id taken, and the batch, once more with the ids looked up,
// replays the retry and sells to the new buyer if it is in the same batch.
func TestRepeatedRequestIsReplayed(t *testing.T) {
	for _, strategy := range []string{"seed", "batch", "allot"} {
		t.Run(strategy, func(t *testing.T) {
			s := e2e.NewStack(t, e2e.WithStrategy(strategy))
			s.Shop(t, "migrate")
			s.Shop(t, "stock", "set", "--goods", "1", "--stock", "1", "--clear-orders")
			s.Shop(t, "stock", "set", "--goods", "2", "--stock", "5", "--clear-orders")
			in := s.Serve(t)
			first := purchaseAs(t, http.MethodPost, in.URL+"/goods-stock/1", "X-Request-ID", "retry-me")
			if first.status != 200 || first.Replayed {
				t.Fatalf("first purchase: %+v", first)
			}
			if other := purchaseAs(t, http.MethodGet, in.URL+"/goods-stock/1"); other.status != 409 || other.Code != "sold_out" {
				t.Fatalf("the next buyer: %+v, want sold_out", other)
			}
			again := purchaseAs(t, http.MethodPost, in.URL+"/goods-stock/1", "X-Request-ID", "retry-me")
			if again.status != 200 || !again.Replayed || again.OrderID != first.OrderID {
				t.Fatalf("the retry: %+v, want 200 replayed with order %d", again, first.OrderID)
			}
			if c := purchaseAs(t, http.MethodPost, in.URL+"/goods-stock/2", "X-Request-ID", "retry-me"); c.status != 409 || c.Code != "request_id_conflict" {
				t.Fatalf("the id for another goods: %+v, want 409 request_id_conflict", c)
			}
			// A retry and a new buyer at once, of goods 2 (in stock).
			if a := purchaseAs(t, http.MethodPost, in.URL+"/goods-stock/2", "X-Request-ID", "two-first"); a.status != 200 || a.Replayed {
				t.Fatalf("goods 2's first buyer: %+v", a)
			}
			var retry, fresh buyerAnswer
			var wg sync.WaitGroup
			wg.Go(func() { retry = purchaseAs(t, http.MethodPost, in.URL+"/goods-stock/2", "X-Request-ID", "two-first") })
			wg.Go(func() { fresh = purchaseAs(t, http.MethodPost, in.URL+"/goods-stock/2", "X-Request-ID", "two-second") })
			wg.Wait()
			if retry.status != 200 || !retry.Replayed || fresh.status != 200 || fresh.Replayed {
				t.Fatalf("a retry beside a new buyer: %+v and %+v, want the one replayed, the other sold", retry, fresh)
			}
			stock, orders := s.GoodsCounts(t)
			if stock[1] != 0 || orders[1] != 1 || stock[2] != 3 || orders[2] != 2 {
				t.Errorf("stock %v with orders %v, want goods 1 0 and 1, goods 2 3 and 2", stock, orders)
			}
		})
	}
}

// The sale window: one second before the start the buyer hears
// not_started and when; at and after the start the sale is open; at the end
// it is over. seed checks it before the lock (the shop reads the row once
// per goods and second); batch lets a goods' first buyers in unread, and
// its claim refuses them and tells the shop the window.
func TestSaleWindowEdges(t *testing.T) {
	for _, strategy := range []string{"seed", "batch"} {
		t.Run(strategy, func(t *testing.T) {
			s, buy, start := windowedSale(t, "+3s", "+6s", e2e.WithStrategy(strategy))
			sleepUntil(start.Add(-time.Second))
			if a := buy(); a.Code != "not_started" {
				t.Fatalf("one second before the start: %+v", a)
			}
			sleepUntil(start)
			if a := buy(); a.status != 200 {
				t.Fatalf("at the start: %+v, want 200", a)
			}
			sleepUntil(start.Add(time.Second))
			if a := buy(); a.status != 200 {
				t.Fatalf("after the start: %+v, want 200", a)
			}
			sleepUntil(start.Add(3 * time.Second)) // the end
			if a := buy(); a.status != 409 || a.Code != "ended" {
				t.Fatalf("at the end: %+v, want 409 ended", a)
			}
			if stock, orders := s.Counts(t); stock != 8 || orders != 2 {
				t.Errorf("stock %d with %d orders, want 8 and 2", stock, orders)
			}
		})
	}
}

func sleepUntil(t time.Time) { time.Sleep(time.Until(t)) }

// windowOnly is the sale window without the waiting room: a buyer before
// the start hears 409 not_started, not a place in the room's pre-queue
// (room_e2e_test.go tests that).
var windowOnly = e2e.WithRoom(false)

// windowedSale serves goods 1, stock 10, on an instance of a stack with env,
// its sale window from start to end (stock set's --start and --end), and
// checks that a buyer before the start hears 409 not_started and when it
// starts. It returns the stack, a buyer of goods 1 and the start.
func windowedSale(t *testing.T, start, end string, env ...e2e.Option) (e2e.Stack, func() buyerAnswer, time.Time) {
	t.Helper()
	s := e2e.NewStack(t, append([]e2e.Option{windowOnly}, env...)...)
	s.Shop(t, "migrate")
	in := s.Serve(t)
	// --no-wait: the window is seconds away; the goods never sold out, so
	// no instance holds a mark to wait out.
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "10", "--clear-orders", "--start", start, "--end", end, "--no-wait")
	buy := func() buyerAnswer { return purchaseAs(t, http.MethodGet, in.URL+"/goods-stock/1") }
	before := buy()
	if before.status != 409 || before.Code != "not_started" || before.SaleStart == nil {
		t.Fatalf("before the start: %+v, want 409 not_started with the start", before)
	}
	return s, buy, *before.SaleStart
}

// The window as the row has it decides, under every strategy: the shop's
// cached window (trusted for a second) may refuse early but never admits a
// buyer the row refuses. A window closed right after a buyer cached it open,
// a goods idle past the cache when its window ended, a start moved ahead,
// and a reopened window, which shows as soon as the cache is a second old.
func TestTheRowsSaleWindowDecidesUnderEveryStrategy(t *testing.T) {
	for _, strategy := range []string{"seed", "batch", "atomic"} {
		t.Run(strategy, func(t *testing.T) {
			t.Parallel() // each on a database and lock paths of its own; most of it is sleeps
			s := e2e.NewStack(t, e2e.WithStrategy(strategy), windowOnly)
			s.Shop(t, "migrate")
			s.Shop(t, "stock", "set", "--goods", "1", "--stock", "10", "--clear-orders", "--start", "none", "--end", "none")
			in := s.Serve(t)
			buy := func() buyerAnswer { return purchaseAs(t, http.MethodGet, in.URL+"/goods-stock/1") }
			if a := buy(); a.status != 200 {
				t.Fatalf("open window: %+v, want 200", a)
			}
			sold := 1

			// Ended at once: the instance has the window cached open.
			s.Shop(t, "stock", "set", "--goods", "1", "--stock", "9", "--end", "+0s")
			if a := buy(); a.status != 409 || a.Code != "ended" {
				t.Errorf("right after the end, window cached open: %+v, want 409 ended", a)
			}
			// Reopened: the first buyer a second later buys.
			reopen := func(stock string) {
				s.Shop(t, "stock", "set", "--goods", "1", "--stock", stock, "--end", "none")
				time.Sleep(1500 * time.Millisecond)
				if a := buy(); a.status != 200 {
					t.Errorf("reopened 1.5 s ago: %+v, want 200", a)
				} else {
					sold++
				}
			}
			// Reopened, and ended again with the goods idle past the cache.
			reopen("9")
			s.Shop(t, "stock", "set", "--goods", "1", "--stock", "8", "--end", "+1s")
			time.Sleep(2500 * time.Millisecond)
			if a := buy(); a.status != 409 || a.Code != "ended" {
				t.Errorf("ended while the goods was idle past the cache: %+v, want 409 ended", a)
			}
			// A start moved ahead while the window is cached open.
			reopen("8")
			s.Shop(t, "stock", "set", "--goods", "1", "--stock", "7", "--start", "+1h")
			if a := buy(); a.status != 409 || a.Code != "not_started" {
				t.Errorf("start moved an hour ahead, window cached open: %+v, want 409 not_started", a)
			}
			if stock, orders := s.Counts(t); stock != 7 || orders != sold {
				t.Errorf("stock %d with %d orders, want 7 and %d", stock, orders, sold)
			}
		})
	}
}

// A window that would end before it starts is refused (exit 2) and changes
// nothing, also when one bound is the row's.
func TestAnEmptySaleWindowIsRefused(t *testing.T) {
	s := e2e.NewStack(t)
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "10", "--start", "none", "--end", "none")
	for _, args := range [][]string{
		{"--start", "+10m", "--end", "+5m"},
		{"--start", "+10m", "--end", "+10m"},
	} {
		out, code := s.ShopExit(t, append([]string{"stock", "set", "--goods", "1", "--stock", "3"}, args...)...)
		if code != 2 || !strings.Contains(out, "empty") {
			t.Errorf("stock set %v: exit %d, want 2 naming the empty window\n%s", args, code, out)
		}
	}
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "10", "--start", "+10m")
	if out, code := s.ShopExit(t, "stock", "set", "--goods", "1", "--stock", "3", "--end", "+5m"); code != 2 {
		t.Errorf("--end before the row's start: exit %d, want 2\n%s", code, out)
	}
	if stock, _ := s.Counts(t); stock != 10 {
		t.Errorf("stock %d after the refused changes, want 10", stock)
	}
}

// An expired order frees its buyer: once the sweeper has returned the piece,
// the buyer may buy again.
func TestAnExpiredOrderFreesTheBuyer(t *testing.T) {
	s := e2e.NewStack(t, e2e.WithPayTimeout(time.Second), e2e.WithSweepInterval(100*time.Millisecond))
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "1", "--clear-orders")
	in := s.Serve(t)
	buy := func() buyerAnswer {
		return purchaseAs(t, http.MethodGet, in.URL+"/goods-stock/1", "X-User-ID", "alice")
	}
	first := buy()
	if first.status != 200 {
		t.Fatalf("first: %+v", first)
	}
	if again := buy(); again.status != 409 || again.Code != "already_bought" || again.OrderID != first.OrderID {
		t.Fatalf("again before expiry: %+v, want already_bought with order %d", again, first.OrderID)
	}
	var later buyerAnswer
	if !e2e.WaitUntil(30*time.Second, func() bool { later = buy(); return later.status == 200 }) {
		t.Fatalf("after the order expired: %+v, want 200", later)
	}
	if later.OrderID == first.OrderID {
		t.Fatalf("the new purchase has the expired order's id %d", later.OrderID)
	}
}

// stock set --start none and --end none clear their side of the window
// (and leave the other as it was).
func TestStockSetNoneClearsItsSideOfTheWindow(t *testing.T) {
	s := e2e.NewStack(t, windowOnly)
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "10", "--clear-orders", "--start", "+1h", "--end", "+2h")
	in := s.Serve(t)
	buy := func() buyerAnswer { return purchaseAs(t, http.MethodGet, in.URL+"/goods-stock/1") }
	if a := buy(); a.Code != "not_started" {
		t.Fatalf("before the start: %+v, want not_started", a)
	}
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "10", "--start", "none")
	if start, end := window(t, s); start != "NULL" || end == "NULL" {
		t.Fatalf("after --start none: the row's window is %s to %s, want NULL to the end set before", start, end)
	}
	time.Sleep(1500 * time.Millisecond) // the instance's copy of the window is a second old
	if a := buy(); a.status != 200 {
		t.Fatalf("after --start none: %+v, want 200 (the end, an hour away, left as it was)", a)
	}
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "9", "--end", "+0s")
	if a := buy(); a.Code != "ended" {
		t.Fatalf("after --end +0s: %+v, want ended", a)
	}
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "9", "--end", "none")
	if start, end := window(t, s); start != "NULL" || end != "NULL" {
		t.Fatalf("after --end none: the row's window is %s to %s, want NULL to NULL", start, end)
	}
	time.Sleep(1500 * time.Millisecond)
	if a := buy(); a.status != 200 {
		t.Fatalf("after --end none: %+v, want 200", a)
	}
}

// window reads goods 1's sale window from its row: each bound, or NULL.
func window(t *testing.T, s e2e.Stack) (start, end string) {
	t.Helper()
	db, err := sql.Open("mysql", s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var a, b sql.NullString
	if err := db.QueryRow("SELECT sale_start, sale_end FROM goods_stock WHERE goods_no = 1").Scan(&a, &b); err != nil {
		t.Fatal(err)
	}
	start, end = "NULL", "NULL"
	if a.Valid {
		start = a.String
	}
	if b.Valid {
		end = b.String
	}
	return start, end
}

// The goods on sale are listed (GET /goods, a page at a time, and shop
// stock list) and removed with their orders (shop stock remove).
func TestGoodsAreListedAndRemoved(t *testing.T) {
	s := e2e.NewStack(t)
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1-3", "--stock", "5", "--clear-orders")
	in := s.Serve(t)
	if a := purchaseAs(t, http.MethodGet, in.URL+"/goods-stock/2"); a.status != 200 {
		t.Fatalf("a purchase of goods 2: %+v", a)
	}
	type page struct {
		Goods []struct {
			GoodsNo  int32 `json:"goodsNo"`
			Stock    int32 `json:"stock"`
			IsActive bool  `json:"isActive"`
		} `json:"goods"`
		Next int32 `json:"next"`
	}
	a, p := e2e.AskJSON[page](t, http.MethodGet, in.URL+"/goods?limit=2")
	if a.Status != 200 || len(p.Goods) != 2 || p.Goods[0].GoodsNo != 1 || p.Goods[1].Stock != 4 || !p.Goods[1].IsActive || p.Next != 2 {
		t.Fatalf("GET /goods?limit=2: %d %+v", a.Status, p)
	}
	if a, p := e2e.AskJSON[page](t, http.MethodGet, fmt.Sprintf("%s/goods?after=%d", in.URL, p.Next)); a.Status != 200 || len(p.Goods) != 1 || p.Goods[0].GoodsNo != 3 || p.Next != 0 {
		t.Fatalf("the next page: %d %+v", a.Status, p)
	}
	out, code := s.ShopExit(t, "stock", "list")
	if code != 0 || strings.Count(out, "\n") < 4 || !strings.Contains(out, "2      4") {
		t.Fatalf("shop stock list: exit %d\n%s", code, out)
	}
	if out, code := s.ShopExit(t, "stock", "remove", "--goods", "2-3"); code == 0 || !strings.Contains(out, "goods 2 has 1 orders") || !strings.Contains(out, "--with-orders") {
		t.Fatalf("shop stock remove of goods with an order, without --with-orders: exit %d\n%s", code, out)
	}
	if out, code := s.ShopExit(t, "stock", "remove", "--goods", "2-3", "--with-orders"); code != 0 || !strings.Contains(out, "removed 2 goods rows") {
		t.Fatalf("shop stock remove --with-orders: exit %d\n%s", code, out)
	}
	if a, p := e2e.AskJSON[page](t, http.MethodGet, in.URL+"/goods"); a.Status != 200 || len(p.Goods) != 1 || p.Goods[0].GoodsNo != 1 {
		t.Fatalf("GET /goods after the removal: %d %+v", a.Status, p)
	}
	if _, orders := s.GoodsCounts(t); orders[2] != 0 {
		t.Errorf("goods 2's orders after its removal: %d", orders[2])
	}
	if a := purchaseAs(t, http.MethodGet, in.URL+"/goods-stock/2"); a.status != 404 {
		t.Errorf("a purchase of removed goods 2: %+v, want 404", a)
	}
}
