// Package repo stores the shop's goods and orders in MySQL through GORM and
// turns MySQL's errors into the service's.
package repo

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/pressly/goose/v3"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/migrations"
)

// goodsStock maps the seed's goods_stock table.
type goodsStock struct {
	ID        uint32     `gorm:"column:id;primaryKey"`
	GoodsNo   int32      `gorm:"column:goods_no"`
	Stock     *int32     `gorm:"column:stock"`
	IsActive  *int16     `gorm:"column:isActive"`
	Fence     int64      `gorm:"column:fence"`
	SaleStart *time.Time `gorm:"column:sale_start"`
	SaleEnd   *time.Time `gorm:"column:sale_end"`
}

func (goodsStock) TableName() string { return "goods_stock" }

// orderInfo maps order_info.
type orderInfo struct {
	ID        uint64     `gorm:"column:id;primaryKey"`
	GoodsNo   int32      `gorm:"column:goods_no"`
	RequestID string     `gorm:"column:request_id"`
	UserID    *string    `gorm:"column:user_id"`
	Limited   bool       `gorm:"column:buyer_limited"` // one order per goods and buyer (the unique key)
	Status    string     `gorm:"column:status"`
	CreatedAt time.Time  `gorm:"column:created_at"`
	PaidAt    *time.Time `gorm:"column:paid_at"`
	ExpiredAt *time.Time `gorm:"column:expired_at"`
}

// newOrderRow is the row of a new order: unpaid.
func newOrderRow(o *service.Order, now time.Time) orderInfo {
	r := orderInfo{GoodsNo: o.GoodsNo, RequestID: o.RequestID, Status: service.OrderUnpaid, CreatedAt: now}
	if o.UserID != "" {
		r.UserID, r.Limited = &o.UserID, o.OnePerBuyer
	}
	return r
}

func (r orderInfo) order() service.Order {
	o := service.Order{ID: r.ID, GoodsNo: r.GoodsNo, RequestID: r.RequestID, Status: r.Status, OnePerBuyer: r.Limited,
		CreatedAt: r.CreatedAt, PaidAt: r.PaidAt, ExpiredAt: r.ExpiredAt}
	if r.UserID != nil {
		o.UserID = *r.UserID
	}
	return o
}

func (orderInfo) TableName() string { return "order_info" }

// Options size the connection pool; the defaults are the seed's Druid pool.
type Options struct {
	MaxOpenConns int // default 100
	MaxIdleConns int // default 10
	// SaleConns sizes each sale pool (open and idle): how many sale
	// transactions run at once. Default DefaultSaleConns.
	SaleConns int
	// IdleTransactionTimeout, on MariaDB, has the server end a transaction
	// of the store's that waits this long for its client's next statement
	// (idle_transaction_timeout, whole seconds): it rolls back and its
	// connection is closed. A lock holder cut off from the database after
	// its claim holds the goods' row lock while its transaction stays open,
	// and no other holder can sell meanwhile; set it to the lock's session
	// timeout, after which the lock has passed on anyway. 0: no bound.
	IdleTransactionTimeout time.Duration
	// TLSCA, a PEM file of CA certificates, has every connection use TLS
	// and verify the server's certificate (its name: the DSN's host) with
	// those CAs alone. Empty: the DSN's own tls parameter decides
	// (plaintext without one).
	TLSCA string
}

// DefaultSaleConns is the default size of a sale pool. Sale transactions on
// many goods do not wait for each other's row locks: as many as the pool
// holds run in the server at once, and beyond a few per core they cost it
// more CPU than they overlap (the commit that set it measured atomic
// purchases over 200 goods with pools of 8 to 100; docs/strategies.md#many-goods
// has what bench-shop measures with it).
const DefaultSaleConns = 16

// Store is the MySQL store. It implements service.Store.
type Store struct {
	db        *gorm.DB   // reads, orders, stock settings: causal reads on a cluster
	sales     []salePool // the sale transactions', one per writer node (see salesFor)
	cluster   bool       // a Galera node (wsrep_on): see Open
	claimStmt string     // the claim's statement (see causal)
}

// Open connects to MySQL and checks that it answers. The DSN is the
// go-sql-driver form; the store always asks for found-rows counts (so an
// UPDATE that writes an unchanged value still counts as matched), values
// interpolated into the statements, parsed times in UTC and, unless given,
// a 5s dial timeout. Its tcp(...) may name several servers, comma
// separated: see failover.go.
//
// On a MariaDB Galera node (wsrep_on) the store is a cluster store: its
// reads are causal (wsrep_sync_wait=1: the node first applies what the
// cluster had committed when the statement came); in a sale's transaction
// only the claim is (the statements after it read what it locked), and
// every sale's commit is confirmed by reading its orders back before the
// buyer hears of it (see inTx and saleTx.commit). Where a goods' sales may
// reach different nodes the shop hands the lock on after the commit
// (OneWriter).
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	dsn, addrs := splitAddrs(dsn)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, fmt.Errorf("repo: mysql dsn: %w", err)
	}
	var fo *failover
	if len(addrs) > 1 {
		fo = &failover{addrs: addrs}
		cfg.DialFunc = fo.dial
	}
	if opts.TLSCA != "" {
		if cfg.TLS != nil {
			return nil, errors.New("repo: a CA for TLS and a tls parameter in the DSN: choose one")
		}
		if cfg.TLS, err = caTLS(opts.TLSCA); err != nil {
			return nil, err
		}
	}
	cfg.ClientFoundRows = true
	// One text query per statement instead of prepare, execute and close:
	// a third of the round trips on the purchase's path. The driver escapes
	// the values for the connection's character set.
	cfg.InterpolateParams = true
	cfg.ParseTime = true
	cfg.Loc = time.UTC
	if cfg.Timeout == 0 {
		cfg.Timeout = 5 * time.Second
	}
	mariadb, cluster, err := probe(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("repo: mysql at %s: %w", cfg.Addr, translate(err))
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	if _, set := cfg.Params["wsrep_sync_wait"]; cluster && !set {
		cfg.Params["wsrep_sync_wait"] = "1"
	}
	if _, set := cfg.Params["idle_transaction_timeout"]; mariadb && opts.IdleTransactionTimeout > 0 && !set {
		cfg.Params["idle_transaction_timeout"] = strconv.Itoa(int(math.Ceil(opts.IdleTransactionTimeout.Seconds())))
	}
	// The pool is made from the config, not its DSN text, which would lose
	// the failover's dial function.
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("repo: mysql dsn: %w", err)
	}
	pool := sql.OpenDB(connector)
	db, err := gorm.Open(gormmysql.New(gormmysql.Config{Conn: pool}), &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
	})
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("repo: open %s: %w", cfg.Addr, translate(err))
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("repo: %w", err)
	}
	if opts.MaxOpenConns <= 0 {
		opts.MaxOpenConns = 100
	}
	if opts.MaxIdleConns <= 0 {
		opts.MaxIdleConns = 10
	}
	if opts.SaleConns <= 0 {
		opts.SaleConns = DefaultSaleConns
	}
	sqlDB.SetMaxOpenConns(opts.MaxOpenConns)
	sqlDB.SetMaxIdleConns(opts.MaxIdleConns)
	sqlDB.SetConnMaxLifetime(30 * time.Minute)
	s := &Store{db: db, cluster: cluster}
	// The sale transactions' pools, of the same size, that let a query carry
	// several statements (saleTx sends fixed statement texts so). On a
	// cluster named by several nodes, one per node: the writer of a goods.
	multi := cfg.Clone()
	multi.MultiStatements = true
	if cluster {
		multi.Params["wsrep_sync_wait"] = "0" // the claim asks for its own (causal)
	}
	writers := []*mysql.Config{multi}
	if cluster && fo != nil {
		writers = writerConfigs(multi, addrs)
	}
	for _, w := range writers {
		sp, err := newSalePool(w, opts)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("repo: open %s: %w", cfg.Addr, translate(err))
		}
		s.sales = append(s.sales, sp)
	}
	s.claimStmt = s.causal(claimSQL)
	if err := s.Ping(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("repo: mysql at %s: %w", cfg.Addr, err)
	}
	return s, nil
}

// erUnknownSystemVariable: a MySQL server without wsrep_on.
const erUnknownSystemVariable = 1193

// probe asks the server of cfg whether it is MariaDB, and whether it is a
// Galera node that replicates (wsrep_on; a server that does not know the
// variable is not).
func probe(ctx context.Context, cfg *mysql.Config) (mariadb, cluster bool, err error) {
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return false, false, err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return false, false, err
	}
	mariadb = strings.Contains(version, "MariaDB")
	err = db.QueryRowContext(ctx, "SELECT @@GLOBAL.wsrep_on").Scan(&cluster)
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == erUnknownSystemVariable {
		return mariadb, false, nil
	}
	return mariadb, cluster, err
}

// Cluster reports whether the store is a node of a multi-primary Galera
// cluster.
func (s *Store) Cluster() bool { return s.cluster }

// OneWriter reports whether every sale of a goods, from every instance,
// goes through one server: one MySQL, or the goods' writer node of a
// Galera cluster that the DSN names by its nodes (see writerConfigs). Row
// locks are each server's own: only then does the next lock holder's claim
// wait for the previous holder's row lock, so that the lock may be handed
// on during the commit; else it must be after it
// (service.Config.HandOffAfterCommit). (During a failover two instances
// may write through different nodes for a moment: a claim that read a
// stale row then writes nothing and is tried again, see sell.)
func (s *Store) OneWriter() bool { return !s.cluster || len(s.sales) > 1 }

// inTx runs fn in a transaction on one connection of sp and commits when
// fn returns nil, with the count of the orders fn wrote (its ids) in the
// commit's packet on a cluster. There a transaction can be rolled back by a
// brute-force abort (a replicated write-set that needs its row locks)
// without its client being told: the statements after it run outside any
// transaction and are lost, and the COMMIT finds no transaction and answers
// OK for nothing. A commit is applied on its own node before it answers, so
// a missing order is a sale that did not happen: service.ErrConflict, to be
// tried again. (On one server the count is not needed and not made.) An
// error before the commit rolls back, also when ctx has ended; a failed
// commit is translated by commitError.
func (s *Store) inTx(ctx context.Context, sp salePool, fn func(tx *gorm.DB) (ids []uint64, err error)) error {
	connected := false
	err := sp.gorm.WithContext(ctx).Connection(func(conn *gorm.DB) error {
		connected = true
		// A new session: each statement builds its own clauses, as in a
		// GORM transaction.
		tx := conn.Session(&gorm.Session{NewDB: true})
		if err := tx.Exec("START TRANSACTION").Error; err != nil {
			return commitError(err, false)
		}
		ids, err := fn(tx)
		if err != nil {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saleTimeout)
			defer cancel()
			if rerr := tx.WithContext(rctx).Exec("ROLLBACK").Error; rerr != nil {
				discardConn(tx) // never handed to another sale with a transaction open
			}
			return commitError(err, false)
		}
		if !s.cluster || len(ids) == 0 {
			if err := tx.Exec("COMMIT").Error; err != nil {
				discardConn(tx)
				return commitError(err, true)
			}
			return nil
		}
		var found int64
		if err := tx.Raw(commitCounting+"?", ids).Scan(&found).Error; err != nil {
			discardConn(tx)
			return commitError(err, true)
		}
		return checkVerified(found, len(ids))
	})
	if err != nil && !connected {
		return commitError(err, false) // no connection: nothing was sent
	}
	return err
}

// discardConn closes the connection of a GORM Connection callback instead
// of pooling it (see saleTx.discard).
func discardConn(tx *gorm.DB) {
	if c, ok := tx.Statement.ConnPool.(*sql.Conn); ok {
		_ = c.Raw(func(any) error { return driver.ErrBadConn })
	}
}

// commitCounting commits and, in the same packet, counts the orders whose
// ids follow (a parenthesised list): see inTx.
const commitCounting = "COMMIT; SELECT COUNT(*) FROM order_info WHERE id IN "

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

// SQLDB is the store's connection pool, for its statistics.
func (s *Store) SQLDB() (*sql.DB, error) { return s.db.DB() }

// SalesDB is the pool of the sale transactions (the first writer's, on a
// cluster named by several nodes), for its statistics.
func (s *Store) SalesDB() *sql.DB { return s.sales[0].sql }

// Close closes the connection pools.
func (s *Store) Close() error {
	var errs []error
	for _, sp := range s.sales {
		errs = append(errs, sp.sql.Close())
	}
	sqlDB, err := s.db.DB()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	return errors.Join(append(errs, sqlDB.Close())...)
}

// Ping checks that MySQL answers.
func (s *Store) Ping(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		return translate(err)
	}
	return translate(s.sales[0].sql.PingContext(ctx))
}

// Migrate applies the schema's versions the database lacks (see
// migrations.NewProvider) and returns the versions it applied.
func (s *Store) Migrate(ctx context.Context) ([]int64, error) {
	p, err := s.migrations()
	if err != nil {
		return nil, err
	}
	results, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("repo: migrate: %w", translate(err))
	}
	var applied []int64
	for _, r := range results {
		applied = append(applied, r.Source.Version)
	}
	return applied, nil
}

// MigrationState is one version of the schema in a database.
type MigrationState struct {
	Version   int64
	File      string
	Applied   bool
	AppliedAt time.Time
}

// MigrationStatus lists the schema's versions and which the database has.
func (s *Store) MigrationStatus(ctx context.Context) ([]MigrationState, error) {
	p, err := s.migrations()
	if err != nil {
		return nil, err
	}
	status, err := p.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("repo: migration status: %w", translate(err))
	}
	files := map[int64]string{}
	for _, v := range migrations.Versions() {
		files[v.Version] = v.File
	}
	out := make([]MigrationState, len(status))
	for i, st := range status {
		out[i] = MigrationState{Version: st.Source.Version, File: files[st.Source.Version],
			Applied: st.State == goose.StateApplied, AppliedAt: st.AppliedAt}
	}
	return out, nil
}

func (s *Store) migrations() (*goose.Provider, error) {
	sqlDB, err := s.db.DB()
	if err != nil {
		return nil, fmt.Errorf("repo: %w", err)
	}
	p, err := migrations.NewProvider(sqlDB, nil)
	if err != nil {
		return nil, fmt.Errorf("repo: migrations: %w", err)
	}
	return p, nil
}

// Goods reads the row of goodsNo (the first by id, should there be several).
func (s *Store) Goods(ctx context.Context, goodsNo int32) (service.Goods, error) {
	return goods(s.db.WithContext(ctx), goodsNo)
}

func goods(db *gorm.DB, goodsNo int32) (service.Goods, error) {
	var row goodsStock
	err := db.Where("goods_no = ?", goodsNo).Order("id").Take(&row).Error
	if err != nil {
		return service.Goods{}, translate(err)
	}
	return row.goods(), nil
}

func (row goodsStock) goods() service.Goods {
	g := service.Goods{ID: row.ID, GoodsNo: row.GoodsNo}
	if row.Stock != nil {
		g.Stock = *row.Stock
	}
	if row.IsActive != nil {
		g.IsActive = *row.IsActive
	}
	g.SaleStart, g.SaleEnd = row.SaleStart, row.SaleEnd
	return g
}

// Sell sets the stock of row g.ID and inserts the order in one transaction:
// the purchase without a lock.
func (s *Store) Sell(ctx context.Context, g service.Goods, stock int32, order *service.Order) error {
	row := newOrderRow(order, time.Now().UTC())
	err := s.inTx(ctx, s.salesFor(g.GoodsNo), func(tx *gorm.DB) ([]uint64, error) {
		if err := writeSale(tx, g.ID, stock, 0, &row); err != nil {
			return nil, err
		}
		return []uint64{row.ID}, nil
	})
	if err != nil {
		return err
	}
	order.ID, order.Status, order.CreatedAt = row.ID, row.Status, row.CreatedAt
	return nil
}

// SellFenced is a purchase under a lock whose fencing token is fence, in
// one transaction: it claims the goods' row (see claim), asks decide for the
// new stock, writes it with the token and the order, calls guard and
// commits. A newer holder's token on the row is service.ErrFenced and a
// goods without a row service.ErrNotFound, with nothing written; an error
// from decide or guard rolls back and is returned. It is a saleTx: two round
// trips to MySQL before the commit.
func (s *Store) SellFenced(ctx context.Context, goodsNo int32, fence int64, order *service.Order,
	decide func(service.Goods) (int32, error), guard func() error) error {
	row := newOrderRow(order, time.Time{})
	err := s.inSaleTx(ctx, goodsNo, func(t *saleTx) error {
		g, err := t.claim(ctx, goodsNo, fence)
		if err != nil {
			return err
		}
		stock, err := decide(g)
		if err != nil {
			return err
		}
		row.CreatedAt = time.Now().UTC()
		if err := t.sell(ctx, stock, fence, &row); err != nil {
			return err
		}
		return guard()
	})
	if err != nil {
		return err
	}
	order.ID, order.Status, order.CreatedAt = row.ID, row.Status, row.CreatedAt
	return nil
}

// commitError translates a transaction's error. When the connection failed
// during the commit itself, the outcome is unknown: service.ErrCommitUnknown.
//
// Before the commit, a broken connection is service.ErrConnectionLost: the
// server rolls back what the connection had open, so nothing was written.
func commitError(err error, committing bool) error {
	if !committing && connBroken(err) && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: mysql: %w", service.ErrConnectionLost, err)
	}
	err = translate(err)
	if committing && errors.Is(err, service.ErrUnavailable) && !errors.Is(err, service.ErrConflict) {
		return fmt.Errorf("%w: %w", service.ErrCommitUnknown, err)
	}
	return err
}

// OrderByRequestID reads the order of requestID; found is false when there
// is none. The read locks the request id's index entry (shared), so it waits
// for a transaction still inserting that order to commit or roll back rather
// than missing it.
func (s *Store) OrderByRequestID(ctx context.Context, requestID string) (order service.Order, found bool, err error) {
	return s.lockedOrder(ctx, "request_id = ?", requestID)
}

// lockedOrder reads the order matching where (a unique key's condition)
// with a shared lock, so that a transaction still inserting it is waited
// for rather than missed.
func (s *Store) lockedOrder(ctx context.Context, where string, args ...any) (service.Order, bool, error) {
	var rows []orderInfo
	err := s.db.WithContext(ctx).Raw("SELECT * FROM order_info WHERE "+where+" LOCK IN SHARE MODE", args...).Scan(&rows).Error
	if err != nil {
		return service.Order{}, false, translate(err)
	}
	if len(rows) == 0 {
		return service.Order{}, false, nil
	}
	return rows[0].order(), true, nil
}

// writeSale sets the stock of row id and inserts the order row: the order
// first, so that the row lock, if this statement takes it, is held from the
// stock's update to the commit only. A fence above 0 is written with the
// stock: the token of the lock the sale was made under. ErrPurchaseFailed
// when the row is gone.
func writeSale(tx *gorm.DB, id uint32, stock int32, fence int64, order *orderInfo) error {
	if err := tx.Create(order).Error; err != nil {
		return err
	}
	return writeStock(tx, id, stock, fence)
}

// writeStock sets the stock of row id, and its fence when fence > 0.
func writeStock(tx *gorm.DB, id uint32, stock int32, fence int64) error {
	set := map[string]any{"stock": stock}
	if fence > 0 {
		set["fence"] = fence
	}
	res := tx.Model(&goodsStock{}).Where("id = ?", id).Updates(set)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return service.ErrPurchaseFailed
	}
	return nil
}

// SellAtomic is the purchase with the database as the lock: it inserts the
// order, then decrements the stock of order.GoodsNo where it is above zero
// (the first such row by id), in one transaction. The order comes first so
// that the hot row is locked only from its update to the commit.
func (s *Store) SellAtomic(ctx context.Context, order *service.Order) error {
	row := newOrderRow(order, time.Now().UTC())
	err := s.inTx(ctx, s.salesFor(order.GoodsNo), func(tx *gorm.DB) ([]uint64, error) {
		if err := tx.Create(&row).Error; err != nil {
			return nil, err
		}
		now := time.Now().UTC()
		res := tx.Exec(atomicSQL, order.GoodsNo, now, now)
		if res.Error != nil {
			return nil, res.Error
		}
		if res.RowsAffected == 0 {
			g, err := goods(tx, order.GoodsNo)
			if err != nil {
				return nil, err // no such goods
			}
			if err := g.OpenAt(now); err != nil {
				return nil, err
			}
			return nil, service.ErrSoldOut
		}
		return []uint64{row.ID}, nil
	})
	if err != nil {
		return err
	}
	order.ID, order.Status, order.CreatedAt = row.ID, row.Status, row.CreatedAt
	return nil
}

// atomicSQL is the atomic purchase's decrement: the first row of the goods,
// if it has stock and its sale window is open at the time given twice.
const atomicSQL = "UPDATE goods_stock SET stock = stock - 1 WHERE goods_no = ? AND stock > 0 " +
	"AND (sale_start IS NULL OR sale_start <= ?) AND (sale_end IS NULL OR sale_end > ?) ORDER BY id LIMIT 1"

// claim is the start of every purchase under the lock: a locking read of the
// goods' row and a check of its fence against the lock's token. The read
// waits for an earlier holder's transaction still in flight (its row lock)
// and then sees its commit; a row whose fence is above the token was written
// under a newer lock (service.ErrFenced). The row stays locked until the
// transaction ends, and the sale writes the token into the fence with the
// stock, so no older holder can write after it.
//
// The batch claims in a GORM transaction (here), the seed's sale on a
// connection of its own (saleTx.claim); both read the claim's answer with
// readClaim, the one fence check.
func (s *Store) claim(tx *gorm.DB, goodsNo int32, fence int64) (goodsStock, error) {
	rows, err := tx.Raw(s.claimStmt, goodsNo).Rows()
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

// claimSQL is the claim's locking read of the goods' row.
const claimSQL = "SELECT id, goods_no, stock, isActive, fence, sale_start, sale_end FROM goods_stock " +
	"WHERE goods_no = ? ORDER BY id LIMIT 1 FOR UPDATE"

// causal makes a statement a causal read on a cluster: the node first
// applies every write-set the cluster had committed when it came. The
// claim is one, so that the next lock holder, on any node, reads the
// previous holder's commit.
func (s *Store) causal(stmt string) string {
	if !s.cluster {
		return stmt
	}
	return "SET STATEMENT wsrep_sync_wait=1 FOR " + stmt
}

// claimedStock is the condition of a claimed row's write: the row as the
// claim read it. Under the claim's row lock it always holds on one server;
// on a Galera cluster, where a read can miss a commit of another node, it
// makes a sale on a stale read write nothing (service.ErrConflict) instead
// of overwriting that commit.
const claimedStock = "id = ? AND stock <=> ? AND fence = ?"

// writeClaimedSQL is the one write of a claimed row: its stock and the
// lock's token as its fence, if the row is still as the claim read it
// (arguments: stock, fence, then the row's id, stock and fence as read).
const writeClaimedSQL = "UPDATE goods_stock SET stock = ?, fence = ? WHERE " + claimedStock

// writeClaimed writes the stock and the fence of a row read by claim, if
// the row is still as read.
func writeClaimed(tx *gorm.DB, read goodsStock, stock int32, fence int64) error {
	res := tx.Exec(writeClaimedSQL, stock, fence, read.ID, read.Stock, read.Fence)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return changedSinceClaim(read)
	}
	return nil
}

// changedSinceClaim is the error of a claimed row's write that found the
// row changed.
func changedSinceClaim(read goodsStock) error {
	return fmt.Errorf("%w: goods row %d changed after the claim read it (a stale read)", service.ErrConflict, read.ID)
}

// StockReset says what else `shop stock set` resets besides the stock.
type StockReset struct {
	// ClearOrders deletes the goods' order rows, so that a load test starts
	// from zero.
	ClearOrders bool
	// ResetFence sets the row's fencing token back to 0. Needed when
	// ZooKeeper's data was wiped (its zxids, the tokens, start again from
	// low values); unsafe while an old lock holder may still be writing.
	ResetFence bool
	// SaleStart and SaleEnd, when set, change the sale window; a zero time
	// in them opens that side (NULL).
	SaleStart, SaleEnd *time.Time
}

// SetStock sets the stock of goodsNo, creating an active row when there is
// none, and resets what r asks for. Chosen as a deadlock's victim (its
// delete of order rows takes gap locks that a concurrent insert may need),
// it was rolled back and runs again, a few times.
func (s *Store) SetStock(ctx context.Context, goodsNo, stock int32, r StockReset) error {
	for attempt := 0; ; attempt++ {
		err := s.setStock(ctx, goodsNo, stock, r)
		var me *mysql.MySQLError
		if attempt < 3 && errors.As(err, &me) && me.Number == erLockDeadlock {
			continue
		}
		if errors.Is(err, ErrEmptyWindow) {
			return err
		}
		return translate(err)
	}
}

func (s *Store) setStock(ctx context.Context, goodsNo, stock int32, r StockReset) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		set := map[string]any{"stock": stock}
		if r.ResetFence {
			set["fence"] = 0
		}
		for col, t := range map[string]*time.Time{"sale_start": r.SaleStart, "sale_end": r.SaleEnd} {
			switch {
			case t == nil:
			case t.IsZero():
				set[col] = nil
			default:
				set[col] = t.UTC()
			}
		}
		res := tx.Model(&goodsStock{}).Where("goods_no = ?", goodsNo).Updates(set)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			active := int16(1)
			row := goodsStock{GoodsNo: goodsNo, Stock: &stock, IsActive: &active}
			if r.SaleStart != nil && !r.SaleStart.IsZero() {
				row.SaleStart = r.SaleStart
			}
			if r.SaleEnd != nil && !r.SaleEnd.IsZero() {
				row.SaleEnd = r.SaleEnd
			}
			if err := tx.Create(&row).Error; err != nil {
				return err
			}
		}
		var w goodsStock
		if err := tx.Select("sale_start", "sale_end").Where("goods_no = ?", goodsNo).Order("id").Take(&w).Error; err != nil {
			return err
		}
		if w.SaleStart != nil && w.SaleEnd != nil && !w.SaleEnd.After(*w.SaleStart) {
			return fmt.Errorf("%w: it would end at %s, not after its start at %s", ErrEmptyWindow,
				w.SaleEnd.UTC().Format(time.RFC3339), w.SaleStart.UTC().Format(time.RFC3339))
		}
		if r.ClearOrders {
			return tx.Where("goods_no = ?", goodsNo).Delete(&orderInfo{}).Error
		}
		return nil
	})
}

// ErrEmptyWindow: SetStock was asked for a sale window that ends before it
// starts (with the bound it left as it was); nothing was changed.
var ErrEmptyWindow = errors.New("the sale window would be empty")

// CountOrders counts the order rows of goodsNo.
func (s *Store) CountOrders(ctx context.Context, goodsNo int32) (int64, error) {
	var n int64
	err := s.db.WithContext(ctx).Model(&orderInfo{}).Where("goods_no = ?", goodsNo).Count(&n).Error
	return n, translate(err)
}

// buyerKey is the unique key of one order per goods and buyer (schema
// version 5); MySQL names it in a duplicate entry's message.
const buyerKey = "uk_order_info_goods_buyer"

// MySQL error numbers the store translates.
const (
	erDupEntry           = 1062
	erLockWaitTimeout    = 1205
	erLockDeadlock       = 1213
	erTooManyConnections = 1040
	erAccessDenied       = 1045
	erBadDB              = 1049
	erServerShutdown     = 1053
	erUnknownComError    = 1047 // a Galera node that is not ready: "WSREP has not yet prepared node for application use"
)

// translate turns driver and GORM errors into the service's sentinel errors,
// keeping the original in the chain.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return service.ErrNotFound
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err // the caller's own deadline, not an unreachable server (DeadlineExceeded is a net.Error too)
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case erDupEntry:
			if strings.Contains(me.Message, buyerKey) {
				return fmt.Errorf("%w: %w", service.ErrAlreadyBought, err)
			}
			return fmt.Errorf("%w: %w", service.ErrDuplicateRequest, err)
		case erLockDeadlock:
			return fmt.Errorf("%w: mysql: %w", service.ErrConflict, err)
		case erLockWaitTimeout, erUnknownComError, erTooManyConnections, erAccessDenied, erBadDB, erServerShutdown:
			return fmt.Errorf("%w: mysql: %w", service.ErrUnavailable, err)
		}
		return err
	}
	if connBroken(err) {
		return fmt.Errorf("%w: mysql: %w", service.ErrUnavailable, err)
	}
	return err
}

// connBroken: err is the network's or a broken connection's, not the
// server's answer.
func connBroken(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysql.ErrInvalidConn) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET)
}

// ActiveOrderOfBuyer reads the order of goodsNo that userID holds under the
// one-per-buyer rule (not expired), if there is one.
func (s *Store) ActiveOrderOfBuyer(ctx context.Context, goodsNo int32, userID string) (order service.Order, found bool, err error) {
	return s.lockedOrder(ctx, "goods_no = ? AND active_buyer = ?", goodsNo, userID)
}

// caTLS is the TLS configuration that trusts the CAs of the PEM file only.
func caTLS(file string) (*tls.Config, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("repo: the CA for TLS: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("repo: %s holds no PEM certificate", file)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
