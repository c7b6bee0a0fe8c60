package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/seckill-zk/seckill-zk/internal/coord"
	"github.com/seckill-zk/seckill-zk/internal/repo"
	"github.com/seckill-zk/seckill-zk/internal/zk"
)

// The ZooKeeper paths a shop claims at start: its roots (coord.Roots) and
// its database's namespace.

// claimRoots makes the ZooKeeper paths the shop sells, elects and leases
// under its own (coord.Roots), or says why it cannot: an error stops the
// start.
func claimRoots(ctx context.Context, cfg Config, conn *zk.Client, d coord.Deployment, lock, elect, allot bool, log *slog.Logger) (*coord.Roots, error) {
	var rs []coord.Root
	if lock {
		rs = append(rs, coord.Root{Path: coord.RootOf(cfg.Lock.Path), Setting: "lock.path"})
	}
	if elect {
		rs = append(rs, coord.Root{Path: cfg.Leader.Path, Setting: "leader.path", Exclusive: true})
	}
	if allot {
		rs = append(rs, coord.Root{Path: cfg.Allot.Path, Setting: "allot.path", Exclusive: true})
	}
	roots := coord.NewRoots(conn, d, log, rs...)
	if err := roots.Claim(ctx); err != nil {
		return nil, err
	}
	return roots, nil
}

// claimDatabase records in the database the ZooKeeper namespace this
// instance sells and sweeps it under (its election's path, which a
// namespace moves with the lock path), or refuses to start when the
// database is served under another now: two sets of instances with two lock paths
// on one database do not exclude each other (half the purchases of each
// were refused lock_lost, fenced off by the other's tokens) and sweep it
// twice. "Now" is the recorded election's participants: instances queued
// there are alive (their nodes are ephemeral), and none queued means the
// recorded paths are left (a move to a new namespace), which this instance
// then records as the database's. Without an election nothing tells an
// instance alive, and nothing is recorded (see docs/security.md).
func claimDatabase(ctx context.Context, store *repo.Store, conn *zk.Client, leaderPath, db string, log *slog.Logger) error {
	mine := "leader=" + leaderPath
	for range 3 {
		rec, err := store.ZooKeeperPaths(ctx)
		if err != nil {
			return fmt.Errorf("read the database's ZooKeeper paths: %w", err)
		}
		if rec == mine {
			return nil
		}
		if leader, ok := strings.CutPrefix(rec, "leader="); ok {
			kids, err := conn.Children(ctx, leader)
			switch {
			case err == nil && len(kids) > 0:
				return fmt.Errorf("database %s is sold and swept under other ZooKeeper paths (%s), where %d instance(s) queue in its election now; this instance's are %s: "+
					"two sets of locks on one database do not exclude each other. Give this instance the same zookeeper.namespace and paths, or stop those instances first",
					db, rec, len(kids), mine)
			case err != nil && !errors.Is(err, zk.ErrNoNode):
				return fmt.Errorf("database %s was last served under the ZooKeeper paths %s, whose election cannot be read (%w): "+
					"whether instances serve it there cannot be told", db, rec, err)
			}
		}
		ok, err := store.SetZooKeeperPaths(ctx, rec, mine)
		if err != nil {
			return fmt.Errorf("record the database's ZooKeeper paths: %w", err)
		}
		if ok {
			if rec != "" {
				log.Warn("the database moves to this instance's ZooKeeper paths: no instance queues in its former election any more", "former", rec, "paths", mine)
			}
			return nil
		}
	}
	return errors.New("the database's ZooKeeper paths kept changing while this instance claimed them: instances under other paths are starting")
}
