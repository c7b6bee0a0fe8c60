// Package crowd spreads a load's buyers over a set of goods the way a real
// sale's crowd spreads: uniformly, or with a Zipf skew where a few goods
// draw most buyers. The load tester and the benchmarks share it.
package crowd

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
)

// Picker chooses the goods of buyer i: uniformly, or with a Zipf skew where
// the first goods of the set is the hottest (rank k is chosen with a weight
// of 1/k^s). The choice of buyer i depends only on the seed and i, so that
// a run can be repeated.
type Picker struct {
	goods []int32
	cdf   []float64 // nil: uniform
	seed  uint64
}

// NewPicker returns the picker of skew over goods: "uniform" (or empty) or
// "zipf:S" with S in (0, 10].
func NewPicker(goods []int32, skew string, seed uint64) (*Picker, error) {
	if len(goods) == 0 {
		return nil, fmt.Errorf("no goods to spread buyers over")
	}
	p := &Picker{goods: goods, seed: seed}
	switch {
	case skew == "" || skew == "uniform":
		return p, nil
	case strings.HasPrefix(skew, "zipf:"):
		s, err := strconv.ParseFloat(strings.TrimPrefix(skew, "zipf:"), 64)
		if err != nil || !(s > 0) || s > 10 {
			return nil, fmt.Errorf("skew %q: zipf's exponent must be a number in (0, 10], such as zipf:1.1", skew)
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
		return nil, fmt.Errorf("skew %q: want uniform or zipf:S (such as zipf:1.1)", skew)
	}
}

// Index is the position in the set of buyer i's goods.
func (p *Picker) Index(i int) int {
	if len(p.goods) == 1 {
		return 0
	}
	r := rand.New(rand.NewPCG(p.seed, uint64(i)))
	if p.cdf == nil {
		return r.IntN(len(p.goods))
	}
	return min(sort.SearchFloat64s(p.cdf, r.Float64()), len(p.goods)-1)
}

// Goods is buyer i's goods.
func (p *Picker) Goods(i int) int32 { return p.goods[p.Index(i)] }
