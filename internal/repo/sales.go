package repo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// Sell sets the stock of row g.ID and inserts the order in one transaction:
// the purchase without a lock. ErrPurchaseFailed when the row is gone.
func (s *Store) Sell(ctx context.Context, g service.Goods, stock int32, order *service.Order) error {
	row := newOrderRow(order, s.now().UTC())
	err := s.inTx(ctx, s.salesFor(g.GoodsNo), func(t *tx) error {
		updated, err := t.writeOrder(ctx, &row, setStockSQL, stock, g.ID)
		if err == nil && updated == 0 {
			return service.ErrPurchaseFailed
		}
		return err
	})
	if err != nil {
		return err
	}
	row.fill(order)
	return nil
}

// BeginSale begins a sale of goodsNo under a lock whose fencing token is
// fence (service.SeedStore): a transaction on the goods' writer node whose
// first packet claims the goods' row (see claim). A newer holder's token
// on the row is service.ErrFenced and a goods without a row
// service.ErrNotFound, with the transaction ended. The sale makes two
// round trips to MySQL before its commit: this one, and Sell's.
func (s *Store) BeginSale(ctx context.Context, goodsNo int32, fence int64) (service.Sale, error) {
	t, err := s.openTx(ctx, s.salesFor(goodsNo))
	if err != nil {
		return nil, err
	}
	read, err := t.claim(ctx, goodsNo, fence)
	if err != nil {
		return nil, t.fail(ctx, err)
	}
	return &claimedSale{s: s, t: t, fence: fence, rows: map[int32]goodsStock{goodsNo: read}}, nil
}

// claimedSale is a sale begun by its claim (service.Sale).
type claimedSale struct {
	s     *Store
	t     *tx
	fence int64
	rows  map[int32]goodsStock // as claimed, then as written
	sold  []orderWritten
}

// orderWritten is an order and the row written for it, filled in at the
// commit.
type orderWritten struct {
	order *service.Order
	row   orderInfo
}

func (c *claimedSale) Goods() map[int32]service.Goods { return goodsOf(c.rows) }

// Sell writes each order with its goods' claimed row: the order's INSERT
// and the row's stock less one, with the fence, in one packet
// (tx.writeOrder). The write carries the row as it was read or last
// written (claimedStock): a row that changed meanwhile is a stale claim,
// service.ErrConflict.
func (c *claimedSale) Sell(ctx context.Context, sold map[int32][]*service.Order) error {
	for _, no := range slices.Sorted(maps.Keys(sold)) {
		read, ok := c.rows[no]
		if !ok {
			return fmt.Errorf("%w: goods %d was not claimed", service.ErrPurchaseFailed, no)
		}
		for _, o := range sold[no] {
			row := newOrderRow(o, c.s.now().UTC())
			stock := read.goods().Stock - 1
			updated, err := c.t.writeOrder(ctx, &row, writeClaimedSQL, stock, c.fence, read.ID, read.Stock, read.Fence)
			if err != nil {
				return err
			}
			if updated == 0 {
				return changedSinceClaim(read)
			}
			read.Stock, read.Fence = &stock, c.fence
			c.rows[no] = read
			c.sold = append(c.sold, orderWritten{o, row})
		}
	}
	return nil
}

func (c *claimedSale) Commit(ctx context.Context) error {
	if err := c.t.finish(ctx); err != nil {
		return err
	}
	for _, w := range c.sold {
		w.row.fill(w.order)
	}
	return nil
}

func (c *claimedSale) Abort(ctx context.Context, err error) error { return c.t.fail(ctx, err) }

// OrderByRequestID reads the order of a buyer's request id; found is false
// when there is none. The read locks the key's index entry (shared), so it
// waits for a transaction still inserting that order to commit or roll back
// rather than missing it.
func (s *Store) OrderByRequestID(ctx context.Context, key service.RequestKey) (order service.Order, found bool, err error) {
	return s.lockedOrder(ctx, "request_id = ? AND request_owner = ?", key.RequestID, key.UserID)
}

// lockedOrder reads the order matching where (a unique key's condition)
// with a shared lock, so that a transaction still inserting it is waited
// for rather than missed.
func (s *Store) lockedOrder(ctx context.Context, where string, args ...any) (service.Order, bool, error) {
	var rows []orderInfo
	err := s.db.WithContext(ctx).Raw("SELECT * FROM order_info WHERE "+where+" LOCK IN SHARE MODE", args...).Scan(&rows).Error
	if err != nil {
		return service.Order{}, false, translate(err)
	}
	if len(rows) == 0 {
		return service.Order{}, false, nil
	}
	return rows[0].order(), true, nil
}

// SellAtomic is the purchase with the database as the lock: it inserts the
// order, then decrements the stock of order.GoodsNo where it is above zero
// (the first such row by id), in one transaction. The order comes first so
// that the hot row is locked only from its update to the commit.
func (s *Store) SellAtomic(ctx context.Context, order *service.Order) error {
	now := s.now().UTC()
	row := newOrderRow(order, now)
	err := s.inTx(ctx, s.salesFor(order.GoodsNo), func(t *tx) error {
		updated, err := t.writeOrder(ctx, &row, takeOneSQL, order.GoodsNo, now, now)
		if err != nil || updated > 0 {
			return err
		}
		db, err := t.db(ctx)
		if err != nil {
			return err
		}
		g, err := goods(db, order.GoodsNo)
		if err != nil {
			return err // no such goods
		}
		if err := g.OpenAt(now); err != nil {
			return err
		}
		return service.ErrSoldOut
	})
	if err != nil {
		return err
	}
	row.fill(order)
	return nil
}

// ActiveOrderOfBuyer reads the order of goodsNo that userID holds under the
// one-per-buyer rule (not expired), if there is one.
func (s *Store) ActiveOrderOfBuyer(ctx context.Context, goodsNo int32, userID string) (order service.Order, found bool, err error) {
	return s.lockedOrder(ctx, "goods_no = ? AND active_buyer = ?", goodsNo, userID)
}

// writeOrder inserts the order row and runs the stock's write that goes
// with it (stockSQL, one of stockwrite.go's, with its arguments) in one
// packet, one round trip; it sets row.ID and returns how many rows the
// stock's write changed. Every sale of one order writes so; a batch writes
// its orders and stocks in writeBatch. The INSERT goes first: the row lock
// the write takes is then held from the write to the commit only, and the
// write, after another statement in the packet, carries inTxOnly.
func (t *tx) writeOrder(ctx context.Context, row *orderInfo, stockSQL string, stockArgs ...any) (updated int64, err error) {
	rows, err := t.query(ctx, insertOrderSQL+orderValuesSQL+"; "+stockSQL+"; SELECT LAST_INSERT_ID(), ROW_COUNT(), @@in_transaction",
		append(row.appendInsertArgs(make([]any, 0, 6+len(stockArgs))), stockArgs...)...)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var orderID uint64
	var inTxn bool
	if !rows.Next() {
		return 0, errors.Join(errors.New("repo: no answer to the sale's last statement"), rows.Err())
	}
	if err := rows.Scan(&orderID, &updated, &inTxn); err != nil {
		return 0, err
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	if !inTxn {
		return 0, abortedUnawares()
	}
	row.ID = orderID
	t.wrote(orderID)
	return updated, nil
}

// OrdersOfGoods reads the orders of goodsNo, at most limit of them;
// complete is false when it has more. (The one-per-buyer key's index
// begins with the goods.)
func (s *Store) OrdersOfGoods(ctx context.Context, goodsNo int32, limit int) (orders []service.Order, complete bool, err error) {
	var rows []orderInfo
	if err := s.db.WithContext(ctx).Raw("SELECT * FROM order_info WHERE goods_no = ? LIMIT ?", goodsNo, limit+1).Scan(&rows).Error; err != nil {
		return nil, false, translate(err)
	}
	if len(rows) > limit {
		return nil, false, nil
	}
	orders = make([]service.Order, len(rows))
	for i, r := range rows {
		orders[i] = r.order()
	}
	return orders, true, nil
}
