// Package repo stores the shop's goods and orders in MySQL through GORM and
// turns MySQL's errors into the service's.
package repo

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// Options size the connection pool; the defaults are the seed's Druid pool.
type Options struct {
	MaxOpenConns int // default DefaultMaxOpenConns
	MaxIdleConns int // default DefaultMaxIdleConns
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
	// Password, when set, replaces the DSN's password (a secret kept out
	// of the DSN, read from a file by the caller).
	Password string
	// Now is the time an order is placed at (nil: this machine's clock);
	// the shop's follows the database's (service.Clock).
	Now func() time.Time
}

// The read pool's defaults (mysql.maxOpenConns, mysql.maxIdleConns): the
// seed's Druid maxActive, and as many kept idle (Go closes every connection
// returned beyond MaxIdleConns, and a burst then opens new ones faster than
// MySQL's back_log takes them).
const (
	DefaultMaxOpenConns = 100
	DefaultMaxIdleConns = DefaultMaxOpenConns
)

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
	returning bool       // MariaDB 10.5 or later: INSERT ... RETURNING (see writeBatch)
	rowIDs    *rowIDs    // the rows of the goods claimed (see lockGoods)
	now       func() time.Time
}

// dsnError is a DSN the driver refused, with the setting it came from and
// the form it takes.
func dsnError(err error) error {
	return fmt.Errorf("repo: mysql.dsn: %w (the form is user:password@tcp(host:port)/database)", err)
}

// DatabaseOf is the name of the database a DSN names ("" for none).
func DatabaseOf(dsn string) (string, error) {
	dsn, _ = splitAddrs(dsn)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "", dsnError(err)
	}
	return cfg.DBName, nil
}

// UnverifiedTLS names the DSN's tls parameter when it encrypts without
// checking the server's certificate (skip-verify; preferred, which also
// falls back to plaintext), "" otherwise.
func UnverifiedTLS(dsn string) string {
	dsn, _ = splitAddrs(dsn)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return ""
	}
	switch cfg.TLSConfig {
	case "skip-verify", "preferred":
		return cfg.TLSConfig
	}
	return ""
}

// PlaintextRemote names a server the DSN reaches in plaintext (no tls
// parameter, or tls=false) on a host other than this one, "" when there
// is none: the password's handshake and every order cross a network.
// Options.TLSCA, when set, encrypts whatever the DSN says.
func PlaintextRemote(dsn string) string {
	dsn, addrs := splitAddrs(dsn)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil || cfg.Net != "tcp" || cfg.TLSConfig != "" && cfg.TLSConfig != "false" {
		return ""
	}
	if addrs == nil {
		addrs = []string{cfg.Addr}
	}
	for _, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			host = a
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return a
		}
	}
	return ""
}

// Open connects to MySQL and checks that it answers. The DSN is the
// go-sql-driver form; the store always asks for found-rows counts (so an
// UPDATE that writes an unchanged value still counts as matched), values
// interpolated into the statements, parsed times in UTC and, unless given,
// a 5s dial timeout. Its tcp(...) may name several servers, comma
// separated: see failover.go.
//
// On a MariaDB Galera node (wsrep_on) the store is a cluster store: its
// reads, UPDATEs and DELETEs are causal (wsrep_sync_wait=3: the node
// first applies what the cluster had committed when the statement came);
// in a sale's transaction only the claim is (the statements after it read
// what it locked), and every sale's commit is confirmed by reading its
// orders back before the buyer hears of it (see tx.commit). Where a
// goods' sales may reach different nodes the shop hands the lock on after
// the commit (OneWriter).
func Open(ctx context.Context, dsn string, opts Options) (*Store, error) {
	dsn, addrs := splitAddrs(dsn)
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return nil, dsnError(err)
	}
	if opts.Password != "" {
		cfg.Passwd = opts.Password
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
	mariadb, returning, cluster, err := probe(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("repo: mysql at %s: %w", cfg.Addr, translate(err))
	}
	if cfg.Params == nil {
		cfg.Params = map[string]string{}
	}
	// Causal reads (1) and UPDATEs and DELETEs (2): a payment or a sweep
	// on this node must see an order another node has just committed
	// (TestGaleraPaymentThroughAnotherNodeFindsItsOrder).
	if _, set := cfg.Params["wsrep_sync_wait"]; cluster && !set {
		cfg.Params["wsrep_sync_wait"] = "3"
	}
	if _, set := cfg.Params["idle_transaction_timeout"]; mariadb && opts.IdleTransactionTimeout > 0 && !set {
		cfg.Params["idle_transaction_timeout"] = strconv.Itoa(int(math.Ceil(opts.IdleTransactionTimeout.Seconds())))
	}
	// The pool is made from the config, not its DSN text, which would lose
	// the failover's dial function.
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, dsnError(err)
	}
	var pool *sql.DB
	if cluster && fo != nil { // a node out of the Primary Component is passed over (primaryconn.go)
		fo.ready = readiness{ready: nodeReady(cfg)}
		pool = sql.OpenDB(primaryConnector{Connector: connector, fo: fo, pool: func() (*sql.DB, int) { return pool, opts.MaxIdleConns }})
	} else {
		pool = sql.OpenDB(connector)
	}
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
		opts.MaxOpenConns = DefaultMaxOpenConns
	}
	if opts.MaxIdleConns <= 0 {
		opts.MaxIdleConns = DefaultMaxIdleConns
	}
	if opts.SaleConns <= 0 {
		opts.SaleConns = DefaultSaleConns
	}
	sqlDB.SetMaxOpenConns(opts.MaxOpenConns)
	sqlDB.SetMaxIdleConns(opts.MaxIdleConns)
	sqlDB.SetConnMaxLifetime(30 * time.Minute)
	s := &Store{db: db, cluster: cluster, returning: returning, rowIDs: &rowIDs{}, now: opts.Now}
	if s.now == nil {
		s.now = time.Now
	}
	// The sale transactions' pools, of the same size, that let a query carry
	// several statements (a tx sends fixed statement texts so). On a
	// cluster named by several nodes, one per node: the writer of a goods.
	multi := cfg.Clone()
	multi.MultiStatements = true
	if cluster {
		multi.Params["wsrep_sync_wait"] = "0" // the transaction begins causal (beginSQL)
	}
	writers, fos := []*mysql.Config{multi}, []*failover{nil}
	if cluster && fo != nil {
		writers, fos = writerConfigs(multi, addrs)
	}
	for i, w := range writers {
		sp, err := newSalePool(w, fos[i], opts)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("repo: open %s: %w", cfg.Addr, translate(err))
		}
		s.sales = append(s.sales, sp)
	}
	if err := s.Ping(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("repo: mysql at %s: %w", cfg.Addr, err)
	}
	return s, nil
}

// erUnknownSystemVariable: a MySQL server without wsrep_on.
const erUnknownSystemVariable = 1193

// probe asks the server of cfg whether it is MariaDB, whether it takes
// INSERT ... RETURNING (MariaDB 10.5 and later), and whether it is a
// Galera node that replicates (wsrep_on; a server that does not know the
// variable is not).
func probe(ctx context.Context, cfg *mysql.Config) (mariadb, returning, cluster bool, err error) {
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return false, false, false, err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	var version string
	if err := db.QueryRowContext(ctx, "SELECT VERSION()").Scan(&version); err != nil {
		return false, false, false, err
	}
	mariadb = strings.Contains(version, "MariaDB")
	returning = mariadb && versionAtLeast(version, 10, 5)
	err = db.QueryRowContext(ctx, "SELECT @@GLOBAL.wsrep_on").Scan(&cluster)
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == erUnknownSystemVariable {
		return mariadb, returning, false, nil
	}
	return mariadb, returning, cluster, err
}

// versionAtLeast reports whether a server version ("10.11.19-MariaDB-...")
// is major.minor or later.
func versionAtLeast(version string, major, minor int) bool {
	f := strings.SplitN(version, ".", 3)
	if len(f) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(f[0])
	mi, err2 := strconv.Atoi(f[1])
	return err1 == nil && err2 == nil && (ma > major || ma == major && mi >= minor)
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

// DatabaseTime is MySQL's clock (UTC_TIMESTAMP(6)), read through the first
// sale pool: the clock service.Clock follows.
func (s *Store) DatabaseTime(ctx context.Context) (time.Time, error) {
	var t time.Time
	if err := s.sales[0].sql.QueryRowContext(ctx, "SELECT UTC_TIMESTAMP(6)").Scan(&t); err != nil {
		return time.Time{}, translate(err)
	}
	return t, nil
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

// Goods reads the row of goodsNo (the first by id, should there be several).
func (s *Store) Goods(ctx context.Context, goodsNo int32) (service.Goods, error) {
	return goods(s.db.WithContext(ctx), goodsNo)
}

// GoodsOf reads the rows of goodsNos in one query; a goods without a row
// is missing from the answer.
func (s *Store) GoodsOf(ctx context.Context, goodsNos []int32) (map[int32]service.Goods, error) {
	out := make(map[int32]service.Goods, len(goodsNos))
	if len(goodsNos) == 0 {
		return out, nil
	}
	var rows []goodsStock
	err := s.db.WithContext(ctx).Where("goods_no IN ?", goodsNos).Order("goods_no, id").Find(&rows).Error
	if err != nil {
		return nil, translate(err)
	}
	for _, row := range rows {
		if _, dup := out[row.GoodsNo]; !dup { // a goods' first row by id is its row
			out[row.GoodsNo] = row.goods()
		}
	}
	return out, nil
}

func goods(db *gorm.DB, goodsNo int32) (service.Goods, error) {
	var row goodsStock
	err := db.Where("goods_no = ?", goodsNo).Order("id").Take(&row).Error
	if err != nil {
		return service.Goods{}, translate(err)
	}
	return row.goods(), nil
}

// goodsOf is each row of rows as the service sees it, by goods number.
func goodsOf(rows map[int32]goodsStock) map[int32]service.Goods {
	out := make(map[int32]service.Goods, len(rows))
	for no, r := range rows {
		out[no] = r.goods()
	}
	return out
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
