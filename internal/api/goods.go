package api

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxGoodsSet is the most goods one set may name: a sale of many goods is
// hundreds or thousands of them; a typo such as 1-2000000000 is refused
// instead of filling the memory.
const MaxGoodsSet = 100_000

// ParseGoodsSet reads a set of goods numbers the way the tools spell it:
// a number ("7"), a range ("1-200"), or a comma-separated list of both
// ("1-10,42,100-110"). The numbers are what the shop's path takes:
// positive 32-bit integers. The result is in the order written, without
// repeats.
func ParseGoodsSet(s string) ([]int32, error) { return ParseGoodsSetMax(s, MaxGoodsSet) }

// ParseGoodsSetMax is ParseGoodsSet with another bound on the number of
// goods.
func ParseGoodsSetMax(s string, maxGoods int) ([]int32, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("no goods: want a number, a range such as 1-200, or a list of them")
	}
	var out []int32
	seen := map[int32]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		from, err := goodsNumber(lo, part)
		if err != nil {
			return nil, err
		}
		to := from
		if isRange {
			if to, err = goodsNumber(hi, part); err != nil {
				return nil, err
			}
			if to < from {
				return nil, fmt.Errorf("goods range %q runs backwards", part)
			}
		}
		if int64(len(out))+int64(to)-int64(from)+1 > int64(maxGoods) {
			return nil, fmt.Errorf("goods %q: more than %d goods in one set", s, maxGoods)
		}
		for g := int64(from); g <= int64(to); g++ {
			if !seen[int32(g)] {
				seen[int32(g)] = true
				out = append(out, int32(g))
			}
		}
	}
	return out, nil
}

func goodsNumber(s, part string) (int32, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n < 1 || n > math.MaxInt32 {
		return 0, fmt.Errorf("goods %q: want positive 32-bit numbers such as 7 or 1-200", part)
	}
	return int32(n), nil
}
