package handler

import (
	"math"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/seckill-zk/seckill-zk/internal/api"
)

// The goods' routes: GET /goods/{goodsNo} and GET /goods.

// goods is GET /goods/{goodsNo}: the stock, read fresh, the order counts
// (at most a second old, and how old) and the sale window.
func (h *handler) goods(c *gin.Context) {
	goodsNo, err := ParseGoodsNo(c.Param("goodsNo"))
	if err != nil {
		h.fail(c, 0, err)
		return
	}
	g, err := h.shop.Stock(c.Request.Context(), goodsNo)
	if err != nil {
		h.fail(c, goodsNo, err)
		return
	}
	active, age := g.IsActive != 0, ageMs(g.CountedAt)
	answer(c, http.StatusOK, Response{Code: api.OK, Message: "ok", GoodsNo: goodsNo, Stock: &g.Stock, IsActive: &active, Orders: &g.Orders,
		OrdersByStatus: g.OrdersByStatus, OrdersAgeMs: &age, SaleStart: utc(g.SaleStart), SaleEnd: utc(g.SaleEnd)})
}

// listGoods is GET /goods?after=N&limit=M: a page of the goods on sale, in
// goods number order; "next" is the after of the next page.
func (h *handler) listGoods(c *gin.Context) {
	after, limit := int64(0), int64(0)
	q := c.Request.URL.Query()
	// One spelling per number and each at most once: a page named two
	// ways, or twice, is a client's mistake to hear about (-1: refused
	// below, by the catalog, as an invalid page).
	if v, ok := q["after"]; ok {
		if n, ok := api.Canonical(v[0], math.MaxInt32); ok && len(v) == 1 {
			after = n
		} else {
			after = -1
		}
	}
	if v, ok := q["limit"]; ok {
		if n, ok := api.Canonical(v[0], math.MaxInt32); ok && len(v) == 1 && n > 0 {
			limit = n
		} else {
			limit = -1
		}
	}
	goods, next, err := h.catalog.List(c.Request.Context(), int32(after), int(limit))
	if err != nil {
		h.fail(c, 0, err)
		return
	}
	items := make([]GoodsItem, len(goods))
	for i, g := range goods {
		items[i] = GoodsItem{GoodsNo: g.GoodsNo, Stock: g.Stock, IsActive: g.IsActive != 0, SaleStart: utc(g.SaleStart), SaleEnd: utc(g.SaleEnd),
			OrdersByStatus: g.OrdersByStatus, OrdersAgeMs: ageMs(g.CountedAt)}
	}
	answer(c, http.StatusOK, Response{Code: api.OK, Message: "ok", Goods: items, Next: next})
}

// ageMs is how many milliseconds ago t was (0 for a time to come).
func ageMs(t time.Time) int64 { return max(0, time.Since(t).Milliseconds()) }

// utc is t in UTC, or nil.
func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
