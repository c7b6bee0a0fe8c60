package service

import (
	"context"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// The orders of a goods whose sale is closed to new buyers (sold out, not
// started, ended), read once per KnownFor and shared by the buyers refused
// meanwhile: what a refused buyer holds (its order under the one-per-buyer
// rule, or its request id's order, to replay) is looked up in memory
// instead of by a query per buyer. After a sell-out of 1 000 pieces the
// crowd that follows costs one read of 1 000 rows a second, not a query
// per buyer (measured in make bench-shop (k): about one statement per
// sold-out answer before, with buyers who gave an id). A goods with more
// than goodsOrdersMax orders is not kept: its refused buyers are looked up
// one by one, as before.

// goodsOrdersMax bounds the orders kept of one goods.
const goodsOrdersMax = 100_000

// goodsOrdersGoods bounds the goods whose orders are kept.
const goodsOrdersGoods = 64

// goodsOrders is a goods' orders as one read found them.
type goodsOrders struct {
	byKey   map[RequestKey]Order
	byBuyer map[string]Order // the orders that count under the one-per-buyer rule
	read    time.Time
}

// orderIndex keeps goodsOrders of the goods refused buyers ask for.
type orderIndex struct {
	ttl   time.Duration
	reads singleflight.Group

	mu sync.Mutex
	m  map[int32]*goodsOrders
}

func newOrderIndex(ttl time.Duration) *orderIndex {
	return &orderIndex{ttl: ttl, m: map[int32]*goodsOrders{}}
}

// OrdersOfGoodsStore is what the index reads: a goods' orders, at most
// limit (complete false when there are more).
type OrdersOfGoodsStore interface {
	OrdersOfGoods(ctx context.Context, goodsNo int32, limit int) (orders []Order, complete bool, err error)
}

// of is goodsNo's orders read within ttl, reading them if need be (one
// read per goods at a time, shared); false when the store cannot say (it
// has no such read, fails, or the goods has too many orders).
func (x *orderIndex) of(ctx context.Context, store Store, goodsNo int32) (*goodsOrders, bool) {
	if x == nil || x.ttl <= 0 {
		return nil, false
	}
	st, ok := store.(OrdersOfGoodsStore)
	if !ok {
		return nil, false
	}
	x.mu.Lock()
	g := x.m[goodsNo]
	x.mu.Unlock()
	if g != nil && time.Since(g.read) < x.ttl {
		return g, true
	}
	ch := x.reads.DoChan(strconv.Itoa(int(goodsNo)), func() (any, error) {
		began := time.Now()
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
		defer cancel()
		orders, complete, err := st.OrdersOfGoods(rctx, goodsNo, goodsOrdersMax)
		if err != nil || !complete {
			return (*goodsOrders)(nil), err
		}
		g := &goodsOrders{byKey: make(map[RequestKey]Order, len(orders)), byBuyer: map[string]Order{}, read: began}
		for _, o := range orders {
			g.byKey[o.Key()] = o
			if o.OnePerBuyer && o.UserID != "" && o.Status != OrderExpired {
				g.byBuyer[o.UserID] = o
			}
		}
		x.mu.Lock()
		if len(x.m) >= goodsOrdersGoods {
			clear(x.m)
		}
		x.m[goodsNo] = g
		x.mu.Unlock()
		return g, nil
	})
	select {
	case r := <-ch:
		g, _ := r.Val.(*goodsOrders)
		return g, r.Err == nil && g != nil
	case <-ctx.Done():
		return nil, false
	}
}
