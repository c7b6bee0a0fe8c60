package repo

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

// A Galera node that answers but is not in the cluster's Primary Component
// (cut off from the others by a partition, or still joining) refuses every
// statement (1047, "WSREP has not yet prepared node for application use";
// 1180, "Not connected to Primary Component" at a commit) for as long as it
// stays out. A writer's pool that kept its connections to such a node sold
// nothing for the whole partition (TestGaleraNodePartitionedMidSale: neither
// shop sold again after node 2 was cut off). So a sale refused that way has
// its pool ask each node whether it is ready (SHOW STATUS wsrep_ready,
// a connection of its own per node, at most once a second), shun the nodes
// that are not for shunFor, dial the next ready node of its list, and let go
// of its idle connections and of the one that was refused.

// shunFor is how long a node found not ready is skipped by the pool's
// dials: long enough for a partition's node to be passed over while it
// lasts, short enough that a node back in the cluster is used again soon.
const shunFor = 10 * time.Second

// primaryCheckEvery bounds how often a pool asks the nodes.
const primaryCheckEvery = time.Second

// notPrimary reports whether err is a Galera node's refusal for being out
// of the Primary Component.
func notPrimary(err error) bool {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return false
	}
	return me.Number == erUnknownComError || me.Number == erErrorDuringCommit && strings.Contains(me.Message, "Primary Component")
}

// readiness is a failover's knowledge of which nodes to skip.
type readiness struct {
	ready func(ctx context.Context, addr string) (bool, error) // nil: never checked

	mu      sync.Mutex
	shunned map[int]time.Time // node index → until
	checked time.Time
}

// skip reports whether node n is shunned now.
func (r *readiness) skip(n int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return time.Now().Before(r.shunned[n])
}

// check asks every node whether it is ready, unless that was done less
// than primaryCheckEvery ago, and shuns those that are not (or do not
// answer). It reports whether it asked.
func (r *readiness) check(ctx context.Context, addrs []string) bool {
	if r.ready == nil {
		return false
	}
	r.mu.Lock()
	if time.Since(r.checked) < primaryCheckEvery {
		r.mu.Unlock()
		return false
	}
	r.checked = time.Now()
	r.mu.Unlock()
	shun := map[int]time.Time{}
	for n, a := range addrs {
		cctx, cancel := context.WithTimeout(ctx, failoverDialTimeout)
		ok, err := r.ready(cctx, a)
		cancel()
		if err != nil || !ok {
			shun[n] = time.Now().Add(shunFor)
		}
	}
	r.mu.Lock()
	r.shunned = shun
	r.mu.Unlock()
	return true
}

// nodeReady is readiness.ready for the nodes of cfg: a connection of its
// own to addr, asked SHOW STATUS LIKE 'wsrep_ready'.
func nodeReady(cfg *mysql.Config) func(ctx context.Context, addr string) (bool, error) {
	return func(ctx context.Context, addr string) (bool, error) {
		c := cfg.Clone()
		c.Addr, c.DialFunc, c.MultiStatements = addr, nil, false
		c.Timeout = failoverDialTimeout
		connector, err := mysql.NewConnector(c)
		if err != nil {
			return false, err
		}
		db := sql.OpenDB(connector)
		defer db.Close()
		var name, value string
		if err := db.QueryRowContext(ctx, "SHOW STATUS LIKE 'wsrep_ready'").Scan(&name, &value); err != nil {
			return false, err
		}
		return value == "ON", nil
	}
}

// passOver is what a pool's failover does after a node refused a statement
// for being out of the Primary Component: it checks the nodes (at most
// once a second), moves on past those not ready, and has pool drop its
// idle connections (to the node refused, most of them).
func (f *failover) passOver(ctx context.Context, pool *sql.DB, idle int) {
	if f.ready.check(context.WithoutCancel(ctx), f.addrs) {
		f.moveOn()
		pool.SetMaxIdleConns(0) // closes the idle ones
		pool.SetMaxIdleConns(idle)
	}
}

// refused is what a sale pool does after a statement of conn was refused
// for a node out of the Primary Component: its failover passes the node
// over, and conn is dropped.
func (sp salePool) refused(ctx context.Context, conn *sql.Conn) {
	if sp.fo == nil {
		return
	}
	_ = conn.Raw(func(any) error { return driver.ErrBadConn }) // the pool discards it
	sp.fo.passOver(ctx, sp.sql, sp.idle)
}
