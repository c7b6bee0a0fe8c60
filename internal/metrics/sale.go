package metrics

import (
	"maps"
	"slices"
	"time"
)

// A sale of many goods, as the dashboard shows it: the totals across goods
// (sampled from the database), this instance's answers across goods, and
// the goods its buyers crowd most.

// MaxDemand bounds the goods whose purchases are counted between two
// samples; the goods beyond it in one second go uncounted (the hottest are
// among the first to come).
const MaxDemand = 10_000

// saleState is the part of Metrics that spans goods; guarded by Metrics.mu.
type saleState struct {
	totals     map[string]int64 // every answer of this instance, by outcome
	demand     map[int32]int64  // purchases per goods since the last TakeDemand
	demandFrom time.Time
	sample     SaleSample
}

// SaleSample is a sale across goods: the goods' rows, how many of them are
// sold out and the pieces left (the database's, the same from every
// instance), and the goods this instance's buyers crowd most.
type SaleSample struct {
	Sampled   bool       `json:"sampled"`
	Goods     int64      `json:"goods"`
	SoldOut   int64      `json:"soldOut"`
	StockLeft int64      `json:"stockLeft"`
	Hottest   []HotGoods `json:"hottest"`
}

// HotGoods is a goods its buyers crowd: this instance's purchases of it per
// second over the last sample, and its stock.
type HotGoods struct {
	GoodsNo int32   `json:"goodsNo"`
	Rate    float64 `json:"purchasesPerSecond"`
	Stock   int32   `json:"stock"`
}

// countSale records an answer across goods (Purchased, under m.mu); goods
// is 0 for an answer about no goods.
func (m *Metrics) countSale(goodsNo int32, outcome string) {
	if m.sale.totals == nil {
		m.sale.totals, m.sale.demand, m.sale.demandFrom = map[string]int64{}, map[int32]int64{}, time.Now()
	}
	m.sale.totals[outcome]++
	if goodsNo <= 0 {
		return
	}
	if _, ok := m.sale.demand[goodsNo]; ok || len(m.sale.demand) < MaxDemand {
		m.sale.demand[goodsNo]++
	}
}

// TakeDemand returns the n goods purchased most since the last call, with
// their rates (Stock unset), and starts counting anew.
func (m *Metrics) TakeDemand(n int) []HotGoods {
	now := time.Now()
	m.mu.Lock()
	demand, from := m.sale.demand, m.sale.demandFrom
	m.sale.demand, m.sale.demandFrom = map[int32]int64{}, now
	m.mu.Unlock()
	secs := now.Sub(from).Seconds()
	if len(demand) == 0 || secs <= 0 {
		return nil
	}
	hot := make([]HotGoods, 0, len(demand))
	for g, c := range demand {
		hot = append(hot, HotGoods{GoodsNo: g, Rate: float64(c) / secs})
	}
	slices.SortFunc(hot, func(a, b HotGoods) int {
		if a.Rate != b.Rate {
			if a.Rate > b.Rate {
				return -1
			}
			return 1
		}
		return int(a.GoodsNo - b.GoodsNo)
	})
	return hot[:min(n, len(hot))]
}

// SampledSale records the sale across goods as last sampled.
func (m *Metrics) SampledSale(s SaleSample) {
	s.Sampled = true
	m.mu.Lock()
	m.sale.sample = s
	m.mu.Unlock()
}

// saleSnapshot is the sale across goods and this instance's answers across
// goods (under m.mu).
func (m *Metrics) saleSnapshot() (SaleSample, map[string]int64) {
	totals := maps.Clone(m.sale.totals)
	if totals == nil {
		totals = map[string]int64{}
	}
	s := m.sale.sample
	s.Hottest = slices.Clone(s.Hottest)
	return s, totals
}
