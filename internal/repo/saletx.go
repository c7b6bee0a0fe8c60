package repo

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// A purchase under the lock is serial: every round trip it makes to MySQL
// while it holds the lock is a round trip every buyer behind it waits for.
// database/sql's Tx makes four before the commit (START TRANSACTION, the
// claim, the order, the stock). A saleTx sends statements that belong
// together in one packet, on a connection of the store's multi-statement
// pool: START TRANSACTION with the claim, the order with the stock and the
// read of the new order's id. Two round trips, then the COMMIT.
//
// Only fixed statement texts are sent this way, their values interpolated
// by the driver (which escapes them for the connection's character set);
// the rest of the store keeps a pool that takes one statement per query.

// saleTimeout bounds a ROLLBACK sent after the purchase's context ended.
const saleTimeout = 5 * time.Second

// saleTx is a transaction on one connection of the multi-statement pool.
// It begins with its first statement.
type saleTx struct {
	conn      *sql.Conn
	open      bool       // START TRANSACTION went out: the end rolls back or commits
	claimStmt string     // Store.claimStmt
	read      goodsStock // the row as the claim read it
	orders    []uint64   // the orders written, confirmed with the commit
}

// inSaleTx runs fn in a saleTx and commits when fn returns nil. A failed
// commit whose connection broke is service.ErrCommitUnknown; any other
// failure rolls back. A connection whose rollback or commit failed is
// closed, never handed to another purchase with a transaction open.
func (s *Store) inSaleTx(ctx context.Context, goodsNo int32, fn func(*saleTx) error) error {
	conn, err := s.salesFor(goodsNo).sql.Conn(ctx)
	if err != nil {
		return commitError(err, false)
	}
	t := &saleTx{conn: conn, claimStmt: s.claimStmt}
	if err := fn(t); err != nil {
		t.rollback(ctx)
		return commitError(err, false)
	}
	if err := t.commit(ctx); err != nil {
		t.discard()
		return err
	}
	_ = conn.Close() // back to the pool; the sale is committed whatever this says
	return nil
}

// commit commits, and in the same packet counts the transaction's orders:
// a commit that answers OK for a transaction a Galera brute-force abort
// rolled back without telling the client (see Store.inTx) finds none of
// them, service.ErrConflict. On one server the count costs no round trip
// and always finds them.
func (t *saleTx) commit(ctx context.Context) error {
	if len(t.orders) == 0 {
		if _, err := t.conn.ExecContext(ctx, "COMMIT"); err != nil {
			return commitError(err, true)
		}
		return nil
	}
	ids := make([]any, len(t.orders))
	for i, id := range t.orders {
		ids[i] = id
	}
	rows, err := t.conn.QueryContext(ctx, commitCounting+"(?"+strings.Repeat(", ?", len(ids)-1)+")", ids...)
	if err != nil {
		return commitError(err, true)
	}
	defer rows.Close()
	var found int64
	if !rows.Next() {
		return commitError(errors.Join(errors.New("repo: no answer to the commit's count"), rows.Err()), true)
	}
	if err := rows.Scan(&found); err != nil {
		return commitError(err, true)
	}
	if err := rows.Close(); err != nil {
		return commitError(err, true)
	}
	return checkVerified(found, len(t.orders))
}

// query sends stmts (one or more statements, separated by semicolons) in
// one packet, preceded by START TRANSACTION when the transaction has not
// begun, and returns the rows of the first statement that has any. An
// error of any of the statements is returned; those after it did not run.
func (t *saleTx) query(ctx context.Context, stmts string, args ...any) (*sql.Rows, error) {
	if !t.open {
		stmts = "START TRANSACTION; " + stmts
		t.open = true
	}
	return t.conn.QueryContext(ctx, stmts, args...)
}

// rollback ends an open transaction without its writes, also when ctx has
// ended, and returns the connection to the pool; or closes it when the
// rollback fails.
func (t *saleTx) rollback(ctx context.Context) {
	if t.open {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saleTimeout)
		defer cancel()
		if _, err := t.conn.ExecContext(rctx, "ROLLBACK"); err != nil {
			t.discard()
			return
		}
	}
	t.conn.Close()
}

// discard closes the connection instead of pooling it. (A driver.ErrBadConn
// from Raw's function is database/sql's way to drop a connection; MySQL
// rolls back what the connection had open.)
func (t *saleTx) discard() {
	_ = t.conn.Raw(func(any) error { return driver.ErrBadConn })
	t.conn.Close()
}

// claim is the claim (Store.claim's) on the sale's own connection.
func (t *saleTx) claim(ctx context.Context, goodsNo int32, fence int64) (service.Goods, error) {
	rows, err := t.query(ctx, t.claimStmt, goodsNo)
	if err != nil {
		return service.Goods{}, err
	}
	row, err := readClaim(rows, fence)
	if err != nil {
		return service.Goods{}, err
	}
	t.read = row
	return row.goods(), nil
}

// sell inserts order and sets the stock of the claimed row with the fence,
// if the row is as the claim read it (claimedStock), in one round trip, and
// sets order.ID.
func (t *saleTx) sell(ctx context.Context, stock int32, fence int64, order *orderInfo) error {
	rows, err := t.query(ctx, "INSERT INTO order_info (goods_no, request_id, user_id, buyer_limited, status, created_at) "+
		"VALUES (?, ?, ?, ?, ?, ?); "+writeClaimedSQL+"; SELECT LAST_INSERT_ID(), ROW_COUNT(), @@in_transaction",
		order.GoodsNo, order.RequestID, order.UserID, order.Limited, order.Status, order.CreatedAt, stock, fence,
		t.read.ID, t.read.Stock, t.read.Fence)
	if err != nil {
		return err
	}
	defer rows.Close()
	var orderID uint64
	var updated int64
	var inTx bool
	if !rows.Next() {
		return errors.Join(errors.New("repo: no answer to the sale's last statement"), rows.Err())
	}
	if err := rows.Scan(&orderID, &updated, &inTx); err != nil {
		return err
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if !inTx {
		// Seen on Galera: the claim's transaction was rolled back by a
		// brute-force abort (its read was stale, and the other node's
		// write-set needed the row) and nobody was told; the sale's
		// statements then ran outside any transaction and were lost.
		return fmt.Errorf("%w: the sale's transaction had ended before its statements ran (a brute-force abort)", service.ErrConflict)
	}
	if updated == 0 {
		return changedSinceClaim(t.read)
	}
	order.ID = orderID
	t.orders = append(t.orders, orderID)
	return nil
}

// fenced is the error of a claim whose token is older than the row's.
func fenced(token, rowFence int64) error {
	return fmt.Errorf("%w: token %d, row fenced at %d (if ZooKeeper's data was wiped, its zxids started again: "+
		"`shop stock set --reset-fence`)", service.ErrFenced, token, rowFence)
}
