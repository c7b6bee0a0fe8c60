package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// skewedPair is a stack whose orders expire 4 s after their purchase, with
// two instances: N, whose clock is this machine's and which sweeps (it was
// elected first), and S, whose clock is off by skew (clock.offset, the seam
// the shipped clock reads through) and goes by source (clock.source).
type skewedPair struct {
	e2e.Stack
	n, s *e2e.Instance
}

const skewPayTimeout = 4 * time.Second

func newSkewedPair(t *testing.T, skew time.Duration, source string) skewedPair {
	t.Helper()
	st := e2e.NewStack(t, e2e.WithSetting("orders.payTimeout", skewPayTimeout.String()), e2e.WithSweepInterval(200*time.Millisecond), e2e.WithLogLevel("info"), windowOnly)
	st.Shop(t, "migrate")
	p := skewedPair{Stack: st, n: st.Serve(t)}
	if !e2e.WaitUntil(30*time.Second, func() bool { return strings.Contains(p.n.Logs(), "leading: this instance sweeps") }) {
		t.Fatalf("N did not lead the sweeper within 30s\n%s", p.n.Logs())
	}
	p.s = st.Serve(t, e2e.WithSetting("clock.offset", skew.String()), e2e.WithSetting("clock.source", source))
	return p
}

// order reads order id's status at the instance base.
func orderStatus(t *testing.T, base string, id uint64) string {
	t.Helper()
	a, body := e2e.AskJSON[struct{ Status string }](t, http.MethodGet, fmt.Sprintf("%s/orders/%d", base, id))
	if a.Status != http.StatusOK {
		t.Fatalf("order %d at %s: %d %s", id, base, a.Status, a.Code)
	}
	return body.Status
}

// An instance whose machine's clock is 5 s off goes by MySQL's clock
// (clock.source=mysql, the default): it sells neither before the sale's
// start (5 s fast) nor after its end (5 s slow), the orders it places are
// not expired early by another instance's sweeper, and it does not refuse
// the payment of a live order. With clock.source=local (the guard removed:
// each instance goes by its own machine's clock) each of these goes wrong,
// and the test shows it.
func TestAnInstanceWhoseClockIsOffGoesByMySQLs(t *testing.T) {
	for _, source := range []string{"mysql", "local"} {
		follows := source == "mysql"
		t.Run("5s fast, "+source, func(t *testing.T) {
			p := newSkewedPair(t, 5*time.Second, source)
			// The sale starts in 3 s: S's machine says it has begun.
			p.Shop(t, "stock", "set", "--goods", "1", "--stock", "10", "--clear-orders", "--start", "+3s", "--end", "+60s", "--no-wait")
			early := purchaseAs(t, http.MethodGet, p.s.URL+"/goods-stock/1")
			if follows && (early.status != http.StatusConflict || early.Code != "not_started") {
				t.Errorf("S, 3 s before the start: %d %s, want 409 not_started", early.status, early.Code)
			}
			if !follows && early.status != http.StatusOK {
				t.Errorf("S on its own clock, 3 s before the start: %d %s; the test expects the early sale it shows", early.status, early.Code)
			}
			// A buyer at N after the start pays at S a second later: S's
			// machine says the order is 6 s old, past its 4 s.
			start, _ := saleWindowAt(t, p.n.URL)
			time.Sleep(time.Until(when(t, start, "start")))
			bought := purchaseAs(t, http.MethodGet, p.n.URL+"/goods-stock/1")
			if bought.status != http.StatusOK {
				t.Fatalf("N after the start: %d %s, want 200", bought.status, bought.Code)
			}
			time.Sleep(time.Second)
			pay := e2e.Ask(http.MethodPost, fmt.Sprintf("%s/orders/%d/pay", p.s.URL, bought.OrderID))
			if follows && pay.Status != http.StatusOK {
				t.Errorf("S paying a 1 s old order (4 s to pay): %d %s, want 200", pay.Status, pay.Code)
			}
			if !follows && pay.Code != "order_expired" {
				t.Errorf("S on its own clock paying a 1 s old order: %d %s; the test expects the early refusal it shows", pay.Status, pay.Code)
			}
		})
		t.Run("5s slow, "+source, func(t *testing.T) {
			p := newSkewedPair(t, -5*time.Second, source)
			p.Shop(t, "stock", "set", "--goods", "1", "--stock", "10", "--clear-orders", "--end", "+3s", "--no-wait")
			// S places an order: on S's machine's clock it is 5 s old
			// already, past N's sweeper's 4 s.
			bought := purchaseAs(t, http.MethodGet, p.s.URL+"/goods-stock/1")
			if bought.status != http.StatusOK {
				t.Fatalf("S in the sale: %d %s, want 200", bought.status, bought.Code)
			}
			time.Sleep(time.Second) // five sweeps
			status := orderStatus(t, p.n.URL, bought.OrderID)
			if follows && status != "unpaid" {
				t.Errorf("S's order, 1 s old (4 s to pay), is %s at N, want unpaid", status)
			}
			if !follows && status != "expired" {
				t.Errorf("S's order on S's own clock, 1 s old: %s; the test expects the early expiry it shows", status)
			}
			// The sale ends 3 s after it was set: S's machine says 2 s remain.
			_, end := saleWindowAt(t, p.n.URL)
			time.Sleep(time.Until(when(t, end, "end")) + 500*time.Millisecond)
			late := purchaseAs(t, http.MethodGet, p.s.URL+"/goods-stock/1")
			if follows && (late.status != http.StatusConflict || late.Code != "ended") {
				t.Errorf("S after the end: %d %s, want 409 ended", late.status, late.Code)
			}
			if !follows && late.status != http.StatusOK {
				t.Errorf("S on its own clock after the end: %d %s; the test expects the late sale it shows", late.status, late.Code)
			}
		})
	}
}

// saleWindowAt reads goods 1's sale window at base.
func saleWindowAt(t *testing.T, base string) (start, end *time.Time) {
	t.Helper()
	a, g := e2e.AskJSON[struct {
		SaleStart *time.Time `json:"saleStart"`
		SaleEnd   *time.Time `json:"saleEnd"`
	}](t, http.MethodGet, base+"/goods/1")
	if a.Status != http.StatusOK {
		t.Fatalf("goods 1 at %s: %d %s", base, a.Status, a.Code)
	}
	return g.SaleStart, g.SaleEnd
}

// when is the window's bound p, named what, which must be set.
func when(t *testing.T, p *time.Time, what string) time.Time {
	t.Helper()
	if p == nil {
		t.Fatalf("goods 1 has no sale %s", what)
	}
	return *p
}
