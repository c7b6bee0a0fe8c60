package service

import (
	"context"
	"maps"
	"slices"
	"time"
)

// grant takes stock of the goods in want into the lease, of each
// grantSize of its row as the grant read it (locked), or what the row has
// if less. For a goods whose row that leaves empty short of what was
// wanted, the grant also reads what the other leases hold of it unsold
// (Grant.Pending).
func (a *Allot) grant(ctx context.Context, want map[int32]int32, now time.Time) (Grant, error) {
	gs, err := a.store.BeginGrant(ctx, a.lease, slices.Sorted(maps.Keys(want)))
	if err != nil {
		return Grant{}, err
	}
	take := map[int32]int32{}
	short := false
	for no, g := range gs.Goods() {
		n := min(max(g.Stock, 0), grantSize(g, want[no], now))
		if n < want[no] && g.Stock-n <= 0 {
			short = true // the row is out: other leases' stock may come back
		}
		if n > 0 {
			take[no] = n
		}
	}
	return gs.Take(ctx, a.held, take, short)
}

// grantSize is how much a grant takes of goods g, whose row has stock:
// what the batch needs, or an eighth of the row if that is more (so that
// the next batches need no grant), up to allotGrantMax. A share, not all: in
// a sell-out the other instances keep stock of their own to sell. Nothing
// while g's sale window is closed: its buyers are refused.
func grantSize(g Goods, need int32, now time.Time) int32 {
	if g.OpenAt(now) != nil {
		return 0
	}
	return max(need, min(g.Stock/allotGrantShare, allotGrantMax))
}
