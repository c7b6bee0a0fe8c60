package repo

import (
	"context"
	"fmt"
)

// Durability is whether the servers the shop writes to keep a commit they
// acknowledged through a crash of the server: InnoDB writes and flushes its
// log at each commit only with innodb_flush_log_at_trx_commit=1. With 2 a
// commit survives the server process crashing but not the machine; with 0
// neither (the log is flushed about once a second). On Galera a commit is
// also on the other nodes, so one node's crash loses nothing, but all of
// them crashing within a second does (Jepsen, MariaDB Galera 12.1.2; this
// project's own test: 212 of 11 520 acknowledged orders gone with 0).
type Durability struct {
	// FlushLogAtTrxCommit is innodb_flush_log_at_trx_commit of each
	// server the sales write to, by address, in the order of the DSN.
	FlushLogAtTrxCommit map[string]int
	Servers             []string
}

// Durable reports whether every server flushes its log at each commit.
func (d Durability) Durable() bool {
	for _, n := range d.FlushLogAtTrxCommit {
		if n != 1 {
			return false
		}
	}
	return true
}

// Lossy is, for a person, which servers acknowledge commits they can lose,
// "" when none does.
func (d Durability) Lossy() string {
	var out string
	for _, addr := range d.Servers {
		if n := d.FlushLogAtTrxCommit[addr]; n != 1 {
			if out != "" {
				out += ", "
			}
			out += fmt.Sprintf("%s has innodb_flush_log_at_trx_commit=%d", addr, n)
		}
	}
	return out
}

// Durability asks each server the sales write to how it flushes commits.
func (s *Store) Durability(ctx context.Context) (Durability, error) {
	d := Durability{FlushLogAtTrxCommit: map[string]int{}}
	for _, p := range s.sales {
		var n, port int
		var host string
		err := p.sql.QueryRowContext(ctx, "SELECT @@GLOBAL.innodb_flush_log_at_trx_commit, @@hostname, @@port").Scan(&n, &host, &port)
		if err != nil {
			return d, fmt.Errorf("repo: read innodb_flush_log_at_trx_commit: %w", translate(err))
		}
		addr := fmt.Sprintf("%s:%d", host, port)
		if _, seen := d.FlushLogAtTrxCommit[addr]; !seen {
			d.Servers = append(d.Servers, addr)
		}
		d.FlushLogAtTrxCommit[addr] = n
	}
	return d, nil
}
