package loadgen

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/seckill-zk/seckill-zk/internal/metrics/scrape"
)

// serverMetrics is what the load tester reads of the shops' /metrics,
// summed over every target: the lock-wait histogram and the purchases by
// outcome.
type serverMetrics struct {
	waitBuckets map[float64]float64 // upper bound → cumulative count
	outcomes    map[string]float64
}

// scrapeMetrics reads /metrics of every target; ok is false when a target
// has none (an older shop, or another service).
func scrapeMetrics(ctx context.Context, client *http.Client, targets []string) (m serverMetrics, ok bool) {
	m = serverMetrics{waitBuckets: map[float64]float64{}, outcomes: map[string]float64{}}
	for _, base := range targets {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/metrics", nil)
		if err != nil {
			return m, false
		}
		resp, err := client.Do(req)
		if err != nil {
			return m, false
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return m, false
		}
		err = m.add(resp.Body)
		resp.Body.Close()
		if err != nil {
			return m, false
		}
	}
	return m, true
}

// add adds one scrape, in Prometheus' text format.
func (m *serverMetrics) add(r io.Reader) error {
	samples, err := scrape.Parse(r)
	if err != nil {
		return err
	}
	for _, x := range samples {
		switch x.Name {
		case "seckill_lock_wait_seconds_bucket":
			bound := math.Inf(1)
			if le := x.Labels["le"]; le != "+Inf" {
				if bound, err = strconv.ParseFloat(le, 64); err != nil {
					return fmt.Errorf("bucket bound %q: %w", le, err)
				}
			}
			m.waitBuckets[bound] += x.Value
		case "seckill_purchases_total":
			m.outcomes[x.Labels["outcome"]] += x.Value
		}
	}
	return nil
}

// minus is what happened between two scrapes: m − before.
func (m serverMetrics) minus(before serverMetrics) serverMetrics {
	d := serverMetrics{waitBuckets: map[float64]float64{}, outcomes: map[string]float64{}}
	for b, v := range m.waitBuckets {
		d.waitBuckets[b] = v - before.waitBuckets[b]
	}
	for k, v := range m.outcomes {
		d.outcomes[k] = v - before.outcomes[k]
	}
	return d
}

// waitQuantile is the q-quantile of the lock waits in seconds, interpolated
// within its bucket as Prometheus' histogram_quantile does; NaN without
// waits.
func (m serverMetrics) waitQuantile(q float64) float64 {
	bounds := make([]float64, 0, len(m.waitBuckets))
	for b := range m.waitBuckets {
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	if len(bounds) == 0 || m.waitBuckets[bounds[len(bounds)-1]] <= 0 {
		return math.NaN()
	}
	total := m.waitBuckets[bounds[len(bounds)-1]]
	rank := q * total
	lower, below := 0.0, 0.0
	for _, b := range bounds {
		count := m.waitBuckets[b]
		if count >= rank {
			if math.IsInf(b, 1) {
				return lower // beyond the last finite bucket: its bound
			}
			if count == below {
				return b
			}
			return lower + (b-lower)*(rank-below)/(count-below)
		}
		lower, below = b, count
	}
	return lower
}
