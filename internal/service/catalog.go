package service

import (
	"context"
	"fmt"
	"time"
)

// CatalogStore is what the catalog needs of the database.
type CatalogStore interface {
	// ListGoods reads up to limit goods' rows with goods numbers above
	// after, in goods number order.
	ListGoods(ctx context.Context, after int32, limit int) ([]Goods, error)
	// OrderCounts counts the orders of goodsNos by status.
	OrderCounts(ctx context.Context, goodsNos []int32) (map[int32]map[string]int64, error)
}

// Listed is a goods of the catalog: its row and its orders by status, as
// counted at CountedAt (at most a second before: counts.go).
type Listed struct {
	Goods
	OrdersByStatus map[string]int64
	CountedAt      time.Time
}

// Catalog lists the goods on sale, a page at a time (GET /goods).
type Catalog struct {
	store  CatalogStore
	counts *orderCounts
}

// NewCatalog returns the catalog of store.
func NewCatalog(store CatalogStore) *Catalog { return &Catalog{store: store, counts: newOrderCounts()} }

// The pages of the catalog: DefaultPage goods unless asked, at most MaxPage.
const (
	DefaultPage = 100
	MaxPage     = 1000
)

// ErrInvalidPage: a page asked for with after < 0 or limit outside
// 1..MaxPage.
var ErrInvalidPage = fmt.Errorf("service: a page of goods needs after ≥ 0 and limit 1–%d", MaxPage)

// List returns the goods after goods number after, at most limit of them
// (0: DefaultPage), in goods number order; next is the after of the next
// page, 0 when this one is the last.
func (c *Catalog) List(ctx context.Context, after int32, limit int) (page []Listed, next int32, err error) {
	if limit == 0 {
		limit = DefaultPage
	}
	if after < 0 || limit < 1 || limit > MaxPage {
		return nil, 0, ErrInvalidPage
	}
	ctx, cancel := boundRead(ctx)
	defer cancel()
	defer func() { err = readErr(ctx, err) }()
	goods, err := c.store.ListGoods(ctx, after, limit)
	if err != nil || len(goods) == 0 {
		return nil, 0, err
	}
	nos := make([]int32, len(goods))
	for i, g := range goods {
		nos[i] = g.GoodsNo
	}
	counts, err := c.counts.get(ctx, c.store, nos) // at most one read for the page
	if err != nil {
		return nil, 0, err
	}
	page = make([]Listed, len(goods))
	for i, g := range goods {
		byStatus := map[string]int64{OrderUnpaid: 0, OrderPaid: 0, OrderExpired: 0}
		for st, n := range counts[g.GoodsNo].ByStatus {
			byStatus[st] = n
		}
		page[i] = Listed{Goods: g, OrdersByStatus: byStatus, CountedAt: counts[g.GoodsNo].At}
	}
	if len(goods) == limit {
		next = goods[len(goods)-1].GoodsNo
	}
	return page, next, nil
}
