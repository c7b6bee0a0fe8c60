package benchtable

import (
	"strings"
	"testing"
)

// Two runs of the benchmarks, as `go test -bench -v` prints them.
const twoRuns = `goos: linux
BenchmarkUncontended
BenchmarkUncontended-2   	     100	  1000 ns/op	  1.10 mutex/raw	  0.90 zklock/raw	  1.20 fenced/mutex	  1.00 mutex-p50/zklock-p50	  1.40 mutex-p99/zklock-p99
BenchmarkContended
BenchmarkContended/waiters=20
    bench_test.go:172: slice-ratio sessions=2 waiters=20 1.0000
    bench_test.go:172: slice-ratio sessions=2 waiters=20 1.2000
BenchmarkContended/waiters=20-2         	       1	  1.05 mutex/zklock	  1.00 wakeups/handoff	  1.600 listings/handoff	  0.30 shortcuts/handoff
BenchmarkUncontended-2   	     100	  1000 ns/op	  1.30 mutex/raw	  1.10 zklock/raw	  1.00 fenced/mutex	  1.04 mutex-p50/zklock-p50	  1.80 mutex-p99/zklock-p99
    bench_test.go:172: slice-ratio sessions=2 waiters=20 1.1000
    bench_test.go:172: slice-ratio sessions=2 waiters=20 1.3000
BenchmarkContended/waiters=20-2         	       1	  0.95 mutex/zklock	  0.98 wakeups/handoff	  1.400 listings/handoff	  0.40 shortcuts/handoff
PASS
`

func TestTheTableAveragesTheRuns(t *testing.T) {
	runs, err := Parse(strings.NewReader(twoRuns))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	runs.Write(&b)
	got := b.String()
	for _, want := range []string{
		"uncontended: zklock.Mutex / raw ops (time)                                  1.20  <= 1.2 met\n",
		"uncontended: zk.Lock / raw ops (time)                                       1.00         \n",
		"uncontended: with Token (read early) / without (time)                       1.10         \n",
		"uncontended: zklock.Mutex / zk.Lock, median of each acquire+release         1.02         \n",
		"uncontended: zklock.Mutex / zk.Lock, p99 of each acquire+release            1.60  <= 1.5 MISSED\n",
		"contended, 20 waiters, 2 sessions: zklock.Mutex / zk.Lock (handoffs/s)      1.00  >= 1.0 met\n",
		// mean 1.15, sd 0.1291, 2 standard errors 0.129
		"  per slice pair: mean +- 2 standard errors (4 pairs)                  1.15+-0.13         \n",
		"  wake-ups per hand-off                                                    0.990       1 met\n",
		"  listings per hand-off (zk.Lock: 2)                                       1.500         \n",
		"  hand-offs taken without listing again                                    0.350         \n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks\n%q\n got:\n%s", want, got)
		}
	}
	for _, absent := range []string{"200 waiters", "1 session:"} {
		if strings.Contains(got, absent) {
			t.Errorf("a benchmark that did not run has a row (%s):\n%s", absent, got)
		}
	}
}

func TestMet(t *testing.T) {
	for _, c := range []struct{ value, target, want string }{
		{"1.20", "<= 1.2", "met"}, {"1.21", "<= 1.2", "MISSED"},
		{"1.00", ">= 1.0", "met"}, {"0.99", ">= 1.0", "MISSED"},
		{"0.96", "1", "met"}, {"0.94", "1", "MISSED"}, {"1.06", "1", "MISSED"},
		{"n/a", "<= 1.2", ""}, {"1.0", "", ""},
	} {
		if got := Met(c.value, c.target); got != c.want {
			t.Errorf("Met(%s, %q) = %q, want %q", c.value, c.target, got, c.want)
		}
	}
}
