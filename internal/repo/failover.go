package repo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// A DSN may name several servers, tcp(host1:port1,host2:port2,...): the
// nodes of a Galera cluster, for one. The store then connects to the first
// of them that answers, starting with the last one that did, so that when a
// node dies its connections fail once and the new ones go to the next node
// in the list. A shop instance lists its own node first. A node that
// answers but is not ready (out of the Primary Component: cut off, or still
// joining) is skipped by the writers' pools once a sale was refused there
// (primary.go); the store's own pool, for reads and orders, keeps it: its
// statements fail with 1047 and the buyers hear 503 until it is ready. A
// load balancer with a health check of the node's wsrep state, such as
// HAProxy with clustercheck, does that for every pool.

// failoverDialTimeout bounds one address's dial, so that a node that does
// not answer at all (a partition) costs the next connection no more than
// this.
const failoverDialTimeout = 2 * time.Second

// splitAddrs takes the addresses out of a DSN whose tcp(...) holds several,
// comma separated. It returns the DSN with the first of them, and the list;
// a DSN with one address comes back as it is, with no list.
func splitAddrs(dsn string) (string, []string) {
	slash := strings.LastIndex(dsn, "/") // the database name follows the last slash, as the driver reads it
	if slash < 0 || !strings.HasSuffix(dsn[:slash], ")") {
		return dsn, nil
	}
	open := strings.LastIndex(dsn[:slash], "tcp(")
	if open < 0 {
		return dsn, nil
	}
	inner := dsn[open+len("tcp(") : slash-1]
	if !strings.Contains(inner, ",") {
		return dsn, nil
	}
	var addrs []string
	for _, a := range strings.Split(inner, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return dsn, nil
	}
	return dsn[:open+len("tcp(")] + addrs[0] + dsn[slash-1:], addrs
}

// failover dials the first of its addresses that answers, starting with the
// last one that did.
type failover struct {
	addrs   []string
	current atomic.Int32 // index of the address that answered last
	ready   readiness    // the nodes out of the Primary Component, skipped (primary.go)
}

// moveOn makes the next dial start at the first node after the current one
// that is not shunned.
func (f *failover) moveOn() {
	start := int(f.current.Load())
	for i := range f.addrs {
		if n := (start + i) % len(f.addrs); !f.ready.skip(n) {
			f.current.CompareAndSwap(int32(start), int32(n))
			return
		}
	}
}

func (f *failover) dial(ctx context.Context, network, _ string) (net.Conn, error) {
	start := int(f.current.Load())
	var errs []error
	skipped := 0
	for i := range f.addrs {
		n := (start + i) % len(f.addrs)
		if f.ready.skip(n) && skipped < len(f.addrs)-1 {
			skipped++ // out of the Primary Component lately: the next one, unless it is the last left
			continue
		}
		actx, cancel := context.WithTimeout(ctx, failoverDialTimeout)
		var d net.Dialer
		conn, err := d.DialContext(actx, network, f.addrs[n])
		cancel()
		if err == nil {
			f.current.CompareAndSwap(int32(start), int32(n))
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("none of %s answers: %w", strings.Join(f.addrs, ","), errors.Join(errs...))
}

// On a Galera cluster that the DSN names by several nodes, the sales of
// one goods all go to one node, its writer, as Galera advises for a hot
// row: there the row lock serialises them as on one server, and the other
// nodes certify write-sets that never conflict. Every instance finds the
// same writer whatever order its DSN lists the nodes in: the writer of
// goods g is node g mod n of the sorted list, and when it does not answer,
// the next one in that list (each writer's pool fails over on its own).
// Reads stay with the store's pool, on the instance's own node.

// writerConfigs returns a config per writer: node i of the sorted
// addresses first, the others after it.
func writerConfigs(cfg *mysql.Config, addrs []string) ([]*mysql.Config, []*failover) {
	sorted := slices.Sorted(slices.Values(addrs))
	out, fos := make([]*mysql.Config, len(sorted)), make([]*failover, len(sorted))
	for i := range sorted {
		w := cfg.Clone()
		fo := &failover{addrs: sorted, ready: readiness{ready: nodeReady(cfg)}}
		fo.current.Store(int32(i))
		w.DialFunc = fo.dial
		out[i], fos[i] = w, fo
	}
	return out, fos
}

// salesFor is the pool of goodsNo's sale transactions.
func (s *Store) salesFor(goodsNo int32) salePool {
	return s.sales[int(uint32(goodsNo))%len(s.sales)]
}
