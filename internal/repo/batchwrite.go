package repo

// The writing half of a batch sale (the service decides who buys, in
// service/salerun.go, and batchSale hands the buyers over): the orders'
// INSERT and the stock's UPDATE in one packet, the ids read back, and the
// orders a claim that came after its INSERT dropped again.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/seckill-zk/seckill-zk/internal/service"
)

// stockWrite is a claimed row's new stock.
type stockWrite struct {
	read  goodsStock
	stock int32
}

// writeBatch writes, in one packet, the orders' rows (one multi-row
// INSERT, first: see inTxOnly) and what the batch took from its stock
// (stock.write: the claimed goods rows' new stocks with the token as their
// fence, or the lease's row), and sets the rows' ids.
//
// The ids come back with RETURNING on MariaDB 10.5 and later; elsewhere
// (MySQL) they are LAST_INSERT_ID(), the first row's, and the ones after it
// by @@auto_increment_increment, as a multi-row INSERT of known length
// takes them.
func (s *Store) writeBatch(ctx context.Context, t *tx, stock batchRows, writes []stockWrite, rows []orderInfo) error {
	q := make([]byte, 0, 256+40*len(writes)+24*len(rows))
	q, args := s.appendInsert(q, make([]any, 0, 2+6*len(rows)), rows)
	q = append(q, "; "...)
	q, args = stock.write(q, args, writes)
	q = append(q, rowCountSQL...)
	res, err := t.query(ctx, string(q), args...)
	if err != nil {
		return err
	}
	defer res.Close()
	if err := s.scanIDs(res, rows); err != nil {
		return err
	}
	if !res.NextResultSet() { // the stock's write's error, if it failed
		return errors.Join(errors.New("repo: no answer to the batch's stock write"), res.Err())
	}
	updated, err := rowCountInTx(res, "UPDATE")
	if err != nil {
		return err
	}
	if err := stock.wrote(updated, writes); err != nil {
		return err
	}
	return res.Close()
}

// appendInsert appends the multi-row INSERT of rows, and what tells their
// ids (see writeBatch), with its arguments: without the columns left to
// their defaults when every row is a new order without a buyer.
func (s *Store) appendInsert(q []byte, args []any, rows []orderInfo) ([]byte, []any) {
	plain := true
	for i := range rows {
		plain = plain && rows[i].isPlainNew()
	}
	stmt, values, appendArgs := insertOrderSQL, orderValuesSQL, (*orderInfo).appendInsertArgs
	if plain {
		stmt, values, appendArgs = insertNewSQL, newValuesSQL, (*orderInfo).appendNewArgs
	}
	q = append(q, stmt...)
	for i := range rows {
		if i > 0 {
			q = append(q, ", "...)
		}
		q = append(q, values...)
		args = appendArgs(&rows[i], args)
	}
	if s.returning {
		q = append(q, " RETURNING id"...)
	} else {
		q = append(q, "; SELECT LAST_INSERT_ID(), @@auto_increment_increment"...)
	}
	return q, args
}

// readIDs sets the ids of rows from the result set of appendInsert's
// statement, res's current one, and closes res.
func (s *Store) readIDs(res *sql.Rows, rows []orderInfo) error {
	if err := s.scanIDs(res, rows); err != nil {
		return err
	}
	return res.Close()
}

// scanIDs is readIDs without the close: res is then past the INSERT's
// answer.
func (s *Store) scanIDs(res *sql.Rows, rows []orderInfo) error {
	if s.returning {
		for i := range rows {
			if !res.Next() {
				return errors.Join(fmt.Errorf("repo: the batch's INSERT returned %d ids of %d", i, len(rows)), res.Err())
			}
			if err := res.Scan(&rows[i].ID); err != nil {
				return err
			}
		}
		return nil
	}
	var first, step uint64
	if !res.Next() {
		return errors.Join(errors.New("repo: no answer to the batch's LAST_INSERT_ID"), res.Err())
	}
	if err := res.Scan(&first, &step); err != nil {
		return err
	}
	for i := range rows {
		rows[i].ID = first + uint64(i)*step
	}
	return nil
}

// insertAndClaim inserts rows, a batch's orders before its claim (see
// BeginBatch), sets their ids, and claims goodsNos as claimGoods does; the
// INSERT and the claim go in one packet, one round trip.
func (s *Store) insertAndClaim(ctx context.Context, t *tx, rows []orderInfo, goodsNos []int32, fence int64) (map[int32]goodsStock, error) {
	q, args := s.appendInsert(make([]byte, 0, 256+24*len(rows)+12*len(goodsNos)), make([]any, 0, 1+6*len(rows)), rows)
	q = append(q, "; "...)
	var ids []uint32
	if len(goodsNos) == 1 {
		q = append(q, claimSQL...)
		args = append(args, goodsNos[0])
	} else {
		var stmt string
		stmt, ids = s.lockGoodsSQL(goodsNos)
		q = append(q, stmt...)
	}
	res, err := t.query(ctx, string(q), args...)
	if err != nil {
		return nil, err
	}
	defer res.Close()
	if err := s.scanIDs(res, rows); err != nil {
		return nil, err
	}
	if !res.NextResultSet() { // the claim's error, if it failed
		return nil, errors.Join(errors.New("repo: no answer to the batch's claim"), res.Err())
	}
	if len(goodsNos) == 1 {
		read, err := readClaim(res, fence)
		return claimedOne(goodsNos[0], read, err)
	}
	claimed, err := s.lockedGoods(ctx, t, res, goodsNos, ids)
	if err != nil {
		return nil, err
	}
	return fenceChecked(claimed, fence)
}

// writeStock is writeBatch for a batch whose orders went in first: in one
// packet, the INSERT of the rows of late buyers sold to (late, which get
// their ids; first, see inTxOnly), the DELETE of the rows of the orders not
// sold to (drop, their ids), what the batch took from its stock (writes),
// and if fold the COMMIT (see foldsCommit); then checks that each was made
// in the transaction.
func (s *Store) writeStock(ctx context.Context, t *tx, stock batchRows, writes []stockWrite, drop []uint64, late []orderInfo, fold bool) error {
	if len(writes) == 0 { // late buyers are sold to only with a goods' write
		if len(drop) == 0 {
			return nil
		}
		late = nil
	}
	q := make([]byte, 0, 256+40*len(writes)+12*len(drop)+24*len(late))
	var args []any
	if len(late) > 0 { // first: see inTxOnly
		q, args = s.appendInsert(q, args, late)
		q = append(q, "; "...)
	}
	if len(drop) > 0 {
		q = append(q, "DELETE FROM order_info WHERE id IN ("...)
		for i, id := range drop {
			if i > 0 {
				q = append(q, ", "...)
			}
			q = strconv.AppendUint(q, id, 10)
		}
		q = append(q, ")"+inTxOnly+rowCountSQL...)
	}
	if len(writes) > 0 {
		if len(drop) > 0 {
			q = append(q, "; "...)
		}
		q, args = stock.write(q, args, writes)
		q = append(q, rowCountSQL...)
	}
	if fold {
		q = t.commitIn(q)
	}
	res, err := t.query(ctx, string(q), args...)
	if err != nil {
		return err
	}
	defer res.Close()
	if len(late) > 0 {
		if err := s.scanIDs(res, late); err != nil {
			return err
		}
		if !res.NextResultSet() { // the next statement's error, if it failed
			return errors.Join(errors.New("repo: no answer after the late buyers' INSERT"), res.Err())
		}
	}
	if len(drop) > 0 {
		n, err := rowCountInTx(res, "DELETE")
		if err != nil {
			return err
		}
		if n != int64(len(drop)) {
			return fmt.Errorf("repo: the batch's DELETE of %d order rows not sold removed %d", len(drop), n)
		}
		if len(writes) > 0 && !res.NextResultSet() { // the UPDATE's error, if it failed
			return errors.Join(errors.New("repo: no answer to the batch's UPDATE"), res.Err())
		}
	}
	if len(writes) > 0 {
		n, err := rowCountInTx(res, "UPDATE")
		if err != nil {
			return err
		}
		if err := stock.wrote(n, writes); err != nil {
			return err
		}
	}
	if err := res.Close(); err != nil { // the COMMIT's error, if it failed
		return err
	}
	if fold {
		t.ended()
	}
	return nil
}

// foldsCommit reports whether a batch's COMMIT rides in the packet of its
// stock's write (tx.commitIn): on one server, where nothing that packet's
// answers say can call the commit off. The claim's row locks make the
// UPDATE write every claimed row, the DELETE finds the transaction's own
// rows, and the commit's count of its orders would always find them. Not on
// a cluster: there the UPDATE writes a row only if it is still as the claim
// read it and a transaction can end unawares (see abortedUnawares), which
// the answers are read for before the COMMIT goes out, and the commit is
// counted (tx.commit).
func (s *Store) foldsCommit() bool { return !s.cluster }

// rowCountSQL follows a write in a packet: the rows it changed, and
// whether the transaction was still open (rowCountInTx reads it).
const rowCountSQL = "; SELECT ROW_COUNT(), @@in_transaction"

// rowCountInTx reads the answer of rowCountSQL sent after a write (what:
// a batch's DELETE or UPDATE, a lease's write or close): the rows it
// changed, or abortedUnawares when the server had ended the transaction
// meanwhile.
func rowCountInTx(res *sql.Rows, what string) (int64, error) {
	var n int64
	var inTxn bool
	if !res.Next() {
		return 0, errors.Join(fmt.Errorf("repo: no answer to the batch's %s", what), res.Err())
	}
	if err := res.Scan(&n, &inTxn); err != nil {
		return 0, err
	}
	if !inTxn {
		return 0, abortedUnawares()
	}
	return n, nil
}

// keptRows are the rows of the orders chosen, in chosen's order, of those
// inserted for orders (in theirs); drop the ids of the others; fresh the
// places in rows of the chosen orders that are not among orders (late
// buyers, whose rows are still to be inserted).
func keptRows(orders []*service.Order, inserted []orderInfo, chosen []*service.Order) (rows []orderInfo, drop []uint64, fresh []int) {
	at := make(map[*service.Order]int, len(orders))
	for i, o := range orders {
		at[o] = i
	}
	kept := make([]bool, len(orders))
	rows = make([]orderInfo, len(chosen))
	for i, o := range chosen {
		j, ok := at[o]
		if !ok {
			fresh = append(fresh, i)
			continue
		}
		rows[i] = inserted[j]
		kept[j] = true
	}
	for i := range orders {
		if !kept[i] {
			drop = append(drop, inserted[i].ID)
		}
	}
	return rows, drop, fresh
}
