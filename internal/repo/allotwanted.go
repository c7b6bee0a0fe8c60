package repo

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// What leases ask each other for (stock_lease.wanted).

// wantedMax bounds a lease's wanted list: once longer, asks are dropped
// until its owner reads it (the askers ask again while their buyers wait).
// One ask appends at most about wantedAsk bytes: the column holds 2048.
const (
	wantedMax = 1536
	wantedAsk = 500
)

// WantBack asks each lease of want for the goods listed: it appends them
// to the lease's wanted list, which its owner reads (Wanted): ",goodsNo",
// and "@" and the arrival in microseconds since 1970 of the asker's
// earliest buyer who waits, when it has one. Each lease's row is written
// on its own, outside any other lock.
func (s *Store) WantBack(ctx context.Context, want map[int64][]service.Ask) error {
	for lease, asks := range want {
		var b []byte
		for _, ask := range asks {
			if len(b) > wantedAsk {
				break // the rest is asked for again, if still wanted
			}
			b = append(b, ',')
			b = strconv.AppendInt(b, int64(ask.GoodsNo), 10)
			if !ask.Arrived.IsZero() {
				b = append(b, '@')
				b = strconv.AppendInt(b, ask.Arrived.UnixMicro(), 10)
			}
		}
		_, err := s.sales[0].sql.ExecContext(ctx,
			"UPDATE stock_lease SET wanted = CONCAT(wanted, ?) WHERE id = ? AND open = 1 AND LENGTH(wanted) < ?",
			string(b), lease, wantedMax)
		if err != nil {
			return fmt.Errorf("repo: ask lease %d for its stock: %w", lease, err)
		}
	}
	return nil
}

// Wanted reads and clears the goods other leases asked the lease for. An
// ask that comes between the read and the clear stays for the next read.
func (s *Store) Wanted(ctx context.Context, lease int64) ([]service.Ask, error) {
	var text string
	err := s.sales[0].sql.QueryRowContext(ctx, "SELECT wanted FROM stock_lease WHERE id = ?", lease).Scan(&text)
	if err != nil || text == "" {
		return nil, err
	}
	if _, err := s.sales[0].sql.ExecContext(ctx, "UPDATE stock_lease SET wanted = '' WHERE id = ? AND wanted = ?", lease, text); err != nil {
		return nil, err
	}
	return parseWanted(lease, text)
}

// parseWanted reads a wanted list (see WantBack).
func parseWanted(lease int64, text string) ([]service.Ask, error) {
	var out []service.Ask
	for _, e := range strings.Split(strings.TrimPrefix(text, ","), ",") {
		goods, arrived, timed := strings.Cut(e, "@")
		no, err := strconv.ParseInt(goods, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("repo: lease %d's wanted list %q: %w", lease, text, err)
		}
		ask := service.Ask{GoodsNo: int32(no)}
		if timed {
			us, err := strconv.ParseInt(arrived, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("repo: lease %d's wanted list %q: %w", lease, text, err)
			}
			ask.Arrived = time.UnixMicro(us)
		}
		out = append(out, ask)
	}
	return out, nil
}
