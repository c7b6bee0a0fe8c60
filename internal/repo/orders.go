package repo

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"time"

	"github.com/go-sql-driver/mysql"
	"gorm.io/gorm"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// Order reads order id, if owner is "" or its buyer:
// service.ErrOrderNotFound when there is none (another buyer's order is
// not told from a missing one).
func (s *Store) Order(ctx context.Context, id uint64, owner string) (service.Order, error) {
	return order(s.db.WithContext(ctx), id, owner)
}

func order(db *gorm.DB, id uint64, owner string) (service.Order, error) {
	var row orderInfo
	q := db.Where("id = ?", id)
	if owner != "" {
		q = q.Where("user_id = ?", owner)
	}
	err := q.Take(&row).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return service.Order{}, service.ErrOrderNotFound
	}
	if err != nil {
		return service.Order{}, translate(err)
	}
	return row.order(), nil
}

// PayOrder marks order id paid at now if it is unpaid and was placed at or
// after placedSince (the zero time: any), in one conditional statement, so
// that of a payment and an expiry of the same order exactly one happens: the
// row lock orders them, and the second finds the status changed. Paying a
// paid order returns it unchanged; an expired order, or an unpaid one placed
// before placedSince, is service.ErrOrderExpired. With an owner, only that
// buyer's order is paid (the UPDATE names it too); another's is untouched
// and, read back as the owner's, service.ErrOrderNotFound.
//
// Once the UPDATE is sent, the caller's context no longer decides (as for a
// sale's COMMIT, see tx.final): the statement and the read back run on a
// context of their own, bounded by saleTimeout. When the connection breaks
// with the UPDATE in flight, the order is read again: paid, the payment
// happened (or an earlier one did); unpaid, it did not
// (service.ErrConnectionLost); unreadable, service.ErrUnavailable (pay
// again: a payment is idempotent).
func (s *Store) PayOrder(ctx context.Context, id uint64, owner string, now, placedSince time.Time) (service.Order, error) {
	if err := ctx.Err(); err != nil {
		return service.Order{}, err // nothing sent
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saleTimeout)
	defer cancel()
	db := s.db.WithContext(ctx)
	stmt, args := payOrderSQL, []any{service.OrderPaid, now, id, service.OrderUnpaid, placedSince}
	if owner != "" {
		stmt, args = stmt+" AND user_id = ?", append(args, owner)
	}
	var res *gorm.DB
	for attempt := 0; ; attempt++ {
		// By primary key, always: on a small table the optimizer may take
		// the status index instead, locking in the opposite order to the
		// sweeper's, which locks orders by primary key first.
		res = db.Exec(stmt, args...)
		var me *mysql.MySQLError
		if attempt < 3 && errors.As(res.Error, &me) && me.Number == erLockDeadlock {
			continue // chosen as a deadlock's victim: rolled back, so try again
		}
		break
	}
	if res.Error != nil && !refusedBeforeCommit(res.Error) {
		return s.paymentOutcome(id, owner, res.Error)
	}
	if res.Error != nil {
		return service.Order{}, translate(res.Error)
	}
	o, err := order(db, id, owner)
	if err != nil {
		return service.Order{}, err
	}
	switch {
	case o.Status == service.OrderPaid:
		return o, nil // paid now, or before: the same answer
	case o.Status == service.OrderExpired, res.RowsAffected == 0:
		return o, service.ErrOrderExpired // expired, or unpaid past the timeout: the sweeper's
	default:
		return o, nil
	}
}

// paymentOutcome reads order id again after its payment's UPDATE was cut
// off (err), on a connection of its own: paid, the payment was made;
// otherwise it was not. The read is tried again, after a wait that grows,
// until saleTimeout: what cut the payment off (a network blip, a server
// restarting) often cut the pool's idle connections too, or refuses new
// ones for a moment, and a read can be repeated freely.
func (s *Store) paymentOutcome(id uint64, owner string, err error) (service.Order, error) {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return service.Order{}, translate(err) // never connected: nothing was sent
	}
	ctx, cancel := context.WithTimeout(context.Background(), saleTimeout)
	defer cancel()
	for wait := 50 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		o, rerr := order(s.db.WithContext(ctx), id, owner)
		switch {
		case rerr == nil && o.Status == service.OrderPaid:
			return o, nil
		case rerr == nil:
			return o, fmt.Errorf("%w: mysql: the payment was cut off and did not happen: %w", service.ErrConnectionLost, err)
		case errors.Is(rerr, service.ErrOrderNotFound):
			return service.Order{}, rerr
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
			continue
		case <-ctx.Done():
			t.Stop()
		}
		// Unknown, but a payment is idempotent: 503 unavailable, pay
		// again (a payment's 5xx never promised that nothing happened).
		return service.Order{}, fmt.Errorf("%w: mysql: the payment was cut off and its order could not be read: %w", service.ErrUnavailable, errors.Join(err, rerr))
	}
}

// The two statements that lock order rows lock them by primary key, in the
// same order, so that a payment and a sweep never deadlock (on a small table
// the optimizer may otherwise take the status index for the payment, and
// lock in the opposite order). TestOrderLocksAreTakenByPrimaryKey pins both
// plans with EXPLAIN.
const (
	payOrderSQL   = "UPDATE order_info FORCE INDEX (PRIMARY) SET status = ?, paid_at = ? WHERE id = ? AND status = ? AND created_at >= ?"
	lockOrdersSQL = "SELECT * FROM order_info WHERE id IN ? ORDER BY id FOR UPDATE"
)

// ExpireOrders expires up to limit unpaid orders placed before placedBefore
// and returns their pieces to the stock, in one transaction, and returns the
// orders it expired.
//
// The orders are read with a locking read and changed only if still unpaid,
// so an order is expired, and its piece returned, at most once: a payment of
// it waits for the row lock and then finds it expired, and a second sweeper
// (one whose leadership ended without its knowing) finds nothing to do. The
// transaction reads committed rows only: no gap locks to hold back the
// purchases inserting new orders meanwhile.
//
// The stock goes back with `stock = stock + n`, one statement on the row
// lock: a purchase under the ZooKeeper lock holds that row lock from its claim
// to its commit, so the two never interleave, whichever comes first, and
// the increment needs neither the ZooKeeper lock nor a fencing token (it
// neither reads a stale value nor writes one back).
func (s *Store) ExpireOrders(ctx context.Context, placedBefore, now time.Time, limit int) ([]service.Order, error) {
	var expired []service.Order
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		expired = nil
		// Find the candidates without locking, then lock their rows by
		// primary key, as a payment does: taking locks through the status
		// index first would take them in the opposite order to a payment's
		// and deadlock with it.
		var candidates []uint64
		err := tx.Model(&orderInfo{}).Where("status = ? AND created_at < ?", service.OrderUnpaid, placedBefore).
			Order("status, created_at").Limit(limit).Pluck("id", &candidates).Error
		if err != nil || len(candidates) == 0 {
			return err
		}
		var locked []orderInfo
		err = tx.Raw(lockOrdersSQL, candidates).Scan(&locked).Error
		if err != nil {
			return err
		}
		var rows []orderInfo
		for _, r := range locked {
			if r.Status == service.OrderUnpaid {
				rows = append(rows, r) // not paid (or expired by another sweeper) meanwhile
			}
		}
		if len(rows) == 0 {
			return nil
		}
		ids := make([]uint64, len(rows))
		perGoods := map[int32]int{}
		for i, r := range rows {
			ids[i] = r.ID
			perGoods[r.GoodsNo]++
		}
		err = tx.Model(&orderInfo{}).Where("id IN ?", ids).
			Updates(map[string]any{"status": service.OrderExpired, "expired_at": now}).Error
		if err != nil {
			return err
		}
		// The goods' rows in the order of their goods numbers, as a batch
		// of several goods claims them (by the goods index; by primary key
		// the order of the rows' ids, the same where `shop stock set` made
		// the rows): two transactions that lock rows in opposite orders
		// deadlock, and InnoDB rolls one of them back.
		for _, goodsNo := range slices.Sorted(maps.Keys(perGoods)) {
			err := tx.Exec(string(appendPutBack(nil, goodsNo, int32(perGoods[goodsNo])))).Error
			if err != nil {
				return err
			}
		}
		for _, r := range rows {
			r.Status, r.ExpiredAt = service.OrderExpired, &now
			expired = append(expired, r.order())
		}
		return nil
	}, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return nil, translate(err)
	}
	return expired, nil
}

// SaleTotals sums the stock of every goods row: one scan of goods_stock.
func (s *Store) SaleTotals(ctx context.Context) (service.SaleTotals, error) {
	var t service.SaleTotals
	err := s.db.WithContext(ctx).Raw("SELECT COUNT(*), COALESCE(SUM(COALESCE(stock, 0) <= 0), 0), "+
		"COALESCE(SUM(GREATEST(COALESCE(stock, 0), 0)), 0) FROM goods_stock").Row().Scan(&t.Goods, &t.SoldOut, &t.StockLeft)
	return t, translate(err)
}

// OrderCounts counts the order rows of each of goodsNos by status, in
// one query: every goods asked for has a count of each status, 0 included.
func (s *Store) OrderCounts(ctx context.Context, goodsNos []int32) (map[int32]map[string]int64, error) {
	counts := make(map[int32]map[string]int64, len(goodsNos))
	for _, no := range goodsNos {
		counts[no] = map[string]int64{service.OrderUnpaid: 0, service.OrderPaid: 0, service.OrderExpired: 0}
	}
	if len(goodsNos) == 0 {
		return counts, nil
	}
	var rows []struct {
		GoodsNo int32
		Status  string
		N       int64
	}
	err := s.db.WithContext(ctx).Model(&orderInfo{}).Select("goods_no, status, COUNT(*) AS n").
		Where("goods_no IN ?", goodsNos).Group("goods_no, status").Scan(&rows).Error
	if err != nil {
		return nil, translate(err)
	}
	for _, r := range rows {
		counts[r.GoodsNo][r.Status] = r.N
	}
	return counts, nil
}

// OldestUnpaid is the placing time of the oldest unpaid order of any goods
// (ok false when there is none): one lookup at the start of the index on
// (status, created_at). No piece can go back to a stock before that time
// plus the pay timeout (service.SoldOutMarks).
func (s *Store) OldestUnpaid(ctx context.Context) (placed time.Time, ok bool, err error) {
	var t sql.NullTime
	err = s.db.WithContext(ctx).Raw("SELECT MIN(created_at) FROM order_info WHERE status = ?", service.OrderUnpaid).Scan(&t).Error
	if err != nil {
		return time.Time{}, false, translate(err)
	}
	return t.Time, t.Valid, nil
}
