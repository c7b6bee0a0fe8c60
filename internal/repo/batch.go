package repo

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// SellBatch sells to a batch of buyers, of one goods or of several, under a
// lock whose fencing token is fence, in one transaction: it claims the
// goods' rows (each as BeginSale claims one, in the order of their goods
// numbers), reads the facts the buyer rules need (readFacts: the orders
// its buyers hold under the one-per-buyer rule and, when the batch starts
// once more because the orders' unique key refused an INSERT, which of the
// request ids buyers chose hold an order), asks decide which orders to
// sell to (see service.Decide); then writes the goods' new stocks (and the
// token) with one UPDATE and the chosen orders' rows with one multi-row
// INSERT, and commits. It calls guard before the writes, or after them
// when an INSERT could collide with a concurrent one (mayCollide). The
// chosen orders get their ids. An error from decide or guard rolls back
// everything. An order inserted by a concurrent transaction meanwhile
// makes it start once more.
// A batch whose orders went in before its claim (see mayCollide) asks more,
// once its claim holds the rows, for the orders of buyers who came since,
// of goods it claimed and whose INSERT cannot collide: they are chosen after
// the batch's own, and their rows go in with the stock's UPDATE.
// The batch must not hold two limited orders of one buyer for one goods.
//
// The transaction goes to the writer node of the batch's lowest goods
// number (see salesFor): on a cluster named by its nodes, a batch of
// several goods may write a goods through another node than its own, so
// the shop hands the lock on after the commit there (see OneWriter).
func (s *Store) SellBatch(ctx context.Context, fence int64, orders []*service.Order, decide service.Decide, guard func() error,
	more func(accept func(*service.Order) bool) []*service.Order) error {
	return s.sellBatches(ctx, claimedRows{s, fence}, orders, decide, guard, more)
}

// sellBatches is SellBatch on the stock of rows: it starts once more when
// a request id or a buyer came in after the check, with the orders more
// gave the first time among the batch's.
func (s *Store) sellBatches(ctx context.Context, rows batchRows, orders []*service.Order, decide service.Decide, guard func() error,
	more func(accept func(*service.Order) bool) []*service.Order) error {
	var late []*service.Order // what more gave: in the batch from then on
	taking := more
	if more != nil {
		taking = func(accept func(*service.Order) bool) []*service.Order {
			got := more(accept)
			late = append(late, got...)
			return got
		}
	}
	for attempt := 0; ; attempt++ {
		err := s.sellBatch(ctx, rows, slices.Concat(orders, late), decide, guard, taking, attempt > 0)
		if attempt == 0 && (errors.Is(err, service.ErrDuplicateRequest) || errors.Is(err, service.ErrAlreadyBought)) {
			continue // a request id used before, or a buyer who came in after the check: again, ids looked up
		}
		return err
	}
}

func (s *Store) sellBatch(ctx context.Context, stock batchRows, orders []*service.Order, decide service.Decide, guard func() error,
	more func(accept func(*service.Order) bool) []*service.Order, lookUpIDs bool) error {
	if len(orders) == 0 {
		return nil
	}
	var goodsNos []int32
	for _, o := range orders {
		goodsNos = append(goodsNos, o.GoodsNo)
	}
	slices.Sort(goodsNos)
	goodsNos = slices.Compact(goodsNos)
	var chosen []*service.Order
	var rows []orderInfo
	early := !mayCollide(orders) // the guard before the writes
	firstRows, canFirst := stock.(ordersFirst)
	first := early && !lookUpIDs && canFirst
	err := s.inTx(ctx, stock.pool(goodsNos), func(t *tx) error {
		chosen, rows = nil, nil
		var inserted []orderInfo // with first: every order's row, before the claim
		if first {
			now := s.now().UTC()
			inserted = make([]orderInfo, len(orders))
			for i, o := range orders {
				inserted[i] = newOrderRow(o, now)
			}
		}
		var claimed map[int32]goodsStock
		var err error
		if first {
			claimed, err = firstRows.insertAndClaim(ctx, t, inserted, goodsNos)
		} else {
			claimed, err = stock.claim(ctx, t, goodsNos)
		}
		if err != nil {
			return err
		}
		all := orders // the batch's and, with first, the late buyers'
		if first && more != nil {
			// Buyers who came while the orders went in and the claim
			// waited for the last holder's commit join the batch, if their
			// goods' rows are claimed and their INSERT cannot collide: their
			// rows go in with the stock's UPDATE, in the same packet.
			late := more(func(o *service.Order) bool {
				_, ok := claimed[o.GoodsNo]
				return ok && !collides(o)
			})
			all = slices.Concat(orders, late)
		}
		facts, err := s.readFacts(ctx, t, goodsNos, all, claimed, lookUpIDs)
		if err != nil {
			return err
		}
		sold, err := decide(facts)
		if err != nil {
			return err
		}
		var writes []stockWrite
		for _, no := range goodsNos {
			read, ok := claimed[no]
			if !ok || len(sold[no]) == 0 {
				continue
			}
			chosen = append(chosen, sold[no]...)
			writes = append(writes, stockWrite{read, read.goods().Stock - int32(len(sold[no]))})
		}
		if early {
			if err := guard(); err != nil {
				return err
			}
		}
		if first {
			var drop []uint64
			var fresh []int
			rows, drop, fresh = keptRows(orders, inserted, chosen)
			lateRows := make([]orderInfo, len(fresh))
			now := s.now().UTC()
			for i, at := range fresh {
				lateRows[i] = newOrderRow(chosen[at], now)
			}
			if err := s.writeStock(ctx, t, stock, writes, drop, lateRows); err != nil {
				return err
			}
			for i, at := range fresh {
				rows[at] = lateRows[i]
			}
		} else if len(chosen) > 0 {
			now := s.now().UTC()
			rows = make([]orderInfo, len(chosen))
			for i, o := range chosen {
				rows[i] = newOrderRow(o, now)
			}
			if err := s.writeBatch(ctx, t, stock, writes, rows); err != nil {
				return err
			}
		}
		if !early {
			if err := guard(); err != nil {
				return err
			}
		}
		for _, r := range rows {
			t.wrote(r.ID)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, o := range chosen {
		rows[i].fill(o)
	}
	return nil
}

// mayCollide reports whether the INSERT of some of orders could find its
// key taken by a transaction that committed after the batch's checks: a
// request id the buyer chose, or a buyer under the one-per-buyer rule.
// SellBatch then checks and sells once more, under the same lock, so it
// calls guard only after its writes. Otherwise it calls guard before them:
// a shop-made request id is a new UUID, and the INSERT cannot fail on a key
// (only on the server, which ends the sale). The guard begins the lock's
// hand-off on one server, so the next holder's ZooKeeper round trips then
// overlap this batch's writes and commit, not only its commit; its claim
// waits for this transaction's row locks all the same (see the service's
// handOff).
//
// Where the stock is the goods' rows (claimedRows, an ordersFirst), such a batch
// also inserts its orders first, before its claim: the rows of every order
// of the batch, in the transaction's first statement, with the claim after
// it in the same packet (insertAndClaim: one round trip on the lock's path,
// which runs from the hold's start to the guard); then the decision and the
// guard; then the stock's UPDATE, with a DELETE of the rows
// of the orders the decision refused (a goods sold out or without a row, a
// closed window), in one packet. The claim's row locks, which the next
// holder's claim waits for, are then held for the UPDATE and the commit
// only, not for the INSERT of the orders as well (the larger part of the
// writes: an index entry of each order in three indexes); and the next
// holder inserts its orders while this batch commits. An order the decision
// refused is never committed, and every order's row is in the same
// transaction as the stock it took, as before.
func mayCollide(orders []*service.Order) bool {
	return slices.ContainsFunc(orders, collides)
}

// collides reports whether the INSERT of o could find its key taken by a
// concurrent transaction (see mayCollide).
func collides(o *service.Order) bool {
	return !o.NewRequestID || o.OnePerBuyer && o.UserID != ""
}

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
// orders before its claim (see mayCollide): where the claim's locks are
// what the next batch waits for. insertAndClaim inserts rows (setting their
// ids) and then claims goodsNos as claim does, in one packet.
type ordersFirst interface {
	batchRows
	insertAndClaim(ctx context.Context, t *tx, rows []orderInfo, goodsNos []int32) (map[int32]goodsStock, error)
}

// claimedRows is SellBatch's stock: the goods' rows, claimed and written
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
// is not, and the batch starts once more with the lookup (sellBatches). A
// batch without a lookup and without buyers under the one-per-buyer rule
// makes no query here (the transaction begins with the writes' packet: one
// round trip fewer).
func (s *Store) readFacts(ctx context.Context, t *tx, goodsNos []int32, orders []*service.Order, claimed map[int32]goodsStock,
	lookUpIDs bool) (service.Facts, error) {
	f := service.Facts{Orders: orders, Goods: make(map[int32]service.Goods, len(claimed))}
	for no, read := range claimed {
		f.Goods[no] = read.goods()
	}
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
