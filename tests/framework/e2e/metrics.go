package e2e

import (
	"bytes"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/seckill-zk/seckill-zk/internal/metrics/scrape"
)

// An instance's metrics, as its /metrics shows them.

// MetricValue reads one sample of /metrics, parsed by Prometheus' own
// parser (scrape.Parse): the one whose name{labels} (labels sorted by
// name, as the exposition writes them) is series, or whose name is series.
func MetricValue(t testing.TB, base, series string) float64 {
	t.Helper()
	for _, x := range metricSamples(t, base) {
		keys := slices.Sorted(maps.Keys(x.Labels))
		var pairs []string
		for _, k := range keys {
			pairs = append(pairs, fmt.Sprintf("%s=%q", k, x.Labels[k]))
		}
		name := x.Name
		if len(pairs) > 0 {
			name += "{" + strings.Join(pairs, ",") + "}"
		}
		if name == series {
			return x.Value
		}
	}
	t.Fatalf("/metrics of %s has no %s", base, series)
	return 0
}

// MetricSum is the sum of the samples of /metrics named name, whatever
// their labels; 0 when there is none.
func MetricSum(t testing.TB, base, name string) float64 {
	t.Helper()
	var sum float64
	for _, x := range metricSamples(t, base) {
		if x.Name == name {
			sum += x.Value
		}
	}
	return sum
}

// metricSamples reads and parses the /metrics of the instance at base.
func metricSamples(t testing.TB, base string) []scrape.Sample {
	t.Helper()
	a := Ask(http.MethodGet, base+"/metrics")
	if a.Err != nil {
		t.Fatal(a.Err)
	}
	samples, err := scrape.Parse(bytes.NewReader(a.Body))
	if err != nil {
		t.Fatalf("/metrics of %s: %v", base, err)
	}
	return samples
}
