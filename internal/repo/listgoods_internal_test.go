package repo

import (
	"context"
	"database/sql"
	"testing"
	"time"
)

// A page of GET /goods costs what it holds, not what lies after it: the
// rows the server reads for a page of one goods (its handler reads, on
// the test's own connection) stay small at 20 000 goods. The query that
// grouped every goods above after read them all, for any limit.
func TestAGoodsPageReadsAboutWhatItHolds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := openMigrated(ctx, t)
	db := s.sales[0].sql
	const goods = 20000
	if _, err := db.ExecContext(ctx, "DELETE FROM goods_stock"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO goods_stock (goods_no, stock, isActive) SELECT seq, 10, 1 FROM seq_1_to_20000"); err != nil {
		t.Fatal(err)
	}
	// A second row of goods 3, after its first: a page shows the first.
	if _, err := db.ExecContext(ctx, "INSERT INTO goods_stock (goods_no, stock, isActive) VALUES (3, 99, 1)"); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, page := range []struct{ after, limit int }{{0, 1}, {2, 2}, {10000, 5}} {
		before := handlerReads(ctx, t, conn)
		rows, err := conn.QueryContext(ctx, listGoodsSQL, page.after, page.limit)
		if err != nil {
			t.Fatal(err)
		}
		var got []int32
		var stocks []int32
		for rows.Next() {
			var g goodsStock
			cols, _ := rows.Columns()
			dest := make([]any, len(cols))
			for i, c := range cols {
				switch c {
				case "goods_no":
					dest[i] = &g.GoodsNo
				case "stock":
					dest[i] = &g.Stock
				default:
					dest[i] = new(any)
				}
			}
			if err := rows.Scan(dest...); err != nil {
				t.Fatal(err)
			}
			got = append(got, g.GoodsNo)
			stocks = append(stocks, *g.Stock)
		}
		rows.Close()
		reads := handlerReads(ctx, t, conn) - before
		if len(got) != page.limit || got[0] != int32(page.after+1) {
			t.Fatalf("after %d, limit %d: goods %v", page.after, page.limit, got)
		}
		if page.after == 2 && stocks[0] != 10 {
			t.Errorf("goods 3 shown with its second row (stock %d), want its first", stocks[0])
		}
		if reads > int64(20*page.limit+20) {
			t.Errorf("after %d, limit %d: the server read %d rows for %d goods (of %d): the page costs what lies after it", page.after, page.limit, reads, page.limit, goods)
		}
	}
}

// handlerReads is the session's rows read so far (its Handler_read_*).
func handlerReads(ctx context.Context, t *testing.T, conn *sql.Conn) int64 {
	t.Helper()
	rows, err := conn.QueryContext(ctx, "SHOW SESSION STATUS LIKE 'Handler_read%'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var sum int64
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		sum += n
	}
	return sum
}
