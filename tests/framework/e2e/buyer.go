package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/internal/loadgen"
	"github.com/seckill-zk/seckill-zk/internal/metrics/scrape"
)

// Outcome counts a crowd's answers by status and by code.
type Outcome struct {
	Status map[int]int
	Codes  map[string]int
}

// Buy fires n concurrent purchases of goods 1, round-robin over bases,
// through the load engine's closed loop (n buyers, one purchase each); an
// answer that is not JSON, or none, fails the test.
func Buy(t *testing.T, bases []string, n int) Outcome {
	t.Helper()
	out := Outcome{Status: map[int]int{}, Codes: map[string]int{}}
	r := loadgen.Closed(context.Background(), loadgen.ClosedOptions{Targets: bases, Requests: n, Concurrency: n})
	for i, a := range r.Answers {
		switch {
		case a.Err != nil:
			t.Errorf("request %d: %v", i, a.Err)
			continue
		case strings.HasPrefix(a.Code, "not JSON"):
			t.Errorf("request %d: status %d, %s", i, a.Status, a.Code)
		}
		out.Status[a.Status]++
		out.Codes[a.Code]++
	}
	return out
}

// PurchaseAsync sends one purchase of goods 1 and delivers its answer.
func PurchaseAsync(base string) <-chan Answer {
	return PurchaseOfAsync(base, 1)
}

// PurchaseOfAsync sends one purchase of goodsNo and delivers its answer.
func PurchaseOfAsync(base string, goodsNo int32) <-chan Answer {
	ch := make(chan Answer, 1)
	go func() {
		c := NewConn(base)
		defer c.Close()
		ch <- c.Purchase(goodsNo)
	}()
	return ch
}

// Await waits (at most 2 minutes) for an answer that came.
func Await(t *testing.T, what string, ch <-chan Answer) Answer {
	t.Helper()
	select {
	case a := <-ch:
		if a.Err != nil {
			t.Fatalf("%s: %v", what, a.Err)
		}
		return a
	case <-time.After(2 * time.Minute):
		t.Fatalf("%s: no answer within 2 minutes", what)
		return Answer{}
	}
}

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

// AskJSON is Ask with the answer's JSON body decoded into a T. A failed
// exchange or a body that is not JSON is an error of the test (t.Errorf:
// it may be called on any goroutine); the Answer says what came.
func AskJSON[T any](t testing.TB, method, url string, header ...string) (Answer, T) {
	t.Helper()
	var body T
	a := Ask(method, url, header...)
	if a.Err != nil {
		t.Errorf("%s %s: %v", method, url, a.Err)
		return a, body
	}
	if err := a.Decode(&body); err != nil {
		t.Errorf("%s %s: %v", method, url, err)
	}
	return a, body
}
