package repo

import (
	"context"
	"database/sql"
	"fmt"

	"golang.org/x/sync/errgroup"
)

// warmAtOnce is how many connections Warm opens at a time: MySQL's listen
// backlog (back_log, 80 on a Debian MariaDB) takes a burst of new
// connections only so far, and one dropped is tried again by the client's
// kernel a second later.
const warmAtOnce = 8

// Warm opens up to n connections of each of the store's pools (its reads'
// and every sale pool, each at most its own size) and leaves them idle in
// the pool, warmAtOnce at a time: a sale that opens with a crowd then finds
// them open, where each instance would otherwise open them all in the
// crowd's first milliseconds (the seed's Druid calls it initialSize). n <=
// 0 opens nothing.
func (s *Store) Warm(ctx context.Context, n int) error {
	if n <= 0 {
		return nil
	}
	pool, err := s.db.DB()
	if err != nil {
		return err
	}
	pools := []*sql.DB{pool}
	for _, sp := range s.sales {
		pools = append(pools, sp.sql)
	}
	for _, p := range pools {
		if err := warm(ctx, p, min(n, p.Stats().MaxOpenConnections)); err != nil {
			return fmt.Errorf("repo: warm the pool: %w", translate(err))
		}
	}
	return nil
}

// warm holds n connections of p at once, so that each is one of its own,
// opening them warmAtOnce at a time, then gives them back to its idle pool.
func warm(ctx context.Context, p *sql.DB, n int) error {
	conns := make([]*sql.Conn, n)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close() // back to the pool's idle connections
			}
		}
	}()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(warmAtOnce)
	for i := range conns {
		g.Go(func() error {
			c, err := p.Conn(gctx)
			if err != nil {
				return err
			}
			conns[i] = c
			return c.PingContext(gctx)
		})
	}
	return g.Wait()
}
