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
// namespace moves with the lock path) and the settings its instances must
// agree on (agreed), or refuses to start when the database is served under
// other paths or with other such settings now. Two sets of instances with
// two lock paths on one database do not exclude each other (half the
// purchases of each were refused lock_lost, fenced off by the other's
// tokens) and sweep it twice; two pay timeouts let one instance expire an
// order that another then takes payment for. "Now" is the recorded
// election's participants: instances queued there are alive (their nodes
// are ephemeral), and none queued means the record is left (a move to a new
// namespace, new settings), which this instance then records as the
// database's. Without an election nothing tells an instance alive, and
// nothing is recorded (see docs/security.md).
func claimDatabase(ctx context.Context, store *repo.Store, conn *zk.Client, cfg Config, db string, log *slog.Logger) error {
	mine := record{leader: cfg.Leader.Path, settings: agreed(cfg)}
	for range 3 {
		raw, err := store.ZooKeeperPaths(ctx)
		if err != nil {
			return fmt.Errorf("read the database's ZooKeeper paths: %w", err)
		}
		if raw == mine.String() {
			return nil
		}
		rec := parseRecord(raw)
		if rec.leader != "" {
			kids, err := conn.Children(ctx, rec.leader)
			switch {
			case err == nil && len(kids) > 0 && rec.leader != mine.leader:
				return fmt.Errorf("database %s is sold and swept under other ZooKeeper paths (leader=%s), where %d instance(s) queue in its election now; this instance's are leader=%s: "+
					"two sets of locks on one database do not exclude each other. Give this instance the same zookeeper.namespace and paths, or stop those instances first",
					db, rec.leader, len(kids), mine.leader)
			case err == nil && len(kids) > 0:
				if d := rec.disagrees(mine); d != "" {
					return fmt.Errorf("database %s is served by %d instance(s) whose %s: the instances of one database must agree on it "+
						"(with two pay timeouts one instance expires an order that another takes payment for). Give this instance the same, or stop those instances first",
						db, len(kids), d)
				}
			case err != nil && !errors.Is(err, zk.ErrNoNode):
				return fmt.Errorf("database %s was last served under the ZooKeeper paths leader=%s, whose election cannot be read (%w): "+
					"whether instances serve it there cannot be told", db, rec.leader, err)
			}
		}
		ok, err := store.SetZooKeeperPaths(ctx, raw, mine.String())
		if err != nil {
			return fmt.Errorf("record the database's ZooKeeper paths: %w", err)
		}
		if ok {
			switch {
			case rec.leader != "" && rec.leader != mine.leader:
				log.Warn("the database moves to this instance's ZooKeeper paths: no instance queues in its former election any more", "former", "leader="+rec.leader, "paths", "leader="+mine.leader)
			case rec.disagrees(mine) != "":
				log.Warn("the database's instances change settings: no instance queues in its election any more", "former", rec.String(), "now", mine.String())
			}
			return nil
		}
	}
	return errors.New("the database's ZooKeeper paths kept changing while this instance claimed them: instances under other paths are starting")
}

// agreed are the settings every instance of one database must share, by
// name: orders.payTimeout (the sweeper expires by one, a payment is
// refused by another's) and lock.order (the two recipes refuse each
// other's nodes on one lock path).
func agreed(cfg Config) [][2]string {
	return [][2]string{{"lock.order", cfg.Lock.Order}, {"orders.payTimeout", cfg.Orders.PayTimeout.String()}}
}

// record is what the database records of the instances that serve it
// (deployment.zk_paths): "leader=PATH", then ";setting=value" for each
// agreed setting. A record of an older shop has no settings.
type record struct {
	leader   string
	settings [][2]string
}

func (r record) String() string {
	var b strings.Builder
	b.WriteString("leader=" + r.leader)
	for _, kv := range r.settings {
		b.WriteString(";" + kv[0] + "=" + kv[1])
	}
	return b.String()
}

func parseRecord(raw string) record {
	fields := strings.Split(raw, ";")
	leader, ok := strings.CutPrefix(fields[0], "leader=")
	if !ok {
		return record{}
	}
	r := record{leader: leader}
	for _, f := range fields[1:] {
		if k, v, ok := strings.Cut(f, "="); ok {
			r.settings = append(r.settings, [2]string{k, v})
		}
	}
	return r
}

// disagrees names the settings r records otherwise than mine, with both
// values ("" when none: a setting r does not record is not compared).
func (r record) disagrees(mine record) string {
	var out []string
	for _, theirs := range r.settings {
		for _, m := range mine.settings {
			if m[0] == theirs[0] && m[1] != theirs[1] {
				out = append(out, fmt.Sprintf("%s is %s, this instance's %s", m[0], theirs[1], m[1]))
			}
		}
	}
	return strings.Join(out, "; ")
}
