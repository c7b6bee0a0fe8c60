package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"golang.org/x/net/netutil"

	"github.com/seckill-zk/seckill-zk/internal/coord"
	"github.com/seckill-zk/seckill-zk/internal/dashboard"
	"github.com/seckill-zk/seckill-zk/internal/handler"
	"github.com/seckill-zk/seckill-zk/internal/metrics"
	"github.com/seckill-zk/seckill-zk/internal/repo"
	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/internal/zk"
	"github.com/seckill-zk/seckill-zk/internal/zklock"
)

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
			if err := claimDatabase(ctx, store, conn, cfg, db, log); err != nil {
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
		l.ByArrival = cfg.Lock.Order == "arrival"
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
	if host := repo.PlaintextRemote(cfg.MySQL.DSN); host != "" && cfg.MySQL.TLSCA == "" {
		log.Warn("MYSQL IS SPOKEN TO IN PLAINTEXT across the network: the password's handshake and every order can be read on the way; give mysql.tlsCA, the CA that signed the server's certificate", "host", host)
	}
	if cfg.Auth.Mode == "none" && !loopback(ln.Addr()) {
		log.Warn("auth.mode=none on an address others can reach: anyone may name any buyer (X-User-ID) and read and pay any order; set auth.mode=jwt outside a demo", "addr", ln.Addr().String())
	}

	gin.SetMode(gin.ReleaseMode)
	limits := httpLimits(cfg, memoryLimit())
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
		"maxSleep", cfg.Demo.MaxSleep.String(), "participantId", id, "payTimeout", offText(cfg.Orders.PayTimeout),
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
	deps.Room.Drain() // the buyers at its door come back to another instance
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
