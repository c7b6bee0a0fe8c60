package repo

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync/atomic"
)

// The store's own pool (payments, reads, the sweeper, the stock commands)
// on a cluster named by several nodes dials the instance's node first. A
// node cut off from the cluster refuses every statement (1047) for as long
// as the partition lasts, and a pool that kept its connections there
// refused every payment and read of the instance's buyers meanwhile
// (TestGaleraNodePartitionedMidSale: B's payment and read, 1047). The
// sale pools see the refusal where the sale runs (salePool.refused); this
// pool's statements come from many places, so the pool's connections see
// it themselves: a connection whose statement a node refused for being out
// of the Primary Component has the failover check the nodes and move on,
// and is given up. A statement outside a transaction was not run, and
// database/sql runs it again on another connection (driver.ErrBadConn);
// one inside a transaction fails with the node's error, and the
// connection goes with the transaction.

// primaryConnector wraps a connector of a pool whose failover knows the
// nodes' readiness.
type primaryConnector struct {
	driver.Connector
	fo   *failover
	pool func() (*sql.DB, int) // the pool these connections are in, and its idle connections
}

func (c primaryConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &primaryConn{conn: conn, c: c}, nil
}

// primaryConn is a connection of a primaryConnector. conn is the MySQL
// driver's, which has every interface below.
type primaryConn struct {
	conn driver.Conn
	c    primaryConnector
	inTx bool        // a transaction is open: no statement may be run again
	bad  atomic.Bool // refused by a node out of the Primary Component
}

// seen handles a statement's error: a node's refusal for being out of the
// Primary Component marks the connection bad, has the failover move on,
// and, outside a transaction, becomes driver.ErrBadConn (run it again).
func (pc *primaryConn) seen(ctx context.Context, err error) error {
	if err == nil || !notPrimary(err) {
		return err
	}
	pc.refusedBy(ctx)
	if pc.inTx {
		return err
	}
	return driver.ErrBadConn
}

// refusedBy marks the connection bad and has the failover pass the node
// over.
func (pc *primaryConn) refusedBy(ctx context.Context) {
	pc.bad.Store(true)
	pool, idle := pc.c.pool()
	pc.c.fo.passOver(ctx, pool, idle)
}

func (pc *primaryConn) Prepare(query string) (driver.Stmt, error) {
	s, err := pc.conn.Prepare(query)
	return s, pc.seen(context.Background(), err)
}

func (pc *primaryConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	s, err := pc.conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	return s, pc.seen(ctx, err)
}

func (pc *primaryConn) Close() error { return pc.conn.Close() }

func (pc *primaryConn) Begin() (driver.Tx, error) {
	return pc.BeginTx(context.Background(), driver.TxOptions{})
}

func (pc *primaryConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	tx, err := pc.conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, pc.seen(ctx, err) // nothing open yet: BEGIN may be run again
	}
	pc.inTx = true
	return primaryTx{tx: tx, pc: pc}, nil
}

func (pc *primaryConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	r, err := pc.conn.(driver.ExecerContext).ExecContext(ctx, query, args)
	return r, pc.seen(ctx, err)
}

func (pc *primaryConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	r, err := pc.conn.(driver.QueryerContext).QueryContext(ctx, query, args)
	return r, pc.seen(ctx, err)
}

func (pc *primaryConn) Ping(ctx context.Context) error {
	return pc.seen(ctx, pc.conn.(driver.Pinger).Ping(ctx))
}

func (pc *primaryConn) CheckNamedValue(nv *driver.NamedValue) error {
	return pc.conn.(driver.NamedValueChecker).CheckNamedValue(nv)
}

func (pc *primaryConn) ResetSession(ctx context.Context) error {
	if pc.bad.Load() {
		return driver.ErrBadConn
	}
	return pc.conn.(driver.SessionResetter).ResetSession(ctx)
}

func (pc *primaryConn) IsValid() bool {
	return !pc.bad.Load() && pc.conn.(driver.Validator).IsValid()
}

// primaryTx ends its connection's transaction.
type primaryTx struct {
	tx driver.Tx
	pc *primaryConn
}

func (t primaryTx) Commit() error {
	t.pc.inTx = false
	err := t.tx.Commit()
	if err != nil && notPrimary(err) {
		t.pc.refusedBy(context.Background())
	}
	return err
}

func (t primaryTx) Rollback() error {
	t.pc.inTx = false
	return t.tx.Rollback()
}
