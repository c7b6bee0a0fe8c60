package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/repo"
	"github.com/seckill-zk/seckill-zk/internal/service"
	"github.com/seckill-zk/seckill-zk/internal/zk"
)

// Opening the shop's dependencies, for serve and for the commands that
// need the store (migrate, stock).

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

func zkReady(c *zk.Client) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if _, err := c.Session(ctx); err != nil {
			return err
		}
		return c.Ping(ctx)
	}
}
