package repo

import (
	"context"
	"fmt"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// BeginBatch begins a batch's sale (service.BatchStore): a transaction on
// the writer node of the batch's lowest goods number (salesFor) whose first
// packet claims the goods' rows under start.Fence, each as BeginSale claims
// one, in the order of their numbers. With start.First, the rows of those
// orders go in first, in the same packet (insertAndClaim): the claim's row
// locks, which the next holder's claim waits for, are then held for the
// stock's write and the commit only, not for the orders' INSERT as well
// (the larger part of the writes: an index entry of each order in three
// indexes), and the next holder inserts its orders while this batch
// commits. The sale's writes then DELETE the rows of the orders the
// decision refused, in the stock write's packet: an order refused is never
// committed.
func (s *Store) BeginBatch(ctx context.Context, start service.BatchStart) (service.BatchSale, error) {
	return s.beginBatch(ctx, claimedRows{s, start.Fence}, start.Goods, start.First)
}

// BeginAllotted begins a batch's sale of goodsNos from the stock the lease
// holds (service.AllotStore): held, of goods (the goods' rows as their
// grants read them). Its claim reads nothing; its writes are the lease's
// row, with the new counts, and the orders', in one packet. The goods'
// rows are not touched. The lease's row also says who waits at the
// instance (waiting, see allotwaiting.go).
func (s *Store) BeginAllotted(ctx context.Context, lease int64, held map[int32]service.Allotment, goods map[int32]service.Goods,
	goodsNos []int32, waiting map[int32]service.Waiting) (service.BatchSale, error) {
	rows := leaseRows{s: s, lease: lease, held: held, goods: goods, waiting: encodeWaiting(waiting)}
	return s.beginBatch(ctx, rows, goodsNos, nil)
}

// beginBatch begins a batch's sale of goodsNos (sorted, distinct) from
// stock, inserting the rows of first before the claim where stock is an
// ordersFirst.
func (s *Store) beginBatch(ctx context.Context, stock batchRows, goodsNos []int32, first []*service.Order) (*batchSale, error) {
	if len(goodsNos) == 0 {
		return nil, fmt.Errorf("repo: a batch's sale of no goods")
	}
	t, err := s.openTx(ctx, stock.pool(goodsNos))
	if err != nil {
		return nil, err
	}
	b := &batchSale{s: s, t: t, stock: stock, goodsNos: goodsNos}
	if firstRows, ok := stock.(ordersFirst); ok && len(first) > 0 {
		now := s.now().UTC()
		b.first, b.inserted = first, make([]orderInfo, len(first))
		for i, o := range first {
			b.inserted[i] = newOrderRow(o, now)
		}
		b.claimed, err = firstRows.insertAndClaim(ctx, t, b.inserted, goodsNos)
	} else {
		b.claimed, err = stock.claim(ctx, t, goodsNos)
	}
	if err != nil {
		return nil, t.fail(ctx, err)
	}
	return b, nil
}

// batchSale is a batch's sale begun by its claim (service.BatchSale).
type batchSale struct {
	s        *Store
	t        *tx
	stock    batchRows
	goodsNos []int32
	claimed  map[int32]goodsStock
	first    []*service.Order // the orders whose rows went in with the claim
	inserted []orderInfo      // their rows, in first's order
	chosen   []*service.Order // the orders sold, in the order of their goods
	rows     []orderInfo      // theirs, filled in at the commit
}

func (b *batchSale) Goods() map[int32]service.Goods { return goodsOf(b.claimed) }

func (b *batchSale) OrdersFirst() bool { return len(b.first) > 0 }

func (b *batchSale) Facts(ctx context.Context, orders []*service.Order, lookUp bool) (service.Facts, error) {
	return b.s.readFacts(ctx, b.t, b.goodsNos, orders, b.claimed, lookUp)
}

// Sell writes what the batch sold: each claimed goods' stock less the
// orders sold of it (with the token as its fence, or the lease's counts),
// and the orders' rows; in one packet (writeBatch), or, when the orders
// went in first, the late buyers' rows, the DELETE of the refused ones'
// and the stock's write in one packet (writeStock).
func (b *batchSale) Sell(ctx context.Context, sold map[int32][]*service.Order) error {
	return b.write(ctx, sold, false)
}

func (b *batchSale) SellAndCommit(ctx context.Context, sold map[int32][]*service.Order) error {
	if err := b.write(ctx, sold, b.OrdersFirst() && b.s.foldsCommit()); err != nil {
		return b.Abort(ctx, err)
	}
	return b.Commit(ctx)
}

// write is Sell, with the COMMIT in the writes' packet if fold (orders
// first only: writeStock).
func (b *batchSale) write(ctx context.Context, sold map[int32][]*service.Order, fold bool) error {
	var writes []stockWrite
	b.chosen = nil
	for _, no := range b.goodsNos {
		read, ok := b.claimed[no]
		if !ok || len(sold[no]) == 0 {
			continue
		}
		b.chosen = append(b.chosen, sold[no]...)
		writes = append(writes, stockWrite{read, read.goods().Stock - int32(len(sold[no]))})
	}
	now := b.s.now().UTC()
	if b.OrdersFirst() {
		rows, drop, fresh := keptRows(b.first, b.inserted, b.chosen)
		late := make([]orderInfo, len(fresh))
		for i, at := range fresh {
			late[i] = newOrderRow(b.chosen[at], now)
		}
		if err := b.s.writeStock(ctx, b.t, b.stock, writes, drop, late, fold); err != nil {
			return err
		}
		for i, at := range fresh {
			rows[at] = late[i]
		}
		b.rows = rows
	} else if len(b.chosen) > 0 {
		b.rows = make([]orderInfo, len(b.chosen))
		for i, o := range b.chosen {
			b.rows[i] = newOrderRow(o, now)
		}
		if err := b.s.writeBatch(ctx, b.t, b.stock, writes, b.rows); err != nil {
			return err
		}
	}
	for _, r := range b.rows {
		b.t.wrote(r.ID)
	}
	return nil
}

func (b *batchSale) Commit(ctx context.Context) error {
	if err := b.t.finish(ctx); err != nil {
		return err
	}
	for i, o := range b.chosen {
		b.rows[i].fill(o)
	}
	return nil
}

func (b *batchSale) Abort(ctx context.Context, err error) error { return b.t.fail(ctx, err) }
