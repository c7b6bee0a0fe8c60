package e2e

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/seckill-zk/seckill-zk/tests/framework/history"
)

// Stack is a database and a lock path of the test's own, with the shop's
// environment pointing at them.
type Stack struct {
	Binary    string // ShopBinary unless the test says otherwise
	DSN       string
	ZKServers []string
	LockPath  string
	Env       []string
}

// NewStack is a stack on a database of the test's own and the local
// ZooKeeper, its shop set as opts say.
func NewStack(t testing.TB, opts ...Option) Stack {
	t.Helper()
	return NewStackOn(t, Database(t), ZooKeeper(t), opts...)
}

// NewStackOn is a stack on the given database and ZooKeeper servers.
func NewStackOn(t testing.TB, dsn string, zkServers []string, opts ...Option) Stack {
	t.Helper()
	lockPath := Path(t) + "/Locks"
	env := append(os.Environ(),
		"SHOP_MYSQL_DSN="+dsn,
		"SHOP_ZOOKEEPER_SERVERS="+strings.Join(zkServers, ","),
		"SHOP_LOCK_PATH="+lockPath,
		"SHOP_LEADER_PATH="+Path(t)+"/leader",
		"SHOP_ALLOT_PATH="+Path(t)+"/leases",
		"SHOP_CONFIG="+InRoot(t, "config.yaml"),
		// The suites' closed loops count on every buyer waiting its turn;
		// the overload suites (overload_e2e_test.go) set the admission's
		// queue target themselves.
		"SHOP_PURCHASE_QUEUETARGET=0s",
	)
	return Stack{Binary: ShopBinary(t), DSN: dsn, ZKServers: zkServers, LockPath: lockPath, Env: append(env, environ(t, opts)...)}
}

// Shop runs a command of the shop (migrate, stock set, ...) and fails the
// test if it fails.
func (s Stack) Shop(t testing.TB, args ...string) {
	t.Helper()
	cmd := exec.Command(s.Binary, args...)
	cmd.Env = s.Env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("shop %v: %v\n%s", args, err, out)
	}
}

// ShopExit runs a command of the shop and returns its output and exit
// status (-1 when it could not run).
func (s Stack) ShopExit(t testing.TB, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(s.Binary, args...)
	cmd.Env = s.Env
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Errorf("shop %v: %v", args, err)
	return string(out), -1
}

// Counts is the stock of goods 1 and its order rows.
func (s Stack) Counts(t testing.TB) (stock, orders int) {
	t.Helper()
	db, err := sql.Open("mysql", s.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	waitAllotmentsBack(t, db)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.QueryRowContext(ctx, "SELECT stock FROM goods_stock WHERE goods_no = 1").Scan(&stock); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM order_info WHERE goods_no = 1").Scan(&orders); err != nil {
		t.Fatal(err)
	}
	return stock, orders
}

// WaitForQueue waits until the lock's queue holds n nodes (bounded: 30s).
func (s Stack) WaitForQueue(t *testing.T, n int) {
	t.Helper()
	conn := ZKConn(t, s.ZKServers)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		kids, _, err := conn.Children(s.LockPath)
		kids = slices.DeleteFunc(kids, func(k string) bool { return k == "turnstile" }) // zklock.ArrivalMutex's, no buyer
		if err == nil && len(kids) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lock's queue %v (%v): want the %d buyers in it within 30s", kids, err, n)
		}
	}
}

// CheckNoOversell checks the shop's promise after a fault: every 200 has its
// order row and the stock went down by exactly the orders.
func (s Stack) CheckNoOversell(t *testing.T, initial int, answers ...Answer) {
	t.Helper()
	stock, orders := s.Counts(t)
	ok := 0
	for _, a := range answers {
		if a.Status == http.StatusOK {
			ok++
		}
		if a.Status >= 500 && a.Status != http.StatusServiceUnavailable {
			t.Errorf("answer %d %s: only 503 may report a fault", a.Status, a.Code)
		}
	}
	t.Logf("stock %d -> %d, %d order rows, %d answered 200, %d answers", initial, stock, orders, ok, len(answers))
	if oversold := orders - (initial - stock); oversold != 0 {
		t.Errorf("OVERSOLD %d: %d order rows for a stock that went down by %d", oversold, orders, initial-stock)
	}
	if ok != orders {
		t.Errorf("%d answers 200 for %d order rows", ok, orders)
	}
	if stock < 0 {
		t.Errorf("stock %d below zero", stock)
	}
	// And the answers one by one, against the model of the shop, when each
	// says which request it answers (its requestId): an answer without one
	// (no answer at all, or one a test made up) leaves the totals alone.
	var rec history.Recorder
	for i, a := range answers {
		var body struct {
			RequestID string `json:"requestId"`
			OrderID   uint64 `json:"orderId"`
			Ahead     *int   `json:"ahead"`
		}
		if a.Err != nil || a.Decode(&body) != nil || body.RequestID == "" {
			t.Logf("answer %d names no request: the history is not checked, the totals are", i)
			return
		}
		op := history.Op{Client: i, Kind: history.Buy, Goods: 1, RequestID: body.RequestID,
			Result: history.BuyResult(history.Answer{Status: a.Status, Code: a.Code, Ahead: body.Ahead != nil}), Call: a.Start, Ret: a.End}
		if op.Result == history.OK {
			op.Order = body.OrderID
		}
		rec.Add(op)
	}
	r := history.Check(rec.Ops(), map[int32]int32{1: int32(initial)}, s.FinalRows(t), time.Minute,
		InRoot(t, "out/history/"+strings.ReplaceAll(t.Name(), "/", "_")))
	if !r.Legal {
		t.Errorf("the history of %d operations is not the shop's: %q (%v)", r.Ops, r.Problems, r.HTML)
	}
}

// CheckNoOrphans checks that no lock node is left on the lock path (the
// nodes of an expired session go with it).
func (s Stack) CheckNoOrphans(t *testing.T) {
	t.Helper()
	if n := s.Orphans(t); n != 0 {
		t.Errorf("%d lock nodes left on %s", n, s.LockPath)
	}
}

// Orphans counts the lock nodes left once the sessions of dead instances
// have had time to expire (it waits up to 30s for none).
func (s Stack) Orphans(t *testing.T) int {
	t.Helper()
	conn := ZKConn(t, s.ZKServers)
	n := 0
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		kids, _, err := conn.Children(s.LockPath)
		if err != nil || len(kids) == 0 {
			return 0 // no node, or no parent: the container went with its last child
		}
		n = len(kids)
	}
	return n
}

// checkPerGoods checks each goods of set after a sale from stock: no goods
// oversold, every 200 with its order row, and a goods that had at least as
// many buyers as pieces (asked) sold out.
func (s Stack) CheckPerGoods(t *testing.T, set []int32, stock int, ok map[int32]int, asked func(int32) int) {
	t.Helper()
	left, orders := s.GoodsCounts(t)
	for _, g := range set {
		if over := orders[g] - (stock - left[g]); over != 0 {
			t.Errorf("goods %d OVERSOLD %d: %d order rows for a stock that went %d -> %d", g, over, orders[g], stock, left[g])
		}
		if ok[g] != orders[g] {
			t.Errorf("goods %d: %d answers 200 for %d order rows", g, ok[g], orders[g])
		}
		if asked != nil && asked(g) >= stock && left[g] != 0 {
			t.Errorf("goods %d: %d left after %d buyers", g, left[g], asked(g))
		}
	}
}

// waitAllotmentsBack waits until no open lease of the allot strategy holds
// stock (an instance puts back what its buyers leave for a moment), so that
// the goods' rows tell the whole stock; it fails the test after a while.
func waitAllotmentsBack(t testing.TB, db *sql.DB) {
	t.Helper()
	var held string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		err := db.QueryRow("SELECT COALESCE(GROUP_CONCAT(allotted SEPARATOR ' '), '') FROM stock_lease WHERE open = 1 AND allotted <> ''").Scan(&held)
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1146 {
			return // no such table: a schema before the allot strategy's
		}
		if err != nil {
			t.Fatal(err)
		}
		if held == "" {
			return
		}
	}
	t.Fatalf("the allot strategy's leases still hold stock after 15s (goodsNo:granted:sold): %s", held)
}

// GoodsCounts reads every goods' stock and order rows, once no lease of
// the allot strategy holds stock (waitAllotmentsBack).
func (s Stack) GoodsCounts(b testing.TB) (stock, orders map[int32]int) {
	b.Helper()
	db, err := sql.Open("mysql", s.DSN)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	waitAllotmentsBack(b, db)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stock, orders = map[int32]int{}, map[int32]int{}
	for q, into := range map[string]map[int32]int{
		"SELECT goods_no, stock FROM goods_stock":                     stock,
		"SELECT goods_no, COUNT(*) FROM order_info GROUP BY goods_no": orders,
	} {
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
			var g int32
			var n int
			if err := rows.Scan(&g, &n); err != nil {
				b.Fatal(err)
			}
			into[g] = n
		}
		if err := rows.Close(); err != nil {
			b.Fatal(err)
		}
	}
	return stock, orders
}

// FinalRows is the database after a sale, as the history checker reads
// it: every goods' stock and every order of the stack's database.
func (s Stack) FinalRows(t testing.TB) history.Final {
	t.Helper()
	db, err := sql.Open("mysql", s.DSN+map[bool]string{true: "&", false: "?"}[strings.Contains(s.DSN, "?")]+"parseTime=true")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	waitAllotmentsBack(t, db)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := history.ReadFinal(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	return f
}
