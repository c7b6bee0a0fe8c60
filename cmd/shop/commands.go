package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/net/netutil"

	"github.com/seckill-zk/seckill-zk/internal/auth"
	"github.com/seckill-zk/seckill-zk/internal/coord"
	"github.com/seckill-zk/seckill-zk/internal/dashboard"
	"github.com/seckill-zk/seckill-zk/internal/handler"
	"github.com/seckill-zk/seckill-zk/internal/limit"
	"github.com/seckill-zk/seckill-zk/internal/metrics"
	"github.com/seckill-zk/seckill-zk/internal/repo"
	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/internal/zk"
	"github.com/seckill-zk/seckill-zk/internal/zklock"
)

// openStore opens the MySQL store; MariaDB ends its transactions that wait
// longer than cfg.IdleTransaction() for their next statement.
// A store that cannot be opened is named with the key that fixes it.
func openStore(ctx context.Context, cfg Config, clock *service.Clock) (*repo.Store, error) {
	opts := cfg.MySQL.Options
	opts.IdleTransactionTimeout = cfg.IdleTransaction()
	opts.Now = clock.Now
	store, err := repo.Open(ctx, cfg.MySQL.DSN, opts)
	if err != nil {
		return nil, fmt.Errorf("%w\n  check mysql.dsn (SHOP_MYSQL_DSN, --mysql.dsn); for the local MariaDB run: make stack-up; "+
			"a server of your own needs the database and user made once (docs/operations.md, \"Your own MariaDB and ZooKeeper\")", err)
	}
	return store, nil
}

// connectZooKeeper waits for a ZooKeeper session, saying so every few
// seconds, and names the key that fixes a failure.
func connectZooKeeper(ctx context.Context, cfg Config, opts zk.Options, log *slog.Logger) (*zk.Client, error) {
	servers := strings.Join(cfg.ZooKeeper.Servers, ",")
	log.Info("waiting for a ZooKeeper session", "servers", servers, "timeout", cfg.ZooKeeper.ConnectionTimeout.String())
	waiting, stopped := make(chan struct{}), make(chan struct{})
	defer func() { close(waiting); <-stopped }() // no line after the answer
	go func() {
		defer close(stopped)
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for start := time.Now(); ; {
			select {
			case <-t.C:
				log.Warn("still waiting for ZooKeeper", "servers", servers, "waited", time.Since(start).Round(time.Second).String(),
					"timeout", cfg.ZooKeeper.ConnectionTimeout.String())
			case <-waiting:
				return
			}
		}
	}()
	zc, err := zk.Connect(ctx, cfg.ZooKeeper.Servers, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %w\n  check zookeeper.servers (SHOP_ZOOKEEPER_SERVERS, --zookeeper.servers); for the local ZooKeeper run: make stack-up"+
			"\n  (without ZooKeeper: purchase.strategy=atomic and leader.enabled=false)", service.ErrUnavailable, err)
	}
	return zc, nil
}

// serve runs the HTTP API until ctx ends, then shuts down gracefully: stop
// accepting, let in-flight purchases finish (and release their locks), close
// the ZooKeeper session, close the pool.
func serve(ctx context.Context, cfg Config, log *slog.Logger) error {
	db, err := repo.DatabaseOf(cfg.MySQL.DSN)
	if err != nil {
		return err
	}
	zkPaths(&cfg, db)
	clock := service.NewClock(cfg.Clock.Offset)
	store, err := openStore(ctx, cfg, clock)
	if err != nil {
		return err
	}
	defer store.Close()
	if cfg.Clock.Source == "mysql" {
		clockCtx, stopClock := context.WithCancel(ctx)
		wait, err := followMySQLClock(clockCtx, clock, store, log)
		if err != nil {
			stopClock()
			return fmt.Errorf("read MySQL's clock (clock.source=mysql): %w", err)
		}
		defer func() { stopClock(); wait() }()
	}
	if err := store.Warm(ctx, cfg.MySQL.InitialConns); err != nil {
		log.Warn("could not open mysql.initialConns connections: the pools open them as buyers come", "err", err)
	}
	checks := []handler.Check{{Name: "mysql", Check: store.Ping}}
	pool, err := store.SQLDB()
	if err != nil {
		return err
	}
	m := metrics.New(cfg.Purchase.Strategy, pool)
	m.Pool("seckill_sales", store.SalesDB())
	if d, err := store.Durability(ctx); err != nil {
		log.Warn("could not read how mysql flushes its commits", "err", err)
	} else {
		m.MySQLDurable(d.Durable())
		if !d.Durable() {
			log.Warn("mysql acknowledges commits a crash can lose: a purchase answered 200 may be gone after the server crashes "+
				"(on Galera: after every node crashes within a second); set innodb_flush_log_at_trx_commit=1 (docs/galera.md)", "servers", d.Lossy())
		}
	}
	m.Track(cfg.Dashboard.Goods)

	st, ok := service.StrategyNamed(cfg.Purchase.Strategy)
	if !ok {
		return fmt.Errorf("config: purchase.strategy %q is not a strategy", cfg.Purchase.Strategy)
	}
	if !cfg.Lock.Enabled { // the seed's purchase without its lock (parseConfig allows no other)
		st = service.UnlockedStrategy()
	}
	var locker service.Locker
	useLock, allot := st.Needs.Lock, st.Needs.Leases
	elect := cfg.Leader.Enabled && cfg.Orders.PayTimeout > 0
	paths := coord.NewPaths(cfg.Lock.Path, cfg.Lock.Stripes)
	var zc *zklock.Client
	var roots *coord.Roots
	if useLock || elect || allot {
		opts := cfg.ZooKeeper.Options
		opts.Logger = log
		conn, err := connectZooKeeper(ctx, cfg, opts, log)
		if err != nil {
			return err
		}
		defer conn.Close()
		zc = zklock.New(conn, zklock.Options{
			Observer: m.LockObserver(func(dir string) string { return paths.MetricLabel(dir, m.Tracked) }),
		})
		m.LockStats(zc.Stats)
		m.ZooKeeperState(zk.StateConnected)
		defer zc.Listen(m.ZooKeeperState)()
		checks = append(checks, handler.Check{Name: "zookeeper", Check: zkReady(conn)})
		id, err := store.Deployment(ctx)
		if err != nil {
			return fmt.Errorf("read the deployment's identity (schema version 11: run shop migrate): %w", err)
		}
		if roots, err = claimRoots(ctx, cfg, conn, coord.Deployment{ID: id, Database: db}, useLock, elect, allot, log); err != nil {
			return err
		}
		if elect {
			if err := claimDatabase(ctx, store, conn, cfg.Leader.Path, db, log); err != nil {
				return err
			}
		}
		paths := handler.Check{Name: "zookeeper paths", Check: roots.Err}
		if roots.Open() {
			log.Warn(coord.OpenWarning)
			paths.Warning = coord.OpenWarning // in /readyz's answer too
		}
		checks = append(checks, paths)
	}
	if useLock {
		l := coord.NewLocker(zc, paths)
		l.NoAuth = roots.NoAuth
		locker = l
		if msg := lockPathAdvice(st, paths); msg != "" {
			l.ManyGoods = func() {
				log.Warn("purchases of several goods: "+msg+" (restart the instances with it)", "lockPath", cfg.Lock.Path, "strategy", cfg.Purchase.Strategy)
			}
		}
	} else if !cfg.Lock.Enabled {
		log.Warn("lock disabled: purchases are not serialised and WILL oversell under load")
	}

	scfg := cfg.Purchase.Config
	scfg.Pause = demoPause(cfg.Demo.MaxSleep)
	scfg.SaleTimeout = cfg.SaleTimeout()
	scfg.Clock = clock
	// Row locks are each server's own: where a goods' sales may reach
	// different Galera nodes, the next holder starts only after the commit
	// has answered. A batch of several goods (a lock that goods share) goes
	// to the writer of its lowest goods, not of each.
	scfg.HandOffAfterCommit = !store.OneWriter() || store.Cluster() && st.BatchesAcrossGoods && !paths.PerGoods()
	switch {
	case store.Cluster() && store.OneWriter():
		log.Info("mysql is a Galera cluster named by its nodes: each goods' sales on one writer node, causal claims, commits confirmed")
	case store.Cluster():
		log.Info("mysql is a Galera cluster node: causal claims, commits confirmed, the lock handed on after the commit (list the nodes in mysql.dsn for a writer node per goods)")
	}
	marks := service.NewSoldOutMarks(service.DefaultSoldOutFor)
	marks.Following(clock)
	marks.Expiring(cfg.Orders.PayTimeout, store.OldestUnpaid) // a mark ends before an expired order's piece can be back
	deps := service.Deps{Store: store, Locker: locker, Allot: cfg.Allot.AllotConfig, Env: service.Env{Marks: marks, Config: scfg, Log: log}}
	if cfg.Room.Enabled {
		if deps.Room, err = service.NewRoom(ctx, store, cfg.Room.RoomConfig, log); err != nil {
			return err
		}
	}
	if allot {
		deps.Leases = coord.NewLeaseNodes(zc, cfg.Allot.Path)
	}
	shop, err := service.New(st, deps)
	if err != nil {
		return err
	}
	defer shop.Close() // after the server's shutdown: the last batches are done, the stock a lease holds goes back
	m.AdmissionStats(func() metrics.Admission {
		a := shop.Admission()
		return metrics.Admission{InFlight: a.InFlight, Limit: a.Limit, Rate: a.Rate, WorkRate: a.WorkRate, Refused: a.Refused}
	})
	if deps.Room != nil {
		m.RoomStats(func() metrics.Room {
			r := shop.Room()
			return metrics.Room{Waiting: r.Waiting, LetInPerSec: r.LetInPerSec, WaitSeconds: r.Wait.Seconds()}
		})
	}
	cfg.Orders.Clock = clock
	orders := service.NewOrders(store, cfg.Orders, log)

	ln, err := net.Listen("tcp", cfg.Server.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	id := coord.ParticipantID(cfg.Leader.ID, ln.Addr())
	var elected handler.Election = coord.NoElection{ID: id}
	var election *coord.Election
	if elect {
		e, err := coord.StartElection(zc, cfg.Leader.Path, id, orders, m.Leading, log)
		if err != nil {
			ln.Close()
			return fmt.Errorf("leader election: %w", err)
		}
		defer e.Close() // before the ZooKeeper client closes: leave the election
		elected, election = e, e
		checks = append(checks, handler.Check{Name: "leader election", Check: e.Check})
	} else if cfg.Orders.PayTimeout > 0 {
		sctx, stopSweeping := context.WithCancel(ctx)
		swept := make(chan struct{})
		go func() { defer close(swept); _ = orders.Sweep(sctx, id) }()
		defer func() { stopSweeping(); <-swept }()
		log.Warn("leader election off (leader.enabled=false): this instance sweeps expired orders along with any other")
		m.Leading(true)
	}
	exists := func(ctx context.Context, goodsNo int32) (bool, error) {
		_, err := store.Goods(ctx, goodsNo)
		if errors.Is(err, service.ErrNotFound) {
			return false, nil
		}
		return err == nil, err
	}
	dash, err := dashboard.New(m, elected, exists, cfg.Dashboard.Peers, cfg.Dashboard.Goods)
	if err != nil {
		ln.Close()
		return err
	}
	sampleCtx, stopSampling := context.WithCancel(ctx)
	if deps.Room != nil {
		roomed := make(chan struct{})
		go func() { defer close(roomed); _ = deps.Room.Run(sampleCtx, id) }()
		defer func() { stopSampling(); <-roomed }()
	}
	sampled := make(chan struct{})
	go func() { defer close(sampled); sample(sampleCtx, shop, zc, locker != nil, paths, m, log) }()
	defer func() { stopSampling(); <-sampled }()
	if roots != nil {
		watched := make(chan struct{})
		go func() { defer close(watched); watchCoordination(sampleCtx, roots, election, m) }()
		defer func() { stopSampling(); <-watched }()
	}

	services := handler.Services{Shop: shop, Catalog: service.NewCatalog(store), Orders: orders, Election: elected, Observer: m, Metrics: m.Handler(), Dashboard: dash,
		TrustedProxies: cfg.Server.TrustedProxies}
	var metricsLn net.Listener
	if cfg.Server.MetricsAddr != "" {
		services.Metrics = nil // on its own port only
		if metricsLn, err = net.Listen("tcp", cfg.Server.MetricsAddr); err != nil {
			ln.Close()
			return fmt.Errorf("server.metricsAddr: %w", err)
		}
		defer metricsLn.Close()
	}
	if err := who(cfg, &services); err != nil {
		ln.Close()
		return err
	}
	if cfg.Auth.Mode == "none" && (cfg.Auth.HMACSecretFile != "" || cfg.Auth.PublicKeyFile != "") {
		log.Warn("a key for buyers' tokens is set but auth.mode is none: tokens are not asked for; set auth.mode=jwt")
	}
	if mode := repo.UnverifiedTLS(cfg.MySQL.DSN); mode != "" {
		log.Warn("MYSQL'S CERTIFICATE IS NOT CHECKED: the DSN's tls="+mode+" encrypts but lets anyone between the shop and MySQL pose as the database "+
			"(and take the password at the handshake); give mysql.tlsCA, the CA that signed the server's certificate, instead", "tls", mode)
	}
	if cfg.Auth.Mode == "none" && !loopback(ln.Addr()) {
		log.Warn("auth.mode=none on an address others can reach: anyone may name any buyer (X-User-ID) and read and pay any order; set auth.mode=jwt outside a demo", "addr", ln.Addr().String())
	}

	gin.SetMode(gin.ReleaseMode)
	limits := httpLimits(cfg)
	srv := &http.Server{
		Handler:           handler.New(services, log, checks...),
		ReadHeaderTimeout: min(10*time.Second, cfg.Server.ReadTimeout),
		ReadTimeout:       cfg.Server.ReadTimeout,
		WriteTimeout:      limits.write,
		IdleTimeout:       cfg.Server.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn), // accept errors and the like, in the shop's log
	}
	ln = netutil.LimitListener(handler.LimitPerClient(ln, limits.perClient, trusted(cfg.Server.TrustedProxies)), limits.connections)
	log.Info("listening", "addr", ln.Addr().String(), "strategy", cfg.Purchase.Strategy, "lock", locker != nil, "lockPath", cfg.Lock.Path,
		"maxSleep", cfg.Demo.MaxSleep.String(), "participantId", id, "payTimeout", cfg.Orders.PayTimeout.String(),
		"writeTimeout", limits.write.String(), "maxConnections", limits.connections, "maxConnectionsPerClient", limits.perClient)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	if metricsLn != nil {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", m.Handler())
		msrv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
		log.Info("serving /metrics", "addr", metricsLn.Addr().String())
		go func() { _ = msrv.Serve(metricsLn) }()
		defer msrv.Close()
	}
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	log.Info("shutting down", "timeout", cfg.Server.ShutdownTimeout.String())
	sctx, cancel := context.WithTimeout(context.Background(), cfg.Server.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	log.Info("stopped")
	return nil
}

func zkReady(c *zk.Client) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if _, err := c.Session(ctx); err != nil {
			return err
		}
		return c.Ping(ctx)
	}
}

func fmtWindow(t *time.Time) string {
	switch {
	case t == nil:
		return "unchanged"
	case t.IsZero():
		return "open"
	}
	return t.UTC().Format(time.RFC3339)
}

// demoPause is the demo's sleep between a purchase's read and its write: a
// random duration in [0, maxSleep), the seed's race amplifier; none for 0.
func demoPause(maxSleep time.Duration) func() time.Duration {
	if maxSleep <= 0 {
		return nil
	}
	return func() time.Duration { return rand.N(maxSleep) }
}

// lockPathAdvice says what a lock path costs a sale of many goods under a
// strategy, when it is not the path the README recommends for it: "" when
// it is. The seed's own /Locks stays the default (the seed's scenario sells
// one goods, and Java Curator instances of the seed share that lock), so
// the shop warns instead of refusing.
func lockPathAdvice(st service.Strategy, p coord.Paths) string {
	switch {
	case st.Needs.Lock && !st.BatchesAcrossGoods && !p.PerGoods():
		return "every goods shares this lock, one buyer per hold: a sale of many goods is served one buyer at a time across all of them; " +
			"set lock.path with {goodsNo} (/locks/goods/{goodsNo}) for a lock per goods"
	case st.Needs.Lock && st.BatchesAcrossGoods && p.PerGoods():
		return "a lock per goods: a sale of many goods pays a lock hold and a transaction per goods' batch, about one buyer each; " +
			"a path without {goodsNo} (the default /Locks) sells the waiting buyers of every goods under one hold"
	}
	return ""
}

// who sets up who may do what: the verifier of buyers' tokens (auth.mode
// jwt) and the purchase limits per buyer and per client address.
func who(cfg Config, s *handler.Services) error {
	if cfg.Auth.Mode == "jwt" {
		opts := auth.Options{Issuer: cfg.Auth.Issuer, Audience: cfg.Auth.Audience, ValidBuyer: handler.ValidID}
		var err error
		if cfg.Auth.HMACSecretFile != "" {
			opts.HMACSecret, err = auth.ReadSecret(cfg.Auth.HMACSecretFile)
		} else {
			opts.PublicKey, err = auth.ReadPublicKey(cfg.Auth.PublicKeyFile)
		}
		if err != nil {
			return err
		}
		if s.Auth, err = auth.NewJWT(opts); err != nil {
			return err
		}
	}
	if cfg.Limits.Buyer.Rate > 0 {
		s.BuyerLimit = limit.New(cfg.Limits.Buyer)
	}
	if cfg.Limits.Client.Rate > 0 {
		s.ClientLimit = limit.New(cfg.Limits.Client)
	}
	return nil
}

// loopback reports whether addr is a loopback address (only this machine
// reaches it).
func loopback(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}
