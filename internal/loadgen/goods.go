package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// A sale of many goods: which goods each request buys, and what each goods
// did.

// GoodsResult is what one goods of the run did.
type GoodsResult struct {
	GoodsNo       int32 `json:"goodsNo"`
	Requests      int   `json:"requests"` // purchases sent for it
	Succeeded     int   `json:"succeeded"`
	StockBefore   int   `json:"stockBefore"`
	StockAfter    int   `json:"stockAfter"`
	OrdersCreated int   `json:"ordersCreated"`
	Expired       int   `json:"expired"`
	Oversold      int   `json:"oversold"`
}

// readAllGoods reads every goods of the set from base, a few at a time,
// each counted at since or later (see readGoods).
func readAllGoods(ctx context.Context, client *http.Client, base string, set []int32, since time.Time) ([]goods, error) {
	out := make([]goods, len(set))
	errs := make([]error, len(set))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, g := range set {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i], errs[i] = readGoods(ctx, client, base, int(g), since)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// perGoods fills in each goods' figures and the run's totals.
func (r *Result) perGoods(set []int32, before, after []goods, requests, succeeded []int) {
	r.PerGoods = make([]GoodsResult, len(set))
	r.StockBefore, r.StockAfter, r.OrdersBefore, r.OrdersAfter, r.ExpiredBefore, r.ExpiredAfter = 0, 0, 0, 0, 0, 0
	for i, g := range set {
		b, a := before[i], after[i]
		gr := GoodsResult{
			GoodsNo: g, Requests: requests[i], Succeeded: succeeded[i],
			StockBefore: *b.Stock, StockAfter: *a.Stock,
			OrdersCreated: *a.Orders - *b.Orders,
			Expired:       a.OrdersByStatus["expired"] - b.OrdersByStatus["expired"],
		}
		gr.Oversold = oversold(gr.Succeeded, gr.StockBefore, gr.StockAfter, gr.Expired)
		r.PerGoods[i] = gr
		r.StockBefore += *b.Stock
		r.StockAfter += *a.Stock
		r.OrdersBefore += *b.Orders
		r.OrdersAfter += *a.Orders
		r.ExpiredBefore += b.OrdersByStatus["expired"]
		r.ExpiredAfter += a.OrdersByStatus["expired"]
	}
}

// goodsProblems lists the goods whose sale was not exact: oversold, or
// successes without their order rows. (A goods whose stock was left while
// its buyers were enough is the caller's check.)
func (r *Result) goodsProblems() []string {
	var p []string
	bad := 0
	for _, g := range r.PerGoods {
		var why []string
		if g.Oversold != 0 {
			why = append(why, fmt.Sprintf("oversold %d", g.Oversold))
		}
		if g.OrdersCreated != g.Succeeded {
			why = append(why, fmt.Sprintf("%d order rows for %d successes", g.OrdersCreated, g.Succeeded))
		}
		if r.Buyers == 0 && g.Requests >= g.StockBefore && g.StockAfter != 0 && len(r.PerGoods) > 1 {
			why = append(why, fmt.Sprintf("%d left of %d after %d requests", g.StockAfter, g.StockBefore, g.Requests))
		}
		if len(why) > 0 {
			bad++
			if bad <= 5 {
				p = append(p, fmt.Sprintf("goods %d %s", g.GoodsNo, strings.Join(why, ", ")))
			}
		}
	}
	if bad > 5 {
		p = append(p, fmt.Sprintf("and %d more goods", bad-5))
	}
	return p
}

// WorstGoods is the goods oversold most (the first such), for the table.
func (r *Result) WorstGoods() (GoodsResult, bool) {
	if len(r.PerGoods) == 0 {
		return GoodsResult{}, false
	}
	return slices.MaxFunc(r.PerGoods, func(a, b GoodsResult) int { return a.Oversold - b.Oversold }), true
}

// SoldOutGoods counts the goods left with no stock.
func (r *Result) SoldOutGoods() int {
	n := 0
	for _, g := range r.PerGoods {
		if g.StockAfter <= 0 {
			n++
		}
	}
	return n
}

// readGoods reads a goods from base, its order counts counted at since or
// later: the shop answers with a count up to a second old (ordersAgeMs),
// and a count from before the run, or from before its last answer, would
// say orders are missing. It reads again until the count is fresh enough,
// within 10 s.
func readGoods(ctx context.Context, client *http.Client, base string, goodsNo int, since time.Time) (goods, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		g, err := readGoodsOnce(ctx, client, base, goodsNo)
		if err != nil {
			return goods{}, err
		}
		counted := time.Now().Add(-time.Duration(g.OrdersAgeMs) * time.Millisecond)
		if !counted.Before(since) {
			return g, nil
		}
		select {
		case <-time.After(max(50*time.Millisecond, since.Sub(counted))):
		case <-ctx.Done():
			return g, nil // as fresh as the shop would say
		}
	}
}

func readGoodsOnce(ctx context.Context, client *http.Client, base string, goodsNo int) (goods, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/goods/%d", base, goodsNo), nil)
	if err != nil {
		return goods{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return goods{}, err
	}
	defer resp.Body.Close()
	var g goods
	if err := json.NewDecoder(resp.Body).Decode(&g); err != nil {
		return goods{}, fmt.Errorf("GET %s: %s, body not JSON: %w", req.URL, resp.Status, err)
	}
	if resp.StatusCode != http.StatusOK || g.Stock == nil || g.Orders == nil {
		return goods{}, fmt.Errorf("GET %s: %s (%s)", req.URL, resp.Status, g.Code)
	}
	return g, nil
}
