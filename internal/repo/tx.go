package repo

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// Every sale runs in a tx: the sale handles the service drives (the seed's
// claimedSale, batchSale, allot's grantSale) hold one from their Begin to
// their Commit or Abort, and the store's own short transactions (the atomic
// sale, inTx) hold one for a function's length; one rollback and one
// commit check for them all.
//
// The choice, once: GORM where it earns its place (reads scanned into the
// row types, the atomic sale's insert) and database/sql where a purchase
// under the lock pays for every round trip: a tx sends
// statements that belong together in one packet (query), on a connection
// of the sale pool, which takes several statements per query. The seed's
// sale makes two round trips before the commit that way (START TRANSACTION
// with the claim, then the order with the stock and the read of the new
// order's id), where database/sql's Tx would make four; a batch writes its
// stocks and its orders, and reads their ids, in one (writeBatch).
//
// Only fixed statement texts are sent in one packet, their values
// interpolated by the driver (which escapes them for the connection's
// character set); the rest of the store keeps a pool that takes one
// statement per query.

// saleTimeout bounds a ROLLBACK sent after the purchase's context ended,
// and the packet that carries a COMMIT (see tx.final).
const saleTimeout = 5 * time.Second

// tx is a sale's transaction on one connection of a salePool, as SQL
// (query) or as GORM (db) on the same connection. It begins with its first
// statement: START TRANSACTION rides in query's first packet, or goes
// alone before db's first statement.
type tx struct {
	conn   *sql.Conn
	gorm   *gorm.DB // a session on conn
	begin  string   // the statement that begins it (Store.beginSQL)
	pool   salePool // the pool conn is of
	open   bool     // START TRANSACTION went out: the end rolls back or commits
	orders []uint64 // the orders written (wrote), confirmed with the commit
	// committing: the COMMIT went out in the packet of the last writes
	// (commitIn), whose answers are being read; ended once they are.
	committing bool
	// finalCtx is the context of the packet that carries the COMMIT (see
	// final); cancel ends it once the transaction is over.
	finalCtx context.Context
	cancel   context.CancelFunc
}

// inTx runs fn in a tx on one connection of sp and commits when fn returns
// nil; an error from fn ends the transaction as tx.fail says.
func (s *Store) inTx(ctx context.Context, sp salePool, fn func(t *tx) error) error {
	t, err := s.openTx(ctx, sp)
	if err != nil {
		return err
	}
	if err := fn(t); err != nil {
		return t.fail(ctx, err)
	}
	return t.finish(ctx)
}

// openTx takes a connection of sp for a sale's transaction; nothing is
// sent yet (its first statement begins it: tx.query). Whoever opens it
// ends it, with finish or fail, which give the connection back.
func (s *Store) openTx(ctx context.Context, sp salePool) (*tx, error) {
	c, err := sp.sql.Conn(ctx)
	if err != nil {
		return nil, commitError(err, false) // no connection: nothing was sent
	}
	// A new session on the connection: each statement builds its own
	// clauses.
	g := sp.gorm.Session(&gorm.Session{NewDB: true, Context: ctx})
	g.Statement.ConnPool = c
	return &tx{conn: c, gorm: g, begin: s.beginSQL(), pool: sp}, nil
}

// fail ends the transaction after err, and returns the sale's answer: it
// rolls back, also when ctx has ended; once a COMMIT went out with the
// writes (commitIn) the outcome is unknown instead, as when a COMMIT sent
// alone is cut off. A connection whose rollback failed is closed, never
// handed to another sale with a transaction open; one a node out of the
// cluster refused makes its pool pass over that node.
func (t *tx) fail(ctx context.Context, err error) error {
	defer t.release(ctx, err)
	if t.committing && !refusedBeforeCommit(err) {
		t.discard()
		return commitError(err, true)
	}
	t.rollback(ctx)
	return commitError(err, false)
}

// finish commits (a failed commit is translated by commitError: a
// connection that broke during it is service.ErrCommitUnknown) and gives
// the connection back.
func (t *tx) finish(ctx context.Context) error {
	err := t.commit(ctx)
	t.release(ctx, err)
	return err
}

// release gives the connection back to its pool once the transaction is
// over, after a refusal by a node out of the cluster (err) through the
// pool's failover.
func (t *tx) release(ctx context.Context, err error) {
	t.endFinal()
	if notPrimary(err) {
		t.pool.refused(ctx, t.conn)
	}
	_ = t.conn.Close()
}

// query sends stmts (one or more statements, separated by semicolons) in
// one packet, preceded by START TRANSACTION when the transaction has not
// begun, and returns the rows of the first statement that has any. An
// error of any of the statements is returned; those after it did not run.
// A packet that carries the COMMIT (commitIn) is sent on the final context
// instead of ctx; not at all when ctx has ended.
func (t *tx) query(ctx context.Context, stmts string, args ...any) (*sql.Rows, error) {
	if t.committing {
		fctx, err := t.final(ctx)
		if err != nil {
			t.committing = false // not sent: the transaction rolls back
			return nil, err
		}
		ctx = fctx
	}
	if !t.open {
		stmts = t.begin + "; " + stmts
		t.open = true
	}
	return t.conn.QueryContext(ctx, stmts, args...)
}

// final is the context of the packet that carries the transaction's
// COMMIT, or ctx's error when ctx has ended before it is sent. Once a
// COMMIT is sent, the buyer's deadline no longer decides: cut off then,
// the commit's answer would be lost while the commit itself may be
// applied, and the buyer told it was sold nothing would hold an order. So
// the packet goes out on a context that ctx's end does not cancel (its
// values kept), bounded by saleTimeout; a buyer whose deadline passes
// meanwhile still hears how the commit ended. A deadline that passed
// before is the buyer's answer, with nothing written.
func (t *tx) final(ctx context.Context) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if t.finalCtx == nil {
		t.finalCtx, t.cancel = context.WithTimeout(context.WithoutCancel(ctx), saleTimeout)
	}
	return t.finalCtx, nil
}

// endFinal ends the final context, once the transaction is over.
func (t *tx) endFinal() {
	if t.cancel != nil {
		t.cancel()
	}
}

// db is the transaction as GORM, begun if it was not.
func (t *tx) db(ctx context.Context) (*gorm.DB, error) {
	if !t.open {
		t.open = true // a failed START TRANSACTION is rolled back: harmless
		if _, err := t.conn.ExecContext(ctx, t.begin); err != nil {
			return nil, err
		}
	}
	return t.gorm, nil
}

// commitIn appends a COMMIT to q, the transaction's last writes, so that
// it goes in their packet: a round trip fewer, and the row locks the next
// holder's claim waits for are let go a round trip sooner. Only where
// nothing read from the writes' answers could call the commit off (see
// Store.foldsCommit); once those answers are read, ended says so.
func (t *tx) commitIn(q []byte) []byte {
	t.committing = true
	return append(q, "; COMMIT"...)
}

// ended records that the COMMIT sent by commitIn was answered OK.
func (t *tx) ended() { t.open, t.committing = false, false }

// refusedBeforeCommit reports whether err is the server's refusal of a
// statement: MySQL runs no statement of a packet after one that failed, so
// a COMMIT that followed it in the packet did not run (and one that failed
// itself rolled back). Anything else (the connection broke, an answer read
// wrong) leaves open whether it ran.
func refusedBeforeCommit(err error) bool {
	var server *mysql.MySQLError
	return errors.As(err, &server)
}

// wrote records orders the transaction inserted, for the commit's check.
func (t *tx) wrote(ids ...uint64) { t.orders = append(t.orders, ids...) }

// rollback ends an open transaction without its writes, also when ctx has
// ended; or marks the connection to be closed when the rollback fails.
func (t *tx) rollback(ctx context.Context) {
	if !t.open {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saleTimeout)
	defer cancel()
	if _, err := t.conn.ExecContext(rctx, "ROLLBACK"); err != nil {
		t.discard()
	}
}

// discard has the connection closed instead of pooled. (A driver.ErrBadConn
// from Raw's function is database/sql's way to drop a connection; MySQL
// rolls back what the connection had open.)
func (t *tx) discard() {
	_ = t.conn.Raw(func(any) error { return driver.ErrBadConn })
}

// commit commits, and counts the transaction's orders in the same packet.
// On a Galera cluster a transaction can be rolled back by a brute-force
// abort (a replicated write-set that needs its row locks) without its
// client being told: the statements after it run outside any transaction
// and are lost, and the COMMIT finds no transaction and answers OK for
// nothing. A commit is applied on its own node before it answers, so a
// missing order is a sale that did not happen: service.ErrConflict, to be
// tried again. On one server the count always finds them; it is made there
// too (the seed's, the atomic and allot sales), except for a batch's
// commit, which rides uncounted with its writes there (commitIn).
func (t *tx) commit(ctx context.Context) error {
	if !t.open {
		return nil
	}
	fctx, err := t.final(ctx)
	if err != nil {
		t.rollback(ctx)
		return err // the buyer's deadline, before the COMMIT: nothing written
	}
	ctx = fctx
	if len(t.orders) == 0 {
		if _, err := t.conn.ExecContext(ctx, "COMMIT"); err != nil {
			t.discard()
			return commitError(err, true)
		}
		return nil
	}
	found, err := t.commitCounting(ctx)
	if err != nil {
		t.discard()
		return commitError(err, true)
	}
	return checkVerified(found, len(t.orders))
}

// commitCounting commits and, in the same packet, counts the orders the
// transaction wrote.
func (t *tx) commitCounting(ctx context.Context) (int64, error) {
	ids := make([]any, len(t.orders))
	for i, id := range t.orders {
		ids[i] = id
	}
	rows, err := t.conn.QueryContext(ctx, "COMMIT; SELECT COUNT(*) FROM order_info WHERE id IN (?"+
		strings.Repeat(", ?", len(ids)-1)+")", ids...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var found int64
	if !rows.Next() {
		return 0, errors.Join(errors.New("repo: no answer to the commit's count"), rows.Err())
	}
	if err := rows.Scan(&found); err != nil {
		return 0, err
	}
	return found, rows.Close()
}

// checkVerified compares the orders found after a commit with those it wrote.
func checkVerified(found int64, wrote int) error {
	switch {
	case found == int64(wrote):
		return nil
	case found == 0:
		return fmt.Errorf("%w: the commit answered OK but none of its %d orders is in the database "+
			"(a Galera brute-force abort whose error did not reach the client)", service.ErrConflict, wrote)
	default:
		return fmt.Errorf("%w: %d of the commit's %d orders are in the database", service.ErrCommitUnknown, found, wrote)
	}
}

// salePool is a pool for the sale transactions: several statements per
// query for a tx, and GORM over the same connections.
type salePool struct {
	sql  *sql.DB
	gorm *gorm.DB
	fo   *failover // a writer node's, on a cluster named by its nodes; nil: one server
	idle int       // the pool's idle connections
}

func newSalePool(cfg *mysql.Config, fo *failover, opts Options) (salePool, error) {
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return salePool{}, err
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(opts.SaleConns)
	db.SetMaxIdleConns(opts.SaleConns)
	db.SetConnMaxLifetime(30 * time.Minute)
	g, err := gorm.Open(gormmysql.New(gormmysql.Config{Conn: db}), &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
	})
	if err != nil {
		db.Close()
		return salePool{}, err
	}
	return salePool{sql: db, gorm: g, fo: fo, idle: opts.SaleConns}, nil
}

// commitError translates a transaction's error. When the connection failed
// during the commit itself, or the commit's answer did not come within its
// bound (a context error while committing: see tx.final), the outcome is
// unknown: service.ErrCommitUnknown, never the context's error, which
// would tell the buyer nothing was bought.
//
// Before the commit, a broken connection is service.ErrConnectionLost: the
// server rolls back what the connection had open, so nothing was written.
func commitError(err error, committing bool) error {
	ctxErr := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	if !committing && connBroken(err) && !ctxErr {
		return fmt.Errorf("%w: mysql: %w", service.ErrConnectionLost, err)
	}
	if committing && ctxErr {
		return fmt.Errorf("%w: no answer to the commit in time: %w", service.ErrCommitUnknown, err)
	}
	err = translate(err)
	if committing && errors.Is(err, service.ErrUnavailable) && !errors.Is(err, service.ErrConflict) {
		return fmt.Errorf("%w: %w", service.ErrCommitUnknown, err)
	}
	return err
}
