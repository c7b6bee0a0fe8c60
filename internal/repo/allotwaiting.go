package repo

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// Who waits at each lease's instance (stock_lease.waiting, schema version
// 13): each batch's and grant's write of the lease's row says, per goods,
// how many buyers wait at the instance and when the earliest and the latest
// of them arrived, and stamps it with the server's clock (waiting_at). A
// grant reads the other open leases' fresh lists (grantSale.Waiting).

// maxWaitingGoods bounds the goods a lease's waiting list names (the
// column holds 2048 bytes, an entry at most 53): the lowest numbers.
const maxWaitingGoods = 36

// encodeWaiting is the waiting column's text:
// "goodsNo:firstMicros:lastMicros:count" per goods (the earliest and the
// latest arrival), sorted by goods, comma separated.
func encodeWaiting(w map[int32]service.Waiting) string {
	goodsNos := slices.Sorted(maps.Keys(w))
	if len(goodsNos) > maxWaitingGoods {
		goodsNos = goodsNos[:maxWaitingGoods]
	}
	b := make([]byte, 0, 32*len(goodsNos))
	for i, no := range goodsNos {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(no), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, w[no].First.UnixMicro(), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, w[no].Last.UnixMicro(), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(w[no].N), 10)
	}
	return string(b)
}

// addWaiting adds encodeWaiting's text to into: per goods, the counts
// summed, the earliest and the latest arrival kept.
func addWaiting(into map[int32]service.Waiting, text string) error {
	if text == "" {
		return nil
	}
	for _, e := range strings.Split(text, ",") {
		var n [4]int64
		parts := strings.Split(e, ":")
		if len(parts) != len(n) {
			return fmt.Errorf("repo: a lease's waiting entry %q is not goodsNo:firstMicros:lastMicros:count", e)
		}
		for i, p := range parts {
			v, err := strconv.ParseInt(p, 10, 64)
			if err != nil || (i == 0 || i == 3) && int64(int32(v)) != v {
				return fmt.Errorf("repo: a lease's waiting entry %q is not goodsNo:firstMicros:lastMicros:count", e)
			}
			n[i] = v
		}
		no, first, last := int32(n[0]), time.UnixMicro(n[1]), time.UnixMicro(n[2])
		w := into[no]
		if w.N == 0 || first.Before(w.First) {
			w.First = first
		}
		if w.N == 0 || last.After(w.Last) {
			w.Last = last
		}
		w.N += int32(n[3])
		into[no] = w
	}
	return nil
}

// Waiting reads, in the grant's transaction, who waits for the grant's
// goods at the other open leases' instances, by the lists they wrote
// within fresh (service.GrantSale).
func (g *grantSale) Waiting(ctx context.Context, fresh time.Duration) (map[int32]service.Waiting, error) {
	rows, err := g.t.query(ctx, "SELECT waiting FROM stock_lease WHERE open = 1 AND id <> ? AND waiting <> ''"+
		" AND waiting_at > UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND", g.lease, fresh.Microseconds())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	all := map[int32]service.Waiting{}
	for rows.Next() {
		var text string
		if err := rows.Scan(&text); err != nil {
			return nil, err
		}
		if err := addWaiting(all, text); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := map[int32]service.Waiting{}
	for _, no := range g.goodsNos {
		if w, ok := all[no]; ok {
			out[no] = w
		}
	}
	return out, rows.Close()
}
