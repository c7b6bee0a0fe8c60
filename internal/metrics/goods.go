package metrics

import (
	"slices"
	"strconv"
	"time"
)

// Which goods have labels of their own (purchases give them), which the
// dashboard has sampled without one, and the purchases' counts.

// Track gives goodsNo a label of its own, if there is room; the sampler
// samples the tracked goods. It reports whether goodsNo is tracked. Only
// the shop's own settings and purchases call it (see Purchased): a reader
// of the dashboard watches (Watch) instead.
func (m *Metrics) Track(goodsNo int32) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.trackLocked(goodsNo)
}

// maxWatched bounds the goods sampled for the dashboard alone; watchFor is
// how long one stays sampled after the dashboard last asked for it.
const (
	maxWatched = 32
	watchFor   = time.Minute
)

// Watch has the sampler sample goodsNo for the dashboard, for watchFor
// after the last call, without a label: the dashboard's readers (anyone,
// no token) cannot spend the labels a sale's purchases need. A tracked
// goods is sampled already. At most maxWatched goods are watched; a goods
// not asked for in watchFor makes room. It reports whether goodsNo is
// sampled.
func (m *Metrics) Watch(goodsNo int32) bool {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if slices.Contains(m.goods, goodsNo) {
		return true
	}
	if _, ok := m.watched[goodsNo]; !ok && len(m.watched) >= maxWatched {
		for no, at := range m.watched {
			if now.Sub(at) > watchFor {
				m.forgetLocked(no)
			}
		}
		if len(m.watched) >= maxWatched {
			return false
		}
	}
	m.watched[goodsNo] = now
	return true
}

// forgetLocked stops watching goodsNo and drops what was sampled of it.
func (m *Metrics) forgetLocked(goodsNo int32) {
	delete(m.watched, goodsNo)
	delete(m.samples, goodsNo)
	delete(m.history, goodsNo)
}

func (m *Metrics) trackLocked(goodsNo int32) bool {
	if slices.Contains(m.goods, goodsNo) {
		return true
	}
	if len(m.goods) >= maxGoods {
		return false
	}
	m.goods = append(m.goods, goodsNo)
	delete(m.watched, goodsNo)
	return true
}

// Goods returns the goods to sample: the tracked goods, then those the
// dashboard watches.
func (m *Metrics) Goods() []int32 {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	goods := slices.Clone(m.goods)
	for no, at := range m.watched {
		if now.Sub(at) <= watchFor {
			goods = append(goods, no)
		}
	}
	return goods
}

// tracks are the outcomes that give an untracked goods a label of its own:
// answers that read the goods' row (it exists) for a buyer who passed
// authentication and the limits. Any other answer (refused before, busy,
// timed out) counts under "other" until the goods is tracked, so that a
// flood of purchases of goods that do not exist, or of unauthenticated
// ones, cannot take the labels (and the dashboard's samples) of a real sale.
var tracks = map[string]bool{"ok": true, "sold_out": true, "already_bought": true, "not_started": true, "ended": true}

// Purchased records an answered purchase (the handler's observer). Answers
// about goods that do not exist, or were not a goods number, get the goods
// label "-".
func (m *Metrics) Purchased(goodsNo int32, outcome string, d time.Duration) {
	label := "-"
	m.mu.Lock()
	if goodsNo > 0 && outcome != "goods_not_found" && outcome != "invalid_goods_no" {
		var tracked bool
		if tracks[outcome] {
			tracked = m.trackLocked(goodsNo) // given a label if there is room
		} else {
			tracked = slices.Contains(m.goods, goodsNo)
		}
		if tracked {
			label = strconv.Itoa(int(goodsNo))
		} else {
			label = "other"
		}
	}
	key := goodsNo // the dashboard's counts: a tracked goods', or all others' together
	switch label {
	case "-":
		key = 0
	case "other":
		key = -1
	}
	if m.outcomes[key] == nil {
		m.outcomes[key] = map[string]int64{}
	}
	m.outcomes[key][outcome]++
	if label == "-" {
		m.countSale(0, outcome)
	} else {
		m.countSale(goodsNo, outcome)
	}
	m.mu.Unlock()
	m.purchases.WithLabelValues(label, outcome, m.strategy).Inc()
	m.purchaseDur.WithLabelValues(outcome).Observe(d.Seconds())
}

// Tracked reports whether goodsNo has a label of its own.
func (m *Metrics) Tracked(goodsNo int32) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Contains(m.goods, goodsNo)
}
