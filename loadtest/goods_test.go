package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/loadgen"
)

// manyGoodsShop is a fake shop of several goods; oversell makes it sell one
// goods (oversellGoods) without taking its stock down, as an unlocked shop
// would, so that only that goods is oversold.
type manyGoodsShop struct {
	mu            sync.Mutex
	stock, orders map[int]int
	requestIDs    map[string]bool
	oversellGoods int
}

func (f *manyGoodsShop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path, g := r.URL.Path, 0
	if i := strings.LastIndexByte(path, '/'); i >= 0 {
		g, _ = strconv.Atoi(path[i+1:])
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.stock[g]; !ok {
		http.NotFound(w, r)
		return
	}
	switch {
	case strings.HasPrefix(path, "/goods/"):
		fmt.Fprintf(w, `{"code":"ok","stock":%d,"orders":%d}`, f.stock[g], f.orders[g])
	case strings.HasPrefix(path, "/goods-stock/"):
		if id := r.Header.Get("X-Request-ID"); id != "" {
			if f.requestIDs[id] {
				w.WriteHeader(http.StatusConflict)
				fmt.Fprint(w, `{"code":"request_id_conflict"}`)
				return
			}
			f.requestIDs[id] = true
		}
		if f.stock[g] < 1 {
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"code":"sold_out"}`)
			return
		}
		if g != f.oversellGoods {
			f.stock[g]--
		}
		f.orders[g]++
		fmt.Fprint(w, `{"code":"ok"}`)
	}
}

func newManyGoodsShop(goods, stock, oversell int) *manyGoodsShop {
	f := &manyGoodsShop{stock: map[int]int{}, orders: map[int]int{}, requestIDs: map[string]bool{}, oversellGoods: oversell}
	for g := 1; g <= goods; g++ {
		f.stock[g] = stock
	}
	return f
}

func TestRunOverManyGoodsChecksEachGoods(t *testing.T) {
	for _, c := range []struct {
		name     string
		skew     string
		oversell int
	}{
		{"uniform, exact", "uniform", 0},
		{"zipf, exact", "zipf:1.1", 0},
		{"zipf, one goods oversold", "zipf:1.1", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			shop := newManyGoodsShop(20, 5, c.oversell)
			srv := httptest.NewServer(shop)
			defer srv.Close()
			set := make([]int32, 20)
			for i := range set {
				set[i] = int32(i + 1)
			}
			r, err := loadgen.Run(context.Background(), loadgen.RunOptions{
				Label: "many", Targets: []string{srv.URL}, Goods: set, Skew: c.skew, Seed: 7, RequestIDs: "t",
				Requests: 400, Concurrency: 20, Timeout: 10 * time.Second, MaxDuration: time.Minute, Sample: time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.PerGoods) != 20 || r.StockBefore != 100 || r.ByCode["request_id_conflict"] != 0 {
				t.Fatalf("per goods %d, stock before %d, by code %v", len(r.PerGoods), r.StockBefore, r.ByCode)
			}
			sum := 0
			for _, g := range r.PerGoods {
				sum += g.Requests
				if g.Succeeded != shop.orders[int(g.GoodsNo)] {
					t.Fatalf("goods %d: %d successes counted, the shop made %d orders", g.GoodsNo, g.Succeeded, shop.orders[int(g.GoodsNo)])
				}
			}
			if sum != 400 {
				t.Fatalf("requests per goods add up to %d", sum)
			}
			hot, cold := r.PerGoods[0].Requests, r.PerGoods[19].Requests
			if c.skew == "uniform" && (hot > 3*cold || cold > 3*hot) || c.skew != "uniform" && hot < 5*cold {
				t.Fatalf("%s: the first goods had %d requests, the last %d", c.skew, hot, cold)
			}
			problems := r.Problems()
			if c.oversell == 0 && c.skew == "uniform" && len(problems) != 0 {
				t.Fatalf("exact sale reported %v", problems)
			}
			if c.oversell != 0 {
				if w, _ := r.WorstGoods(); w.GoodsNo != int32(c.oversell) || w.Oversold <= 0 {
					t.Fatalf("worst goods %+v", w)
				}
				if len(problems) == 0 || !strings.Contains(strings.Join(problems, ";"), fmt.Sprintf("goods %d oversold", c.oversell)) {
					t.Fatalf("the oversold goods is not named: %v", problems)
				}
			}
			var b strings.Builder
			if err := writeTable(&b, r); err != nil || !strings.Contains(b.String(), "20 ("+c.skew+")") {
				t.Fatalf("table %v:\n%s", err, b.String())
			}
		})
	}
}
