package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// A sale of many goods: which goods each request buys, and what each goods
// did.

// picker chooses the goods of request i: uniformly, or with a Zipf skew
// where the first goods of the set is the hottest (rank k is chosen with a
// weight of 1/k^s). The choice of request i depends only on the seed and i,
// so that a run can be repeated.
type picker struct {
	goods []int32
	cdf   []float64 // nil: uniform
	seed  uint64
}

// parseSkew reads --skew: "uniform" or "zipf:S" with S > 0.
func newPicker(goods []int32, skew string, seed uint64) (*picker, error) {
	p := &picker{goods: goods, seed: seed}
	switch {
	case skew == "" || skew == "uniform":
		return p, nil
	case strings.HasPrefix(skew, "zipf:"):
		s, err := strconv.ParseFloat(strings.TrimPrefix(skew, "zipf:"), 64)
		if err != nil || !(s > 0) || s > 10 {
			return nil, fmt.Errorf("--skew %q: zipf's exponent must be a number in (0, 10], such as zipf:1.1", skew)
		}
		p.cdf = make([]float64, len(goods))
		var sum float64
		for k := range goods {
			sum += 1 / math.Pow(float64(k+1), s)
			p.cdf[k] = sum
		}
		for k := range p.cdf {
			p.cdf[k] /= sum
		}
		return p, nil
	default:
		return nil, fmt.Errorf("--skew %q: want uniform or zipf:S (such as zipf:1.1)", skew)
	}
}

// index is the position in the set of request i's goods.
func (p *picker) index(i int) int {
	if len(p.goods) == 1 {
		return 0
	}
	r := rand.New(rand.NewPCG(p.seed, uint64(i)))
	if p.cdf == nil {
		return r.IntN(len(p.goods))
	}
	u := r.Float64()
	return min(sort.SearchFloat64s(p.cdf, u), len(p.goods)-1)
}

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

// readAllGoods reads every goods of the set from base, a few at a time.
func readAllGoods(ctx context.Context, client *http.Client, base string, set []int32) ([]goods, error) {
	out := make([]goods, len(set))
	errs := make([]error, len(set))
	sem := make(chan struct{}, 8)
	var wg sync.WaitGroup
	for i, g := range set {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i], errs[i] = readGoods(ctx, client, base, int(g))
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

// worstGoods is the goods oversold most (the first such), for the table.
func (r *Result) worstGoods() (GoodsResult, bool) {
	if len(r.PerGoods) == 0 {
		return GoodsResult{}, false
	}
	return slices.MaxFunc(r.PerGoods, func(a, b GoodsResult) int { return a.Oversold - b.Oversold }), true
}

// soldOutGoods counts the goods left with no stock.
func (r *Result) soldOutGoods() int {
	n := 0
	for _, g := range r.PerGoods {
		if g.StockAfter <= 0 {
			n++
		}
	}
	return n
}
