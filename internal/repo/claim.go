package repo

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// claim is the start of every purchase under the lock: a locking read of the
// goods' row and a check of its fence against the lock's token. The read
// waits for an earlier holder's transaction still in flight (its row lock)
// and then sees its commit; a row whose fence is above the token was written
// under a newer lock (service.ErrFenced). The row stays locked until the
// transaction ends, and the sale writes the token into the fence with the
// stock, so no older holder can write after it.
//
// The claim is a sale's first statement: it goes in one packet with START
// TRANSACTION (see tx.query), which on a cluster makes it see every commit
// before it (see Store.beginSQL).
func (t *tx) claim(ctx context.Context, goodsNo int32, fence int64) (goodsStock, error) {
	rows, err := t.query(ctx, claimSQL, goodsNo)
	if err != nil {
		return goodsStock{}, err
	}
	return readClaim(rows, fence)
}

// readClaim reads the answer to claimSQL, closing rows: the goods' row,
// service.ErrNotFound without one, or the fence error when the row was
// written under a lock newer than token.
func readClaim(rows *sql.Rows, token int64) (goodsStock, error) {
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return goodsStock{}, err
		}
		return goodsStock{}, service.ErrNotFound
	}
	row, err := scanClaimed(rows)
	if err != nil {
		return goodsStock{}, err
	}
	if err := rows.Close(); err != nil {
		return goodsStock{}, err
	}
	return row, checkFence(row, token)
}

// scanClaimed reads the row rows is on, in claimSQL's columns.
func scanClaimed(rows *sql.Rows) (goodsStock, error) {
	var (
		row      goodsStock
		stock    sql.NullInt32
		active   sql.NullInt16
		from, to sql.NullTime
	)
	if err := rows.Scan(&row.ID, &row.GoodsNo, &stock, &active, &row.Fence, &from, &to); err != nil {
		return goodsStock{}, err
	}
	if stock.Valid {
		row.Stock = &stock.Int32
	}
	if active.Valid {
		row.IsActive = &active.Int16
	}
	if from.Valid {
		row.SaleStart = &from.Time
	}
	if to.Valid {
		row.SaleEnd = &to.Time
	}
	return row, nil
}

// checkFence is the one fence check: a claimed row written under a lock
// newer than token refuses the sale.
func checkFence(row goodsStock, token int64) error {
	if row.Fence > token {
		return fenced(token, row.Fence)
	}
	return nil
}

// claimColumns are the columns a claim reads of a goods_stock row, in
// goodsStock's order (readGoods, readRows scan them).
const claimColumns = "id, goods_no, stock, isActive, fence, sale_start, sale_end"

// claimSQL is the claim's locking read of the goods' row.
const claimSQL = "SELECT " + claimColumns + " FROM goods_stock WHERE goods_no = ? ORDER BY id LIMIT 1 FOR UPDATE"

// claimManySQL is claimSQL for several goods at once (%s: their numbers,
// comma separated). It names the goods
// index: for a quarter of a small table's goods (50 of 200) MariaDB planned
// a full scan and a filesort, which read every row and, FOR UPDATE, locked
// them all until the commit.
const claimManySQL = "SELECT " + claimColumns + " FROM goods_stock " +
	"FORCE INDEX (idx_goods_stock_goods_no) WHERE goods_no IN (%s) ORDER BY goods_no, id FOR UPDATE"

// claimRowsSQL is claimManySQL by the rows' primary keys (%s: the ids,
// comma separated; MariaDB reads, and locks, them in id order).
const claimRowsSQL = "SELECT " + claimColumns + " FROM goods_stock " +
	"FORCE INDEX (PRIMARY) WHERE id IN (%s) ORDER BY id FOR UPDATE"

// beginSQL begins a sale's transaction. On a cluster it is a causal read:
// the node first applies every write-set the cluster had committed when it
// came, so that the claim that follows, on any node, reads the previous
// lock holder's commit (and a stock reset through another node). The wait
// must be on the START TRANSACTION: MariaDB makes none for a statement
// inside a transaction already begun (wsrep_must_sync_wait checks
// in_active_multi_stmt_transaction), so a causal SELECT after it is an
// ordinary one. A session's wsrep_sync_wait stays 0 in the sale pools,
// the writes that follow the claim needing no wait of their own.
func (s *Store) beginSQL() string {
	if !s.cluster {
		return "START TRANSACTION"
	}
	return "SET STATEMENT wsrep_sync_wait=1 FOR START TRANSACTION"
}

// changedSinceClaim is the error of a claimed row's write that found the
// row changed.
func changedSinceClaim(read goodsStock) error {
	return fmt.Errorf("%w: goods row %d changed after the claim read it (a stale read)", service.ErrConflict, read.ID)
}

// inTxOnly ends the condition of every write that follows another in one
// packet: it writes only inside the transaction. On Galera a brute-force
// abort (a replicated write-set that needs a row the transaction locked)
// can land between two statements of a packet; the transaction is rolled
// back and the packet's later statements run in autocommit, each committed
// on its own. Seen with allot on three nodes each written by its own
// instance: a grant's decrement of the goods' row rolled back, its lease's
// write committed, 500 pieces granted from nothing (an oversell found by
// make bench-shop's (d) in 4 of 180 sales). With this condition such a
// statement writes nothing, and the packet's check of @@in_transaction
// reports the abort. An INSERT cannot take a condition: a packet's INSERT
// goes first, before any write of a row that other nodes write too.
const inTxOnly = " AND @@in_transaction = 1"

// abortedUnawares is the error of a sale whose statements found its
// transaction ended. Seen on Galera: the claim's transaction was rolled
// back by a brute-force abort (its read was stale, and another node's
// write-set needed the row) and nobody was told; the statements after it
// then ran outside any transaction and were lost.
func abortedUnawares() error {
	return fmt.Errorf("%w: the sale's transaction had ended before its statements ran (a brute-force abort)", service.ErrConflict)
}

// fenced is the error of a claim whose token is older than the row's.
func fenced(token, rowFence int64) error {
	return fmt.Errorf("%w: token %d, row fenced at %d (if ZooKeeper's data was wiped, its zxids started again: "+
		"`shop stock set --reset-fence`)", service.ErrFenced, token, rowFence)
}
