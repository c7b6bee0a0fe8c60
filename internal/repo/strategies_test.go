package repo_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/repo"
	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

func TestSellAtomic(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := s.SetStock(ctx, 1, 2, repo.StockReset{}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		o := &service.Order{GoodsNo: 1, RequestID: id}
		if err := s.SellAtomic(ctx, o); err != nil || o.ID == 0 {
			t.Fatalf("sell %s: %v (id %d)", id, err, o.ID)
		}
	}
	for _, tc := range []struct {
		order service.Order
		want  error
	}{
		{service.Order{GoodsNo: 1, RequestID: "c"}, service.ErrSoldOut},
		{service.Order{GoodsNo: 42, RequestID: "d"}, service.ErrNotFound},
		{service.Order{GoodsNo: 1, RequestID: "a"}, service.ErrDuplicateRequest},
	} {
		if err := s.SellAtomic(ctx, &tc.order); !errors.Is(err, tc.want) {
			t.Errorf("%+v: %v, want %v", tc.order, err, tc.want)
		}
	}
	assertState(t, s, 0, 2)
}

func TestSellBatch(t *testing.T) {
	ctx := context.Background()
	s := newStore(t)
	if err := s.SetStock(ctx, 1, 3, repo.StockReset{}); err != nil {
		t.Fatal(err)
	}
	if err := sellFenced(ctx, s, 1, 1, &service.Order{GoodsNo: 1, RequestID: "old"}, minusOne, noGuard); err != nil {
		t.Fatal(err)
	}
	var orders []*service.Order
	for _, id := range []string{"old", "x", "x", "y", "z"} {
		orders = append(orders, &service.Order{GoodsNo: 1, RequestID: id})
	}
	var offered []*service.Order
	firstStock := func(g service.Goods, candidates []*service.Order) ([]*service.Order, error) {
		offered = candidates
		return candidates[:min(int(g.Stock), len(candidates))], nil
	}
	refused, err := sellBatch(ctx, s, 5, orders, firstStock, noGuard, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(refused) != 2 || !errors.Is(refused[orders[0]], service.ErrDuplicateRequest) || !errors.Is(refused[orders[2]], service.ErrDuplicateRequest) {
		t.Errorf("refused %v, want the order of the used id and the second x", refused)
	}
	if len(offered) != 3 {
		t.Errorf("%d candidates offered, want x, y, z", len(offered))
	}
	if orders[1].ID == 0 || orders[3].ID == 0 || orders[4].ID != 0 || orders[1].ID == orders[3].ID {
		t.Errorf("order ids %d %d %d: want x and y sold with their own ids, z not", orders[1].ID, orders[3].ID, orders[4].ID)
	}
	assertState(t, s, 0, 3)
	if _, err := sellBatch(ctx, s, 4, orders[4:], firstStock, noGuard, nil); !errors.Is(err, service.ErrFenced) {
		t.Errorf("a batch under an older token: %v, want ErrFenced", err)
	}
}

// A batch of several goods locks their rows and no other: a locking read of
// another goods during the batch's transaction is not made to wait. Once the
// claim of 50 goods of 200 went by a full scan of the table and locked
// every row; this fails then.
func TestSellBatchLocksOnlyItsGoods(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, db := storeAndDB(ctx, t, 200, 10)
	if _, err := db.ExecContext(ctx, "ANALYZE TABLE goods_stock"); err != nil {
		t.Fatal(err)
	}
	// The first batch claims through the goods index, the second by the
	// rows' primary keys (the store remembers them).
	for _, batch := range []string{"first", "second"} {
		var orders []*service.Order
		for g := int32(1); g <= 100; g += 2 { // 50 odd goods
			orders = append(orders, &service.Order{GoodsNo: g, RequestID: fmt.Sprint("locks-only-", batch, g)})
		}
		probed := false
		probe := func(g service.Goods, candidates []*service.Order) ([]*service.Order, error) {
			if !probed { // inside the batch's transaction, after its claim
				probed = true
				for _, other := range []int32{2, 150} {
					var stock int
					err := db.QueryRowContext(ctx, "SELECT stock FROM goods_stock WHERE goods_no = ? FOR UPDATE NOWAIT", other).Scan(&stock)
					if err != nil {
						t.Errorf("%s batch: goods %d, not in the batch, is locked by it: %v", batch, other, err)
					}
				}
			}
			return candidates, nil
		}
		if _, err := sellBatch(ctx, s, 1, orders, probe, noGuard, nil); err != nil {
			t.Fatal(err)
		}
		if !probed {
			t.Fatalf("the %s batch never asked which orders to sell", batch)
		}
	}
}

// A batch of goods the store has claimed before claims their rows by
// primary key, not through the goods index: here the index is gone after
// the first batch, and the second sells all the same.
func TestABatchClaimsTheRowsOfGoodsItClaimedBeforeByPrimaryKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, db := storeAndDB(ctx, t, 3, 10)
	sellOneOfEach(ctx, t, s, "by-pk-first", 1, 2, 3)
	if _, err := db.ExecContext(ctx, "DROP INDEX idx_goods_stock_goods_no ON goods_stock"); err != nil {
		t.Fatal(err)
	}
	sellOneOfEach(ctx, t, s, "by-pk-second", 1, 2, 3)
	for g := int32(1); g <= 3; g++ {
		if got, err := s.Goods(ctx, g); err != nil || got.Stock != 8 {
			t.Errorf("goods %d: %+v, %v; want stock 8", g, got, err)
		}
	}
}

// The rows a store remembers can go stale: a goods' row that became
// another goods' row and a new row made for the goods. The claim checks
// the rows it got against its goods and claims by goods number when one
// does not match: the sale takes from the goods' new row, and the row that
// moved keeps its stock.
func TestABatchClaimsAGoodsWhoseRowWasRemadeByNumberAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, db := storeAndDB(ctx, t, 3, 10)
	sellOneOfEach(ctx, t, s, "remade-first", 1, 2, 3)
	if _, err := db.ExecContext(ctx, "UPDATE goods_stock SET goods_no = 4 WHERE goods_no = 2"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetStock(ctx, 2, 50, repo.StockReset{}); err != nil { // a new row
		t.Fatal(err)
	}
	sellOneOfEach(ctx, t, s, "remade-second", 1, 2, 3)
	for g, want := range map[int32]int32{1: 8, 2: 49, 3: 8, 4: 9} {
		if got, err := s.Goods(ctx, g); err != nil || got.Stock != want {
			t.Errorf("goods %d: %+v, %v; want stock %d", g, got, err, want)
		}
	}
}

// A batch whose orders cannot meet a concurrent one's (request ids the
// shop made, no one-per-buyer rule) inserts its orders first, before its
// claim, and calls its guard, which begins the lock's hand-off, before it
// writes the stock: the next holder's ZooKeeper round trips overlap the
// stock's write and the commit. A batch with a buyer's own request id
// calls it after all its writes, so that a key taken meanwhile can make it
// check and sell once more under the same lock. What the guard sees is read
// uncommitted from another connection.
func TestABatchCallsItsGuardBeforeItsStockWriteWhenNothingCanCollide(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, db := storeAndDB(ctx, t, 1, 100)
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED"); err != nil {
		t.Fatal(err)
	}
	all := func(_ service.Goods, c []*service.Order) ([]*service.Order, error) { return c, nil }
	stock := 100
	for _, c := range []struct {
		name     string
		shopMade bool
		// what the guard sees written, of the 3 orders and of their stock
		wantOrders, wantTaken int
	}{
		{"request ids the shop made", true, 3, 0},
		{"a buyer's own request ids", false, 3, 3},
	} {
		var orders []*service.Order
		for i := range 3 {
			orders = append(orders, &service.Order{GoodsNo: 1, RequestID: fmt.Sprintf("guard-%v-%d", c.shopMade, i), NewRequestID: c.shopMade})
		}
		var before int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM order_info").Scan(&before); err != nil {
			t.Fatal(err)
		}
		seenOrders, seenStock := -1, -1
		guard := func() error {
			var n int
			if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM order_info").Scan(&n); err != nil {
				return err
			}
			seenOrders = n - before
			return db.QueryRowContext(ctx, "SELECT stock FROM goods_stock WHERE goods_no = 1").Scan(&seenStock)
		}
		if _, err := sellBatch(ctx, s, 1, orders, all, guard, nil); err != nil {
			t.Fatal(err)
		}
		if seenOrders != c.wantOrders || stock-seenStock != c.wantTaken {
			t.Errorf("%s: the guard saw %d of the batch's 3 orders written and %d of its stock taken, want %d and %d",
				c.name, seenOrders, stock-seenStock, c.wantOrders, c.wantTaken)
		}
		stock -= 3
	}
}

// A batch that inserts its orders first sends the INSERT and its claim in
// one packet: the claim is on the lock's path (the next holder's ZooKeeper
// lock waits for this batch's guard, after the claim), and a round trip
// there costs the whole sale. Seen by a MySQL proxy of the test's own: of
// one goods, of three claimed through the goods index (the first time) and
// by primary key (the second).
func TestABatchSendsItsOrdersAndItsClaimInOnePacket(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, proxy, _ := storeViaProxy(t)
	for g := int32(1); g <= 3; g++ {
		if err := s.SetStock(ctx, g, 100, repo.StockReset{}); err != nil {
			t.Fatal(err)
		}
	}
	packets := recordPackets(proxy, func(q []byte) string {
		insert := bytes.Contains(q, []byte("INSERT INTO order_info"))
		claim := bytes.Contains(q, []byte("FOR UPDATE"))
		switch {
		case insert && claim:
			return "insert+claim"
		case insert:
			return "insert"
		case claim:
			return "claim"
		}
		return ""
	})
	for i, goods := range [][]int32{{1}, {1, 2, 3}, {1, 2, 3}} {
		if _, sent := packets.sellBatch(ctx, t, s, goods, fmt.Sprintf("packet-%d", i)); !slices.Equal(sent, []string{"insert+claim"}) {
			t.Errorf("a batch of goods %v sent %q, want its INSERT and its claim in one packet", goods, sent)
		}
	}
}

// A batch that inserts its orders first inserts them before its claim: the
// rows are in while the claim still waits for the goods' row (here locked
// by another transaction), so that the row lock the next batch waits for is
// held for the stock's write and the commit only.
func TestABatchInsertsItsOrdersBeforeItsClaim(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, db := storeAndDB(ctx, t, 1, 100)
	holder, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Rollback()
	var stock int
	if err := holder.QueryRowContext(ctx, "SELECT stock FROM goods_stock WHERE goods_no = 1 FOR UPDATE").Scan(&stock); err != nil {
		t.Fatal(err)
	}
	var orders []*service.Order
	for i := range 3 {
		orders = append(orders, &service.Order{GoodsNo: 1, RequestID: fmt.Sprintf("first-%d", i), NewRequestID: true})
	}
	sold := make(chan error, 1)
	go func() {
		_, err := sellBatch(ctx, s, 1, orders, sellAll, noGuard, nil)
		sold <- err
	}()
	look, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer look.Close()
	if _, err := look.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL READ UNCOMMITTED"); err != nil {
		t.Fatal(err)
	}
	var n int
	for range 200 { // 10 s at most
		if err := look.QueryRowContext(ctx, "SELECT COUNT(*) FROM order_info WHERE request_id LIKE 'first-%'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 3 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case err := <-sold:
		t.Fatalf("the batch ended (%v) while its goods' row was locked by another transaction", err)
	default:
	}
	if n != 3 {
		t.Errorf("while its claim waited, %d of the batch's 3 orders were inserted, want 3", n)
	}
	if err := holder.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := <-sold; err != nil {
		t.Fatal(err)
	}
}

// A batch whose orders went in first, of which some are not sold to (a
// goods without a row, a goods with less stock than buyers), commits the
// rows of those sold to and no other: the DELETE of the rest goes with the
// stock's UPDATE.
func TestABatchWhoseOrdersWentInFirstKeepsOnlyTheSold(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, db := storeAndDB(ctx, t, 2, 2)
	var orders []*service.Order
	for i, g := range []int32{1, 2, 1, 99, 1, 2} {
		orders = append(orders, &service.Order{GoodsNo: g, RequestID: fmt.Sprintf("kept-%d", i), NewRequestID: true})
	}
	refused, err := sellBatch(ctx, s, 1, orders, sellAvailable, noGuard, nil)
	if err != nil {
		t.Fatal(err)
	}
	var sold []string
	for _, o := range orders {
		if o.ID != 0 {
			sold = append(sold, o.RequestID)
		}
	}
	written := orderRowIDs(ctx, t, db)
	got := slices.Sorted(maps.Keys(written))
	for _, o := range orders {
		if id, ok := written[o.RequestID]; ok && o.ID != id {
			t.Errorf("order %s: row id %d, the batch told %d", o.RequestID, id, o.ID)
		}
	}
	slices.Sort(sold)
	want := []string{"kept-0", "kept-1", "kept-2", "kept-5"} // goods 1: the first two; goods 2: both; goods 99: none
	if !slices.Equal(got, want) || !slices.Equal(sold, want) {
		t.Errorf("order rows %v, orders told sold %v: want %v", got, sold, want)
	}
	if _, ok := refused[orders[3]]; !ok {
		t.Errorf("the order of goods 99, which has no row, was not refused: %v", refused)
	}
	for g, want := range map[int32]int{1: 0, 2: 0} {
		var stock int
		if err := db.QueryRowContext(ctx, "SELECT stock FROM goods_stock WHERE goods_no = ?", g).Scan(&stock); err != nil {
			t.Fatal(err)
		}
		if stock != want {
			t.Errorf("goods %d: stock %d, want %d", g, stock, want)
		}
	}
}

// A batch that sells different amounts of its goods takes from each row
// what it sold of it: the UPDATE groups the rows by the amount taken (one,
// two, three, and two again), with the most common amount as its ELSE.
func TestABatchTakesFromEachGoodsWhatItSold(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, shopIDs := range []bool{true, false} { // orders first, and the writes after the claim
		t.Run(fmt.Sprintf("shop-made ids %v", shopIDs), func(t *testing.T) {
			s, db := storeAndDB(ctx, t, 5, 10)
			var orders []*service.Order
			for i, g := range []int32{1, 2, 2, 3, 3, 3, 4, 4} {
				orders = append(orders, &service.Order{GoodsNo: g, RequestID: fmt.Sprintf("taken-%d", i), NewRequestID: shopIDs})
			}
			refused, err := sellBatch(ctx, s, 1, orders, sellAvailable, noGuard, nil)
			if err != nil || len(refused) != 0 {
				t.Fatalf("refused %v, err %v: want every order sold", refused, err)
			}
			for g, want := range map[int32]int{1: 9, 2: 8, 3: 7, 4: 8, 5: 10} {
				var stock, fence int
				if err := db.QueryRowContext(ctx, "SELECT stock, fence FROM goods_stock WHERE goods_no = ?", g).Scan(&stock, &fence); err != nil {
					t.Fatal(err)
				}
				if wantFence := map[bool]int{true: 1}[g != 5]; stock != want || fence != wantFence {
					t.Errorf("goods %d: stock %d fence %d, want %d and %d", g, stock, fence, want, wantFence)
				}
			}
		})
	}
}

// A batch's orders are unpaid rows with their buyer, whether the INSERT
// names every column (a buyer in the batch) or leaves user_id,
// buyer_limited and status to their defaults (nobody named).
func TestABatchsOrderRowsAreNewUnpaidOrders(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, db := storeAndDB(ctx, t, 1, 10)
	alice := "alice"
	batches := [][]*service.Order{
		{{GoodsNo: 1, RequestID: "plain-1", NewRequestID: true}, {GoodsNo: 1, RequestID: "plain-2", NewRequestID: true}},
		{{GoodsNo: 1, RequestID: "mixed-1", NewRequestID: true}, {GoodsNo: 1, RequestID: "mixed-2", NewRequestID: true, UserID: alice, OnePerBuyer: true}},
		// Ids no shop request carries: placeholders in the INSERT, not literals.
		{{GoodsNo: 1, RequestID: `it's-a?b\c"d`, NewRequestID: true}, {GoodsNo: 1, RequestID: "plain-3", NewRequestID: true}},
	}
	start := time.Now().Add(-time.Second)
	for _, orders := range batches {
		if refused, err := sellBatch(ctx, s, 1, orders, sellAvailable, noGuard, nil); err != nil || len(refused) != 0 {
			t.Fatalf("refused %v, err %v", refused, err)
		}
		for _, o := range orders {
			var user sql.NullString
			var limited int
			var status string
			var created time.Time
			var requestID string
			if err := db.QueryRowContext(ctx, "SELECT user_id, buyer_limited, status, created_at, request_id FROM order_info WHERE id = ?", o.ID).
				Scan(&user, &limited, &status, &created, &requestID); err != nil {
				t.Fatalf("order %s (id %d): %v", o.RequestID, o.ID, err)
			}
			wantUser, wantLimited := sql.NullString{}, 0
			if o.UserID != "" {
				wantUser, wantLimited = sql.NullString{String: o.UserID, Valid: true}, 1
			}
			if requestID != o.RequestID {
				t.Errorf("order %d: request id %q stored, want %q", o.ID, requestID, o.RequestID)
			}
			if user != wantUser || limited != wantLimited || status != service.OrderUnpaid || o.Status != service.OrderUnpaid ||
				!created.Equal(o.CreatedAt.Truncate(time.Microsecond)) || created.Before(start) {
				t.Errorf("order %s: user %v limited %d status %q created %v (told %q, %v): want %v, %d, unpaid, told so, now",
					o.RequestID, user, limited, status, created, o.Status, o.CreatedAt, wantUser, wantLimited)
			}
		}
	}
}

// sellAvailable is a batch's choice that sells as many of the candidates
// as the goods has stock for, the first ones.
func sellAvailable(g service.Goods, c []*service.Order) ([]*service.Order, error) {
	return c[:min(len(c), int(max(g.Stock, 0)))], nil
}

// sellOneOfEach sells one piece of each of goods in one batch, request
// ids made of prefix, and fails the test on an error or a refusal.
func sellOneOfEach(ctx context.Context, t *testing.T, s *repo.Store, prefix string, goods ...int32) {
	t.Helper()
	var orders []*service.Order
	for _, g := range goods {
		orders = append(orders, &service.Order{GoodsNo: g, RequestID: fmt.Sprint(prefix, "-", g), NewRequestID: true})
	}
	refused, err := sellBatch(ctx, s, 1, orders, sellAll, noGuard, nil)
	if err != nil {
		t.Fatalf("batch %s: %v", prefix, err)
	}
	for o, err := range refused {
		t.Errorf("batch %s: goods %d refused: %v", prefix, o.GoodsNo, err)
	}
}

// orderRowIDs reads every order row of db: its id by its request id.
func orderRowIDs(ctx context.Context, t *testing.T, db *sql.DB) map[string]uint64 {
	t.Helper()
	rows, err := db.QueryContext(ctx, "SELECT id, request_id FROM order_info")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	ids := map[string]uint64{}
	for rows.Next() {
		var id uint64
		var rid string
		if err := rows.Scan(&id, &rid); err != nil {
			t.Fatal(err)
		}
		ids[rid] = id
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// storeAndDB opens a migrated store on a database of the test's own, with
// goods 1..goods of stock each, and a plain connection pool to the same
// database for what the test looks at from outside the store.
func storeAndDB(ctx context.Context, t *testing.T, goods, stock int32) (*repo.Store, *sql.DB) {
	t.Helper()
	dsn := e2e.Database(t)
	s := openMigrated(t, dsn)
	for g := int32(1); g <= goods; g++ {
		if err := s.SetStock(ctx, g, stock, repo.StockReset{}); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return s, db
}

// Buyers who came while a batch's orders went in and its claim waited join
// the batch when the store asks for them (more): those of goods whose rows
// it claimed and whose INSERT cannot collide, chosen with the batch's own
// buyers and written with its stock, in its transaction. The others stay
// for the next batch. An order of the batch not chosen leaves no row.
func TestABatchSellsToBuyersWhoCameDuringItsClaim(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, db := storeAndDB(ctx, t, 3, 5)
	for no, stock := range map[int32]int32{1: 3, 2: 0} {
		if err := s.SetStock(ctx, no, stock, repo.StockReset{}); err != nil {
			t.Fatal(err)
		}
	}
	order := func(no int32, id string) *service.Order {
		return &service.Order{GoodsNo: no, RequestID: id, NewRequestID: true}
	}
	batch := []*service.Order{order(1, "e1"), order(2, "e2")}
	own := &service.Order{GoodsNo: 1, RequestID: "a-buyers-own"} // its INSERT could collide
	l1, l1b, l1c := order(1, "l1"), order(1, "l1b"), order(1, "l1c")
	waiting := []*service.Order{l1, order(3, "l3"), own, l1b, l1c}
	var left []*service.Order
	asked := 0
	more := func(accept func(*service.Order) bool) []*service.Order {
		asked++
		var took []*service.Order
		for _, o := range waiting {
			if accept(o) {
				took = append(took, o)
			} else {
				left = append(left, o)
			}
		}
		waiting = nil
		return took
	}
	refused, err := sellBatch(ctx, s, 1, batch, sellAvailable, noGuard, more)
	if err != nil {
		t.Fatal(err)
	}
	if asked != 1 || len(refused) != 0 {
		t.Fatalf("more asked %d times, refused %v; want once, nothing refused", asked, refused)
	}
	if len(left) != 2 || left[0].GoodsNo != 3 || left[1] != own {
		t.Errorf("left for the next batch: %v, want goods 3's buyer (its row not claimed) and the buyer's own id", left)
	}
	written := orderRowIDs(ctx, t, db)
	if len(written) != 3 || written["e1"] == 0 || written["l1"] == 0 || written["l1b"] == 0 {
		t.Fatalf("order rows %v, want e1, l1 and l1b (goods 1's stock of 3), none for e2 (goods 2 has none) or l1c", written)
	}
	for _, o := range []*service.Order{batch[0], batch[1], l1, l1b, l1c} {
		if o.ID != written[o.RequestID] {
			t.Errorf("order %s: id %d, want %d (0: not sold)", o.RequestID, o.ID, written[o.RequestID])
		}
	}
	for no, stock := range map[int32]int32{1: 0, 2: 0, 3: 5} {
		g, err := s.Goods(ctx, no)
		if err != nil {
			t.Fatal(err)
		}
		if g.Stock != stock {
			t.Errorf("goods %d: stock %d, want %d", no, g.Stock, stock)
		}
	}
}
