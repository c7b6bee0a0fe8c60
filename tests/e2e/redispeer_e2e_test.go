package e2e

import (
	"net/http"
	"testing"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// make bench-shop's Redis + Lua peer is held to the shop's promises before
// it is measured against it: on two instances, 300 buyers for a stock of
// 50, each design sells exactly 50, every 200 has its order row (the async
// one's once its writer drained at the stop), and the stock in MySQL and in
// Redis agree. The bare handler answers 200 and writes nothing.
func TestRedisPeerIsExact(t *testing.T) {
	const stock, buyers = 50, 300
	for _, mode := range []string{"sync", "async"} {
		t.Run(mode, func(t *testing.T) {
			p := e2e.NewPeer(t, e2e.NewStack(t, e2e.WithLogLevel("info")), mode)
			p.Shop(t, "migrate")
			p.Shop(t, "stock", "set", "--goods", "1", "--stock", "50", "--clear-orders")
			a, b := p.Serve(t), p.Serve(t)
			out := e2e.Buy(t, []string{a.URL, b.URL}, buyers)
			for _, in := range []*e2e.Instance{a, b} {
				if err := in.Stop(t); err != nil {
					t.Fatalf("the %s peer did not stop cleanly: %v\n%s", mode, err, in.Logs())
				}
			}
			left, orders := p.Counts(t)
			t.Logf("%s: statuses %v, codes %v; MySQL stock %d, %d orders; Redis stock %d", mode, out.Status, out.Codes, left, orders, p.RedisStock(t, 1))
			if out.Status[http.StatusOK] != stock || out.Codes["sold_out"] != buyers-stock {
				t.Errorf("statuses %v, codes %v: want %d × 200 and %d sold_out", out.Status, out.Codes, stock, buyers-stock)
			}
			if orders != stock || left != 0 {
				t.Errorf("%d order rows and a stock of %d in MySQL, want %d and 0", orders, left, stock)
			}
			if r := p.RedisStock(t, 1); r != int64(left) {
				t.Errorf("Redis has a stock of %d, MySQL %d", r, left)
			}
		})
	}
	t.Run("bare", func(t *testing.T) {
		p := e2e.NewPeer(t, e2e.NewStack(t, e2e.WithLogLevel("info")), "bare")
		p.Shop(t, "migrate")
		p.Shop(t, "stock", "set", "--goods", "1", "--stock", "5", "--clear-orders")
		in := p.Serve(t)
		out := e2e.Buy(t, []string{in.URL}, 20)
		if out.Status[http.StatusOK] != 20 || out.Codes["ok"] != 20 {
			t.Errorf("bare: %v %v, want 20 × 200 ok", out.Status, out.Codes)
		}
		if left, orders := p.Counts(t); orders != 0 || left != 5 {
			t.Errorf("bare wrote %d orders, left a stock of %d (want none, 5)", orders, left)
		}
	})
}
