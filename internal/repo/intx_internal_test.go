package repo

import (
	"context"
	"testing"
	"time"
)

// The writes that follow another in one packet write nothing outside a
// transaction (inTxOnly): on Galera a brute-force abort between two
// statements of a packet leaves the later ones to run in autocommit, where
// an allot grant's lease write was seen committed without its goods' row
// decrement. Each write is run here as such a statement would be: in
// autocommit, and must change no row.
func TestPacketWritesOutsideATransactionWriteNothing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s := openMigrated(ctx, t)
	if err := s.SetStock(ctx, 1, 100, StockReset{}); err != nil {
		t.Fatal(err)
	}
	g, err := s.Goods(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := s.OpenLease(ctx, "/test/lease")
	if err != nil {
		t.Fatal(err)
	}
	stock := int32(100)
	claimed := goodsStock{ID: g.ID, GoodsNo: 1, Stock: &stock}
	for _, w := range []struct {
		name string
		stmt string
		args []any
	}{
		{"a put back", string(appendPutBack(nil, 1, 5)), nil},
		{"a grant's take", string(appendTake(nil, g.ID, 5)), nil},
		{"a seed sale's stock write", writeClaimedSQL, []any{99, 7, g.ID, 100, 0}},
		{"an atomic sale's decrement", takeOneSQL, []any{1, time.Now().UTC(), time.Now().UTC()}},
		{"a sale without a lock's stock write", setStockSQL, []any{99, g.ID}},
		{"a return's lease write", leaseWrite, []any{"1:5:0", lease}},
		{"a grant's lease write", leaseWaitingWrite, []any{"1:5:0", "1:1800000000000000:1800000001000000:3", lease}},
		{"a batch's stock write", string(s.appendWriteClaimed(nil, []stockWrite{{read: claimed, stock: 99}}, 7)), nil},
		{"an allot batch's lease write", string(stmtOf(leaseRows{s: s, lease: lease}.write(nil, nil, []stockWrite{{read: claimed, stock: 99}}))), []any{"1:5:1", "", lease}},
	} {
		conn, err := s.sales[0].sql.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := conn.QueryContext(ctx, w.stmt+rowCountSQL, w.args...)
		if err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
		var n int64
		var inTxn bool
		if !rows.Next() {
			t.Fatalf("%s: no answer to the check: %v", w.name, rows.Err())
		}
		err = rows.Scan(&n, &inTxn)
		rows.Close()
		conn.Close()
		if err != nil || n != 0 || inTxn {
			t.Errorf("%s in autocommit: %d rows changed, in a transaction %v (%v); want 0, false", w.name, n, inTxn, err)
		}
	}
	after, err := s.Goods(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	held, open, err := s.LeaseState(ctx, lease)
	if err != nil || after.Stock != 100 || len(held) != 0 || !open {
		t.Errorf("after the writes: stock %d, lease %v open %v (%v); want 100 and an empty open lease", after.Stock, held, open, err)
	}
}

// stmtOf is a write's statement without its arguments: the test gives its
// own.
func stmtOf(q []byte, _ []any) []byte { return q }
