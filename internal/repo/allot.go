package repo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// The stock allotted to instances (purchase.strategy=allot). An instance
// opens a lease (a stock_lease row naming its ZooKeeper node), takes stock
// of goods from their goods_stock rows into it (Grant), sells from it with
// one write of the lease's row per batch (BeginAllotted) and gives back what
// it does not need (ReturnAllotted). The lease's row lists, per goods, the
// stock granted and how much of it was sold; every transaction that changes
// it checks that the lease is still open. Closing a lease (CloseLease: its
// owner at the end, or any instance once the owner's node is gone) puts
// back what was granted and not sold, under the row's lock: a batch of the
// owner committed before it is counted, one after it writes nothing.

// leaseClosed is the error of a lease transaction that found the lease
// closed: its owner was taken for dead and its stock put back.
func leaseClosed(lease int64) error {
	return fmt.Errorf("%w: lease %d was closed (its ZooKeeper node had gone) and its stock put back", service.ErrFenced, lease)
}

// OpenLease opens a lease named by node, the ZooKeeper node whose life is
// the lease's, and returns its id.
func (s *Store) OpenLease(ctx context.Context, node string) (int64, error) {
	res, err := s.sales[0].sql.ExecContext(ctx, "INSERT INTO stock_lease (node, open, allotted, created_at) VALUES (?, 1, '', ?)",
		node, time.Now().UTC())
	if err != nil {
		return 0, fmt.Errorf("repo: open a lease: %w", err)
	}
	return res.LastInsertId()
}

// OpenLeases lists the open leases and their nodes.
func (s *Store) OpenLeases(ctx context.Context) (map[int64]string, error) {
	rows, err := s.sales[0].sql.QueryContext(ctx, "SELECT id, node FROM stock_lease WHERE open = 1")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[int64]string{}
	for rows.Next() {
		var id int64
		var node string
		if err := rows.Scan(&id, &node); err != nil {
			return nil, err
		}
		out[id] = node
	}
	return out, rows.Err()
}

// LeaseState reads what the lease holds, for an owner that lost track (a
// commit whose outcome it did not hear); open is false once it was closed.
func (s *Store) LeaseState(ctx context.Context, lease int64) (held map[int32]service.Allotment, open bool, err error) {
	var text string
	err = s.sales[0].sql.QueryRowContext(ctx, "SELECT allotted, open FROM stock_lease WHERE id = ?", lease).Scan(&text, &open)
	if err != nil {
		return nil, false, err
	}
	held, err = decodeAllotted(text)
	return held, open, err
}

// BeginGrant begins a grant of stock of goodsNos (sorted, distinct) into
// the lease (service.AllotStore): a transaction whose first packet reads
// the goods' rows, locked until the commit; a goods without a row is
// missing from its Goods. Take writes and commits it.
func (s *Store) BeginGrant(ctx context.Context, lease int64, goodsNos []int32) (service.GrantSale, error) {
	t, err := s.openTx(ctx, s.sales[0])
	if err != nil {
		return nil, err
	}
	rows, err := s.lockGoods(ctx, t, goodsNos)
	if err != nil {
		return nil, t.fail(ctx, err)
	}
	return &grantSale{s: s, t: t, lease: lease, goodsNos: goodsNos, rows: rows}, nil
}

// grantSale is a grant begun by its read of the goods' rows
// (service.GrantSale).
type grantSale struct {
	s        *Store
	t        *tx
	lease    int64
	goodsNos []int32
	rows     map[int32]goodsStock
}

func (g *grantSale) Goods() map[int32]service.Goods { return goodsOf(g.rows) }

// Take lowers each goods' row by what it takes and writes the lease's row
// with the new grants, in one packet, and commits. With pending it first
// sums what the other open leases hold unsold of each goods whose row the
// grant leaves empty (Pending): the rows' locks keep their returns and
// closes out meanwhile.
func (g *grantSale) Take(ctx context.Context, held map[int32]service.Allotment, take map[int32]int32, pending bool,
	waiting map[int32]service.Waiting) (service.Grant, error) {
	out := service.Grant{Goods: g.Goods(), Granted: map[int32]int32{}, Pending: map[int32]int32{}, Holders: map[int64][]int32{}}
	after := cloneAllotted(held)
	var q []byte
	for _, no := range g.goodsNos {
		row, ok := g.rows[no]
		n := take[no]
		if !ok || n <= 0 {
			continue
		}
		if n > out.Goods[no].Stock {
			return out, g.Abort(ctx, fmt.Errorf("repo: a grant of %d of goods %d, whose row holds %d", n, no, out.Goods[no].Stock))
		}
		out.Granted[no] = n
		a := after[no]
		a.Granted += n
		after[no] = a
		q = append(appendTake(q, row.ID, n), "; "...)
	}
	if pending {
		if err := g.s.pending(ctx, g.t, g.lease, out); err != nil {
			return out, g.Abort(ctx, err)
		}
	}
	q = append(q, leaseWaitingWriteSQL...)
	if err := g.t.writeLease(ctx, string(q), g.lease, encodeAllotted(after), encodeWaiting(waiting)); err != nil {
		return out, g.Abort(ctx, err)
	}
	return out, g.t.finish(ctx)
}

func (g *grantSale) Abort(ctx context.Context, err error) error { return g.t.fail(ctx, err) }

// ReturnAllotted gives back to the goods' rows the stock in back, which
// the lease, holding held, has not sold.
func (s *Store) ReturnAllotted(ctx context.Context, lease int64, held map[int32]service.Allotment, back map[int32]int32) error {
	goodsNos := make([]int32, 0, len(back))
	for no := range back {
		goodsNos = append(goodsNos, no)
	}
	slices.Sort(goodsNos)
	return s.inTx(ctx, s.sales[0], func(t *tx) error {
		after := cloneAllotted(held)
		var q []byte
		for _, no := range goodsNos {
			a := after[no]
			if back[no] <= 0 || back[no] > a.Granted-a.Sold {
				return fmt.Errorf("repo: lease %d cannot give back %d of goods %d: it holds %d unsold", lease, back[no], no, a.Granted-a.Sold)
			}
			a.Granted -= back[no]
			if a.Granted == a.Sold {
				delete(after, no)
			} else {
				after[no] = a
			}
			q = append(appendPutBack(q, no, back[no]), "; "...)
		}
		q = append(q, leaseWriteSQL...)
		return t.writeLease(ctx, string(q), lease, encodeAllotted(after))
	})
}

// CloseLease closes the lease and puts back into the goods' rows what it
// was granted and did not sell; it reports how much, and false when the
// lease was closed already. Its lock on the lease's row waits for a batch
// of the owner in flight: that batch is counted, and later ones of the owner
// write nothing.
func (s *Store) CloseLease(ctx context.Context, lease int64) (putBack int64, closed bool, err error) {
	err = s.inTx(ctx, s.sales[0], func(t *tx) error {
		putBack, closed = 0, false
		rows, err := t.query(ctx, "SELECT allotted FROM stock_lease WHERE id = ? AND open = 1 FOR UPDATE", lease)
		if err != nil {
			return err
		}
		var text string
		found := rows.Next()
		if found {
			err = rows.Scan(&text)
		}
		err = errors.Join(err, rows.Close())
		if err != nil || !found {
			return err
		}
		held, err := decodeAllotted(text)
		if err != nil {
			return err
		}
		goodsNos := make([]int32, 0, len(held))
		for no := range held {
			goodsNos = append(goodsNos, no)
		}
		slices.Sort(goodsNos) // row locks in one order, as every sale takes them
		var q []byte
		for _, no := range goodsNos {
			if n := held[no].Granted - held[no].Sold; n > 0 {
				q = append(appendPutBack(q, no, n), "; "...)
				putBack += int64(n)
			}
		}
		q = append(q, "UPDATE stock_lease SET open = 0, allotted = '' WHERE id = ?"+inTxOnly+rowCountSQL...)
		res, err := t.query(ctx, string(q), lease)
		if err != nil {
			return err
		}
		defer res.Close()
		if _, err := rowCountInTx(res, "lease's close"); err != nil {
			return err
		}
		closed = true
		return res.Close()
	})
	return putBack, closed, err
}

// pending fills g.Pending and g.Holders: for each goods of g whose row is
// out of stock, what the other open leases hold of it unsold, and which.
func (s *Store) pending(ctx context.Context, t *tx, lease int64, g service.Grant) error {
	rows, err := t.query(ctx, "SELECT id, allotted FROM stock_lease WHERE open = 1 AND id <> ?", lease)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var text string
		if err := rows.Scan(&id, &text); err != nil {
			return err
		}
		held, err := decodeAllotted(text)
		if err != nil {
			return err
		}
		for no, goods := range g.Goods {
			if n := held[no].Granted - held[no].Sold; n > 0 && goods.Stock-g.Granted[no] <= 0 {
				g.Pending[no] += n
				g.Holders[id] = append(g.Holders[id], no)
			}
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return rows.Close()
}

// leaseWriteSQL is the lease's write that ends a grant's or a return's
// packet, and the check of it (arguments: the allotted text and the lease).
const leaseWriteSQL = leaseWrite + rowCountSQL

// leaseWrite is leaseWriteSQL's write.
const leaseWrite = "UPDATE stock_lease SET allotted = ? WHERE id = ? AND open = 1" + inTxOnly

// leaseWaitingWriteSQL is leaseWriteSQL that also writes who waits at the
// instance (arguments: the allotted text, the waiting text, the lease).
const leaseWaitingWriteSQL = leaseWaitingWrite + rowCountSQL

// leaseWaitingWrite is leaseWaitingWriteSQL's write.
const leaseWaitingWrite = leaseWaitingSet + " WHERE id = ? AND open = 1" + inTxOnly

// leaseWaitingSet is what a grant's and a batch's lease writes set.
const leaseWaitingSet = "UPDATE stock_lease SET allotted = ?, waiting = ?, waiting_at = UTC_TIMESTAMP(6)"

// writeLease sends stmts, which end with leaseWriteSQL or
// leaseWaitingWriteSQL, with texts and the lease as their arguments, and
// checks that the lease was open and the transaction still is.
func (t *tx) writeLease(ctx context.Context, stmts string, lease int64, texts ...any) error {
	rows, err := t.query(ctx, stmts, append(texts, lease)...)
	if err != nil {
		return err
	}
	defer rows.Close()
	updated, err := rowCountInTx(rows, "lease's write")
	if err != nil {
		return err
	}
	if updated != 1 {
		return leaseClosed(lease)
	}
	return rows.Close()
}

// leaseRows is BeginAllotted's stock: what a lease holds. It is no
// ordersFirst: a lease's row is its instance's alone, and its write and the
// orders' INSERT stay in one packet.
type leaseRows struct {
	s       *Store
	lease   int64
	held    map[int32]service.Allotment
	goods   map[int32]service.Goods
	waiting string // encodeWaiting's text, written with the lease's row
}

// pool is the first server's: every write of a lease goes to one node of a
// cluster, where the next one sees it.
func (l leaseRows) pool([]int32) salePool { return l.s.sales[0] }

func (l leaseRows) claim(_ context.Context, _ *tx, goodsNos []int32) (map[int32]goodsStock, error) {
	out := make(map[int32]goodsStock, len(goodsNos))
	for _, no := range goodsNos {
		g, ok := l.goods[no]
		if !ok {
			continue
		}
		left := l.held[no].Granted - l.held[no].Sold
		out[no] = goodsStock{ID: g.ID, GoodsNo: no, Stock: &left, IsActive: &g.IsActive, SaleStart: g.SaleStart, SaleEnd: g.SaleEnd}
	}
	return out, nil
}

func (l leaseRows) write(q []byte, args []any, writes []stockWrite) ([]byte, []any) {
	sold := make(map[int32]int32, len(writes))
	for _, w := range writes {
		sold[w.read.GoodsNo] = *w.read.Stock - w.stock
	}
	q = append(q, leaseWaitingSet+", batches = batches + 1 WHERE id = ? AND open = 1"+inTxOnly...)
	return q, append(args, encodeSold(l.held, sold), l.waiting, l.lease)
}

func (l leaseRows) wrote(updated int64, _ []stockWrite) error {
	if updated != 1 {
		return leaseClosed(l.lease)
	}
	return nil
}

func cloneAllotted(held map[int32]service.Allotment) map[int32]service.Allotment {
	out := make(map[int32]service.Allotment, len(held)+8)
	for no, a := range held {
		out[no] = a
	}
	return out
}

// encodeAllotted is the lease row's allotted text: "goodsNo:granted:sold"
// per goods of which the lease holds some unsold, sorted by goods, comma
// separated; a lease that holds nothing has "".
func encodeAllotted(held map[int32]service.Allotment) string { return encodeSold(held, nil) }

// encodeSold is encodeAllotted of held once sold more of each goods are sold
// (a batch's sales), without a copy of held.
func encodeSold(held map[int32]service.Allotment, sold map[int32]int32) string {
	goodsNos := make([]int32, 0, len(held))
	for no, a := range held {
		if a.Granted > a.Sold+sold[no] {
			goodsNos = append(goodsNos, no)
		}
	}
	slices.Sort(goodsNos)
	b := make([]byte, 0, 20*len(goodsNos))
	for i, no := range goodsNos {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(no), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(held[no].Granted), 10)
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(held[no].Sold+sold[no]), 10)
	}
	return string(b)
}

// decodeAllotted reads encodeAllotted's text.
func decodeAllotted(text string) (map[int32]service.Allotment, error) {
	out := map[int32]service.Allotment{}
	if text == "" {
		return out, nil
	}
	for _, e := range strings.Split(text, ",") {
		parts := strings.Split(e, ":")
		if len(parts) != 3 {
			return nil, fmt.Errorf("repo: a lease's allotted entry %q is not goodsNo:granted:sold", e)
		}
		var n [3]int64
		for i, p := range parts {
			v, err := strconv.ParseInt(p, 10, 32)
			if err != nil {
				return nil, fmt.Errorf("repo: a lease's allotted entry %q: %w", e, err)
			}
			n[i] = v
		}
		out[int32(n[0])] = service.Allotment{Granted: int32(n[1]), Sold: int32(n[2])}
	}
	return out, nil
}
