package service

import (
	"context"
	"fmt"
)

// CatalogStore is what the catalog needs of the database.
type CatalogStore interface {
	// ListGoods reads up to limit goods' rows with goods numbers above
	// after, in goods number order.
	ListGoods(ctx context.Context, after int32, limit int) ([]Goods, error)
}

// Catalog lists the goods on sale, a page at a time (GET /goods).
type Catalog struct{ store CatalogStore }

// NewCatalog returns the catalog of store.
func NewCatalog(store CatalogStore) *Catalog { return &Catalog{store: store} }

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
func (c *Catalog) List(ctx context.Context, after int32, limit int) (goods []Goods, next int32, err error) {
	if limit == 0 {
		limit = DefaultPage
	}
	if after < 0 || limit < 1 || limit > MaxPage {
		return nil, 0, ErrInvalidPage
	}
	goods, err = c.store.ListGoods(ctx, after, limit)
	if err != nil {
		return nil, 0, err
	}
	if len(goods) == limit {
		next = goods[len(goods)-1].GoodsNo
	}
	return goods, next, nil
}
