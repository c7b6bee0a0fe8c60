package repo_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/seckill-zk/seckill-zk/internal/repo"
	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// On one server a batch whose orders went in first sends its COMMIT in the
// packet of its stock's write: three round trips a hold, not four, and no
// count of its orders after the commit (the claim's row locks make every
// answer of that packet certain). Seen by a MySQL proxy of the test's own,
// for a batch of one goods and one of three.
func TestABatchCommitsInItsWritesPacket(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, proxy, _ := storeViaProxy(t)
	for g := int32(1); g <= 3; g++ {
		if err := s.SetStock(ctx, g, 100, repo.StockReset{}); err != nil {
			t.Fatal(err)
		}
	}
	packets := recordPackets(proxy, func(q []byte) string {
		switch {
		case bytes.Contains(q, []byte("INSERT INTO order_info")) && bytes.Contains(q, []byte("FOR UPDATE")):
			return "insert+claim"
		case bytes.HasPrefix(q, []byte("UPDATE goods_stock")) && bytes.HasSuffix(q, []byte("; COMMIT")):
			return "update+commit"
		case bytes.HasPrefix(q, []byte("UPDATE goods_stock")):
			return "update"
		case bytes.HasPrefix(q, []byte("COMMIT")):
			return "commit"
		}
		return ""
	})
	for i, goods := range [][]int32{{1}, {1, 2, 3}} {
		orders, sent := packets.sellBatch(ctx, t, s, goods, fmt.Sprintf("fold-%d", i))
		if !slices.Equal(sent, []string{"insert+claim", "update+commit"}) {
			t.Errorf("a batch of goods %v sent %q, want its INSERT with its claim, then its UPDATE with its COMMIT", goods, sent)
		}
		for _, o := range orders {
			got, found, err := s.OrderByRequestID(ctx, o.Key())
			if err != nil || !found || got.ID != o.ID {
				t.Errorf("order %s after the batch: %+v found %v err %v, want id %d committed", o.RequestID, got, found, err, o.ID)
			}
		}
	}
	assertStocks(ctx, t, s, map[int32]int32{1: 98, 2: 99, 3: 99})
}

// A statement the server refuses in the packet that carries the COMMIT
// stops the packet there: the COMMIT did not run, so the batch rolls back
// and fails with the refusal, known not to have sold (not "outcome
// unknown"), and its connection goes back to the pool with nothing open.
// The refusal here is a lock wait timeout (an error that, cut off, would
// leave the outcome unknown), raised by a trigger of the test's own on the
// stock's UPDATE.
func TestABatchRefusedInItsCommitPacketSellsNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, db := storeAndDB(ctx, t, 1, 8)
	if _, err := db.ExecContext(ctx, `CREATE TRIGGER refuse_seven BEFORE UPDATE ON goods_stock FOR EACH ROW
		BEGIN IF NEW.stock = 7 THEN SIGNAL SQLSTATE 'HY000' SET MYSQL_ERRNO = 1205, MESSAGE_TEXT = 'refused by the test'; END IF; END`); err != nil {
		t.Fatal(err)
	}
	o := &service.Order{GoodsNo: 1, RequestID: "refused", NewRequestID: true}
	_, err := sellBatch(ctx, s, 1, []*service.Order{o}, sellAll, noGuard, nil)
	if !errors.Is(err, service.ErrUnavailable) || errors.Is(err, service.ErrCommitUnknown) {
		t.Fatalf("a batch whose UPDATE the server refused (a lock wait timeout): %v, want ErrUnavailable, not an unknown outcome", err)
	}
	assertStocks(ctx, t, s, map[int32]int32{1: 8})
	assertOrderRows(ctx, t, db, 0)
	if _, err := db.ExecContext(ctx, "DROP TRIGGER refuse_seven"); err != nil {
		t.Fatal(err)
	}
	// The pool's connections, the refused batch's among them, sell on, and
	// nothing of the refused batch comes back with them (a transaction left
	// open would be committed by the next one's START TRANSACTION).
	for i := range 4 {
		o := &service.Order{GoodsNo: 1, RequestID: fmt.Sprintf("after-%d", i), NewRequestID: true}
		if _, err := sellBatch(ctx, s, 1, []*service.Order{o}, sellAll, noGuard, nil); err != nil {
			t.Fatalf("batch %d after the refused one: %v", i, err)
		}
	}
	assertStocks(ctx, t, s, map[int32]int32{1: 4})
	assertOrderRows(ctx, t, db, 4)
}

// A batch whose packet with the COMMIT reached the server but whose answer
// never came back (the connection cut after the packet) may have sold: its
// error is service.ErrCommitUnknown, so that the shop looks its orders up,
// not a lost connection that "wrote nothing".
func TestABatchCutOffAfterItsCommitPacketIsUnknown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, proxy, dsn := storeViaProxy(t)
	if err := s.SetStock(ctx, 1, 10, repo.StockReset{}); err != nil {
		t.Fatal(err)
	}
	commit := proxy.HoldPacket(func(payload []byte) bool {
		return len(payload) > 0 && payload[0] == 0x03 && bytes.HasSuffix(payload, []byte("; COMMIT"))
	}, nil)
	o := &service.Order{GoodsNo: 1, RequestID: "cut", NewRequestID: true}
	sold := make(chan error, 1)
	go func() {
		_, err := sellBatch(ctx, s, 1, []*service.Order{o}, sellAll, noGuard, nil)
		sold <- err
	}()
	select {
	case <-commit.Held():
	case err := <-sold:
		t.Fatalf("the batch ended (%v) before its packet with the COMMIT", err)
	case <-ctx.Done():
		t.Fatal("no packet with a COMMIT in a minute")
	}
	commit.ReleaseAndCut()
	proxy.Restore()
	select {
	case err := <-sold:
		if !errors.Is(err, service.ErrCommitUnknown) {
			t.Fatalf("a batch cut off after its COMMIT went out: %v, want ErrCommitUnknown", err)
		}
	case <-ctx.Done():
		t.Fatal("the batch did not end in a minute after its connection was cut")
	}
	// Whether the server committed is what is unknown (it may have met the
	// closed connection before the COMMIT); either way the batch is whole.
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var orders, stock int
	if err := db.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM order_info), (SELECT stock FROM goods_stock WHERE goods_no = 1)").
		Scan(&orders, &stock); err != nil {
		t.Fatal(err)
	}
	if orders > 1 || orders+stock != 10 {
		t.Fatalf("after the cut-off batch: %d order rows and stock %d, want 1 and 9 or 0 and 10", orders, stock)
	}
}

// storeViaProxy opens a migrated store on a database of the test's own
// through a MySQL proxy of the test's own; dsn is the database's, direct.
func storeViaProxy(t *testing.T) (s *repo.Store, proxy *e2e.Proxy, dsn string) {
	t.Helper()
	dsn = e2e.Database(t)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy = e2e.NewMySQLProxy(t, cfg.Addr)
	via := cfg.Clone()
	via.Addr = proxy.Addr()
	return openMigrated(t, via.FormatDSN()), proxy, dsn
}

// packetRecorder notes, of each query packet a MySQL proxy passes, what
// its kind function says it holds (packets of no interest: "").
type packetRecorder struct {
	kind func(q []byte) string
	mu   sync.Mutex
	sent []string
}

// recordPackets has proxy note the query packets that pass it; it holds
// none.
func recordPackets(proxy *e2e.Proxy, kind func(q []byte) string) *packetRecorder {
	r := &packetRecorder{kind: kind}
	proxy.HoldPacket(func(payload []byte) bool {
		if len(payload) == 0 || payload[0] != 0x03 { // COM_QUERY
			return false
		}
		if k := r.kind(payload[1:]); k != "" {
			r.mu.Lock()
			r.sent = append(r.sent, k)
			r.mu.Unlock()
		}
		return false
	}, nil)
	return r
}

// sellBatch sells a batch of one order of each of goods (request ids the
// shop made, prefix-goodsNo) under fence 1, everyone chosen, and returns
// its orders and the kinds of the packets it sent.
func (r *packetRecorder) sellBatch(ctx context.Context, t *testing.T, s *repo.Store, goods []int32, prefix string) ([]*service.Order, []string) {
	t.Helper()
	r.mu.Lock()
	r.sent = nil
	r.mu.Unlock()
	var orders []*service.Order
	for _, g := range goods {
		orders = append(orders, &service.Order{GoodsNo: g, RequestID: fmt.Sprintf("%s-%d", prefix, g), NewRequestID: true})
	}
	if _, err := sellBatch(ctx, s, 1, orders, sellAll, noGuard, nil); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return orders, slices.Clone(r.sent)
}

// assertStocks checks the stock of each goods.
func assertStocks(ctx context.Context, t *testing.T, s *repo.Store, want map[int32]int32) {
	t.Helper()
	for no, stock := range want {
		g, err := s.Goods(ctx, no)
		if err != nil {
			t.Fatal(err)
		}
		if g.Stock != stock {
			t.Errorf("goods %d: stock %d, want %d", no, g.Stock, stock)
		}
	}
}

// assertOrderRows checks how many order rows the database holds.
func assertOrderRows(ctx context.Context, t *testing.T, db *sql.DB, want int) {
	t.Helper()
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM order_info").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != want {
		t.Errorf("%d order rows, want %d", n, want)
	}
}
