package repo

import (
	"slices"
	"strconv"
)

// The goods' stock is written in these shapes only, each built here: a
// sale's write of the row its claim read (one row, or a batch's rows),
// the atomic sale's decrement without a claim, the purchase without a lock
// (the race the lock is there to stop), a grant's take into a lease, and
// the put-back of pieces into a goods' first row (a lease's return or
// close, an expired order's). Every one of them may follow another
// statement in a packet, and so ends its condition with inTxOnly. (The
// stock set by `shop stock set` is the operator's, in stock.go.)

// claimedStock is the condition of a claimed row's write: the row as the
// claim read it. Under the claim's row lock it always holds on one server;
// on a Galera cluster, where a read can miss a commit of another node, it
// makes a sale on a stale read write nothing (service.ErrConflict) instead
// of overwriting that commit.
const claimedStock = "id = ? AND stock <=> ? AND fence = ?"

// writeClaimedSQL is the one write of a claimed row: its stock and the
// lock's token as its fence, if the row is still as the claim read it
// (arguments: stock, fence, then the row's id, stock and fence as read).
const writeClaimedSQL = "UPDATE goods_stock SET stock = ?, fence = ? WHERE " + claimedStock + inTxOnly

// appendWriteClaimed appends the UPDATE of writeBatch for claimed rows. On
// a cluster each goods row is written only if it is still as the claim read
// it (claimedStock, for every row at once); on one server the claim's row
// locks make that so. Either way a row's stock is what the claim read, so
// the UPDATE takes from it what the batch sold (stock - n) rather than
// naming each row's new stock: a batch mostly sells one piece of each of
// its goods, or the same few of each, so that is one IN list per amount
// taken, not a CASE that MariaDB compares every row's id with one WHEN after
// another (65 rows: 60-90 us of the server's CPU less on this machine). The
// UPDATE names the primary key: on a small table the optimizer would
// otherwise scan, and lock, every row. Integers only, formatted here: no
// placeholder to interpolate.
func (s *Store) appendWriteClaimed(q []byte, writes []stockWrite, fence int64) []byte {
	// The rows by the amount taken from them, in the order the amounts
	// first come; the most common amount last: it is the CASE's ELSE.
	var amounts []int64
	rows := map[int64][]uint32{}
	for _, w := range writes {
		n := int64(*w.read.Stock) - int64(w.stock)
		if rows[n] == nil {
			amounts = append(amounts, n)
		}
		rows[n] = append(rows[n], w.read.ID)
	}
	slices.SortStableFunc(amounts, func(a, b int64) int { return len(rows[a]) - len(rows[b]) })
	q = append(q, "UPDATE goods_stock FORCE INDEX (PRIMARY) SET stock = stock - "...)
	last := amounts[len(amounts)-1]
	if len(amounts) > 1 {
		q = append(q, "CASE"...)
		for _, n := range amounts[:len(amounts)-1] {
			q = append(q, " WHEN id IN ("...)
			q = appendList(q, rows[n])
			q = append(q, ") THEN "...)
			q = strconv.AppendInt(q, n, 10)
		}
		q = append(q, " ELSE "...)
	}
	q = strconv.AppendInt(q, last, 10)
	if len(amounts) > 1 {
		q = append(q, " END"...)
	}
	q = append(q, ", fence = "...)
	q = strconv.AppendInt(q, fence, 10)
	q = append(q, " WHERE id IN ("...)
	for i, w := range writes {
		if i > 0 {
			q = append(q, ',')
		}
		q = strconv.AppendUint(q, uint64(w.read.ID), 10)
	}
	q = append(q, ')')
	if s.cluster {
		// A claimed row's stock is never NULL here: a goods without stock
		// sells nothing.
		q = append(q, " AND (id, stock, fence) IN ("...)
		for i, w := range writes {
			if i > 0 {
				q = append(q, ',')
			}
			q = append(q, '(')
			q = strconv.AppendUint(q, uint64(w.read.ID), 10)
			q = append(q, ',')
			q = strconv.AppendInt(q, int64(*w.read.Stock), 10)
			q = append(q, ',')
			q = strconv.AppendInt(q, w.read.Fence, 10)
			q = append(q, ')')
		}
		q = append(q, ')')
	}
	return append(q, inTxOnly...)
}

// takeOneSQL is the atomic purchase's decrement: the first row of the
// goods, if it has stock and its sale window is open at the time given
// twice (arguments: the goods, the time, the time).
const takeOneSQL = "UPDATE goods_stock SET stock = stock - 1 WHERE goods_no = ? AND stock > 0 " +
	"AND (sale_start IS NULL OR sale_start <= ?) AND (sale_end IS NULL OR sale_end > ?)" + inTxOnly + " ORDER BY id LIMIT 1"

// setStockSQL is the purchase without a lock's write: the stock it worked
// out from its read, whatever the row holds by now (arguments: the stock,
// the row's id).
const setStockSQL = "UPDATE goods_stock SET stock = ? WHERE id = ?" + inTxOnly

// appendTake appends the statement that takes n pieces from row id into a
// lease (a grant). Integers only, formatted here.
func appendTake(q []byte, id uint32, n int32) []byte {
	q = append(q, "UPDATE goods_stock SET stock = stock - "...)
	q = strconv.AppendInt(q, int64(n), 10)
	q = append(q, " WHERE id = "...)
	q = strconv.AppendUint(q, uint64(id), 10)
	return append(q, inTxOnly...)
}

// appendPutBack appends the statement that puts n pieces of goodsNo back
// into its first row, the row a purchase sells from. Integers only,
// formatted here.
func appendPutBack(q []byte, goodsNo int32, n int32) []byte {
	q = append(q, "UPDATE goods_stock SET stock = stock + "...)
	q = strconv.AppendInt(q, int64(n), 10)
	q = append(q, " WHERE goods_no = "...)
	q = strconv.AppendInt(q, int64(goodsNo), 10)
	return append(q, inTxOnly+" ORDER BY id LIMIT 1"...)
}
