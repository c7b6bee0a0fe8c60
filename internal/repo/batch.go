package repo

import (
	"context"
	"errors"
	"fmt"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// batchRows is where the stock a batch sells comes from and where the
// batch records what it took: the goods' rows, claimed under the lock
// (claimedRows), or the stock allotted to an instance's lease (leaseRows).
type batchRows interface {
	// pool is where the transaction goes, for a batch of goodsNos.
	pool(goodsNos []int32) salePool
	// claim reads the stock of goodsNos (sorted, distinct) at the start of
	// the transaction; a goods without stock to sell from is missing.
	claim(ctx context.Context, t *tx, goodsNos []int32) (map[int32]goodsStock, error)
	// write appends the statement that records writes, and its arguments;
	// it goes in one packet before the orders' INSERT.
	write(q []byte, args []any, writes []stockWrite) ([]byte, []any)
	// wrote checks the ROW_COUNT() of write's statement.
	wrote(updated int64, writes []stockWrite) error
}

// ordersFirst is batchRows whose batch, when it cannot collide, inserts its
// orders before its claim (BatchStart.First): where the claim's locks are
// what the next batch waits for. insertAndClaim inserts rows (setting their
// ids) and then claims goodsNos as claim does, in one packet.
type ordersFirst interface {
	batchRows
	insertAndClaim(ctx context.Context, t *tx, rows []orderInfo, goodsNos []int32) (map[int32]goodsStock, error)
}

// claimedRows is BeginBatch's stock: the goods' rows, claimed and written
// under the lock whose token is fence.
type claimedRows struct {
	s     *Store
	fence int64
}

func (c claimedRows) pool(goodsNos []int32) salePool { return c.s.salesFor(goodsNos[0]) }

func (c claimedRows) claim(ctx context.Context, t *tx, goodsNos []int32) (map[int32]goodsStock, error) {
	return c.s.claimGoods(ctx, t, goodsNos, c.fence)
}

func (c claimedRows) write(q []byte, args []any, writes []stockWrite) ([]byte, []any) {
	return c.s.appendWriteClaimed(q, writes, c.fence), args
}

// insertAndClaim makes claimedRows an ordersFirst: the goods' rows are what
// the next holder's claim waits for.
func (c claimedRows) insertAndClaim(ctx context.Context, t *tx, rows []orderInfo, goodsNos []int32) (map[int32]goodsStock, error) {
	return c.s.insertAndClaim(ctx, t, rows, goodsNos, c.fence)
}

func (c claimedRows) wrote(updated int64, writes []stockWrite) error {
	if updated != int64(len(writes)) {
		return fmt.Errorf("%w: %d of %d goods rows changed after the claim read them (a stale read)",
			service.ErrConflict, int64(len(writes))-updated, len(writes))
	}
	return nil
}

// claimGoods claims the rows of goodsNos (sorted, distinct): for one goods
// the claim every purchase under the lock makes, for several one locking
// read of them all; each goods' first row by id, its fence checked. A goods
// without a row is missing from the answer.
func (s *Store) claimGoods(ctx context.Context, t *tx, goodsNos []int32, fence int64) (map[int32]goodsStock, error) {
	if len(goodsNos) == 1 {
		read, err := t.claim(ctx, goodsNos[0], fence)
		return claimedOne(goodsNos[0], read, err)
	}
	claimed, err := s.lockGoods(ctx, t, goodsNos)
	if err != nil {
		return nil, err
	}
	return fenceChecked(claimed, fence)
}

// claimedOne is claimGoods' answer for one goods from its claim's: the
// goods missing when it has no row.
func claimedOne(goodsNo int32, read goodsStock, err error) (map[int32]goodsStock, error) {
	switch {
	case errors.Is(err, service.ErrNotFound):
		return map[int32]goodsStock{}, nil
	case err != nil:
		return nil, err
	}
	return map[int32]goodsStock{goodsNo: read}, nil
}

// fenceChecked is claimed, if no row of it was written under a lock newer
// than fence.
func fenceChecked(claimed map[int32]goodsStock, fence int64) (map[int32]goodsStock, error) {
	for _, row := range claimed {
		if err := checkFence(row, fence); err != nil {
			return nil, err
		}
	}
	return claimed, nil
}

// readFacts reads, in the sale's transaction, what the buyer rules need
// to know of the batch's orders (service.Facts): the claimed goods' rows,
// the orders their buyers hold of those goods under the one-per-buyer rule,
// and which of their request ids hold an order. Only the request ids buyers
// chose are looked up, and only if lookUpIDs: one the shop made
// (Order.NewRequestID) is a new UUID, and one a buyer chose is almost
// always new too: the orders' unique key refuses the batch's INSERT if it
// is not, and the batch starts once more with the lookup (service.RunBatch). A
// batch without a lookup and without buyers under the one-per-buyer rule
// makes no query here (the transaction begins with the writes' packet: one
// round trip fewer).
func (s *Store) readFacts(ctx context.Context, t *tx, goodsNos []int32, orders []*service.Order, claimed map[int32]goodsStock,
	lookUpIDs bool) (service.Facts, error) {
	f := service.Facts{Orders: orders, Goods: goodsOf(claimed)}
	var ids, buyers []string
	for _, o := range orders {
		if !o.NewRequestID && lookUpIDs {
			ids = append(ids, o.RequestID) // a buyer's own: it may have bought before (of its buyer's, below)
		}
		if o.OnePerBuyer && o.UserID != "" {
			buyers = append(buyers, o.UserID)
		}
	}
	if len(ids) == 0 && len(buyers) == 0 {
		return f, nil
	}
	tx, err := t.db(ctx)
	if err != nil {
		return f, err
	}
	if len(ids) > 0 {
		var used []service.RequestKey
		if err := tx.Raw("SELECT request_owner AS user_id, request_id FROM order_info WHERE request_id IN ?", ids).Scan(&used).Error; err != nil {
			return f, err
		}
		f.Used = make(map[service.RequestKey]bool, len(used))
		for _, k := range used {
			f.Used[k] = true
		}
	}
	if len(buyers) > 0 {
		var rs []orderInfo
		if err := tx.Raw("SELECT * FROM order_info WHERE goods_no IN ? AND active_buyer IN ?", goodsNos, buyers).Scan(&rs).Error; err != nil {
			return f, err
		}
		f.Held = make(map[service.GoodsBuyer]service.Order, len(rs))
		for _, r := range rs {
			f.Held[service.GoodsBuyer{GoodsNo: r.GoodsNo, UserID: *r.UserID}] = r.order()
		}
	}
	return f, nil
}
