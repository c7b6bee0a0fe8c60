package repo

import (
	"database/sql"
	"strconv"
	"sync"
)

// rowIDs remembers, for goods a claim of several goods found, the primary
// key of the goods' row it locked (the goods' first row by id), so that the
// next claim of those goods locks the rows by primary key instead of
// through the goods index: a sale of many goods claims some 65 rows a
// batch, and the index's lookup of each (an entry found, the next one read
// to see there is no second row, then the row) is what costs MariaDB the
// most of that claim (see lockGoods for the numbers).
//
// What it remembers can go stale: a goods' rows deleted or remade (`shop
// stock set` with other goods, a restore), its number changed. The claim by
// primary key therefore checks each row it got against the goods it was
// for, and claims by goods number whenever one does not match (see
// lockGoods). Rows are made with the table's auto-increment ids, so a goods'
// row with a smaller id than the remembered one cannot appear later; a row
// inserted with an explicit, smaller id would be a second, older row the
// claim by primary key does not see.
//
// It holds at most maxRowIDs goods: a sale of more forgets some (their next
// claim reads the index once more).
type rowIDs struct {
	mu sync.Mutex
	m  map[int32]uint32
}

// maxRowIDs bounds the goods rowIDs remembers (a few bytes each).
const maxRowIDs = 4096

// lookup returns the rows' ids of goodsNos, in their order, if it remembers
// every one of them.
func (r *rowIDs) lookup(goodsNos []int32) ([]uint32, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := make([]uint32, len(goodsNos))
	for i, no := range goodsNos {
		id, ok := r.m[no]
		if !ok {
			return nil, false
		}
		ids[i] = id
	}
	return ids, true
}

// remember records the rows a claim by goods number found.
func (r *rowIDs) remember(rows map[int32]goodsStock) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = make(map[int32]uint32, len(rows))
	}
	for no, row := range rows {
		if _, ok := r.m[no]; !ok && len(r.m) >= maxRowIDs {
			for k := range r.m { // any one
				delete(r.m, k)
				break
			}
		}
		r.m[no] = row.ID
	}
}

// forget drops what it remembers of goodsNos.
func (r *rowIDs) forget(goodsNos []int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, no := range goodsNos {
		delete(r.m, no)
	}
}

// readRows reads the answer of claimRowsSQL for the rows ids, which rowIDs
// gave for goodsNos (in their order), to the end of its result set: ok
// false, with nothing to use, when a row is gone or is now another goods'
// row.
func readRows(rows *sql.Rows, goodsNos []int32, ids []uint32) (map[int32]goodsStock, bool, error) {
	byID := make(map[uint32]goodsStock, len(ids))
	for rows.Next() {
		row, err := scanClaimed(rows)
		if err != nil {
			return nil, false, err
		}
		byID[row.ID] = row
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	out := make(map[int32]goodsStock, len(goodsNos))
	for i, no := range goodsNos {
		row, ok := byID[ids[i]]
		if !ok || row.GoodsNo != no {
			return nil, false, nil
		}
		out[no] = row
	}
	return out, true, nil
}

// appendList appends xs to q, comma separated: the integers of an IN list,
// formatted here, with no placeholder to expand.
func appendList[T int32 | uint32](q []byte, xs []T) []byte {
	for i, x := range xs {
		if i > 0 {
			q = append(q, ',')
		}
		q = strconv.AppendInt(q, int64(x), 10)
	}
	return q
}
