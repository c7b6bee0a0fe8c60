// Package benchtable turns the output of internal/zklock's benchmarks
// (`go test -bench`, several runs concatenated) into the table of ratios
// that `make bench` prints and docs/lock.md reports: each ratio averaged
// over the runs, the contended rows' per-slice spread, and whether each
// figure with a target met it.
package benchtable

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// mean accumulates samples.
type mean struct {
	n       int
	sum, sq float64
}

func (m *mean) add(v float64) { m.n, m.sum, m.sq = m.n+1, m.sum+v, m.sq+v*v }
func (m *mean) avg() float64 {
	if m.n == 0 {
		return 0
	}
	return m.sum / float64(m.n)
}

// sd is the sample standard deviation.
func (m *mean) sd() float64 {
	if m.n < 2 {
		return 0
	}
	a := m.avg()
	return math.Sqrt(max(0, (m.sq-float64(m.n)*a*a)/float64(m.n-1)))
}

// Runs is what the benchmark output held.
type Runs struct {
	perBench map[string]map[string]*mean // benchmark name (no -N suffix) → unit → values
	slices   map[string]*mean            // "sessions=S waiters=W" → per-slice ratios
}

var (
	sliceRE = regexp.MustCompile(`slice-ratio (sessions=\d+ waiters=\d+) ([0-9.eE+-]+)`)
	cpuRE   = regexp.MustCompile(`-\d+$`)
)

// Parse reads benchmark output.
func Parse(r io.Reader) (*Runs, error) {
	runs := &Runs{perBench: map[string]map[string]*mean{}, slices: map[string]*mean{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := sliceRE.FindStringSubmatch(line); m != nil {
			v, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				return nil, fmt.Errorf("benchtable: %q: %w", line, err)
			}
			if runs.slices[m[1]] == nil {
				runs.slices[m[1]] = &mean{}
			}
			runs.slices[m[1]].add(v)
			continue
		}
		if !strings.HasPrefix(line, "Benchmark") {
			continue
		}
		f := strings.Fields(line)
		name := cpuRE.ReplaceAllString(f[0], "")
		// Benchmark lines: name, iterations, then value-unit pairs.
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			if runs.perBench[name] == nil {
				runs.perBench[name] = map[string]*mean{}
			}
			if runs.perBench[name][f[i+1]] == nil {
				runs.perBench[name][f[i+1]] = &mean{}
			}
			runs.perBench[name][f[i+1]].add(v)
		}
	}
	return runs, sc.Err()
}

// unit averages a unit over every benchmark that reported it.
func (r *Runs) unit(u string) *mean {
	all := &mean{}
	for _, units := range r.perBench {
		if m := units[u]; m != nil {
			all.n, all.sum, all.sq = all.n+m.n, all.sum+m.sum, all.sq+m.sq
		}
	}
	return all
}

// Met says whether value meets target: "<= X", ">= X", or a bare number
// (equal within 5%). "" when there is no target or no value.
func Met(value, target string) string {
	v, err := strconv.ParseFloat(value, 64)
	if target == "" || err != nil {
		return ""
	}
	op, t, ok := strings.Cut(target, " ")
	if !ok {
		want, _ := strconv.ParseFloat(op, 64)
		return verdict(v >= want*0.95 && v <= want*1.05)
	}
	want, _ := strconv.ParseFloat(t, 64)
	switch op {
	case "<=":
		return verdict(v <= want)
	case ">=":
		return verdict(v >= want)
	}
	return ""
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// Write prints the table.
func (r *Runs) Write(w io.Writer) {
	row := func(label, value, target string) {
		v := Met(value, target)
		if label == "measure" {
			v = "this run"
		}
		fmt.Fprintf(w, "%-70s %9s %7s %s\n", label, value, target, v)
	}
	ratio := func(u string) string {
		m := r.unit(u)
		if m.n == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2f", m.avg())
	}
	contended := func(bench string, sessions, waiters int, target string) {
		units := r.perBench[fmt.Sprintf("%s/waiters=%d", bench, waiters)]
		if units == nil || units["mutex/zklock"] == nil {
			return
		}
		plural := ""
		if sessions > 1 {
			plural = "s"
		}
		label := fmt.Sprintf("contended, %d waiters, %d session%s", waiters, sessions, plural)
		row(label+": zklock.Mutex / zk.Lock (handoffs/s)", fmt.Sprintf("%.2f", units["mutex/zklock"].avg()), target)
		if s := r.slices[fmt.Sprintf("sessions=%d waiters=%d", sessions, waiters)]; s != nil && s.n > 1 {
			row(fmt.Sprintf("  per slice pair: mean +- 2 standard errors (%d pairs)", s.n),
				fmt.Sprintf("%.2f+-%.2f", s.avg(), 2*s.sd()/math.Sqrt(float64(s.n))), "")
		}
		avg := func(u string) string {
			if units[u] == nil {
				return fmt.Sprintf("%.3f", 0.0)
			}
			return fmt.Sprintf("%.3f", units[u].avg())
		}
		row("  wake-ups per hand-off", avg("wakeups/handoff"), "1")
		row("  listings per hand-off (zk.Lock: 2)", avg("listings/handoff"), "")
		row("  hand-offs taken without listing again", avg("shortcuts/handoff"), "")
	}
	fmt.Fprintln(w)
	row("measure", "value", "target")
	row("uncontended: zklock.Mutex / raw ops (time)", ratio("mutex/raw"), "<= 1.2")
	row("uncontended: zk.Lock / raw ops (time)", ratio("zklock/raw"), "")
	row("uncontended: with Token (read early) / without (time)", ratio("fenced/mutex"), "")
	row("uncontended: zklock.Mutex / zk.Lock, median of each acquire+release", ratio("mutex-p50/zklock-p50"), "")
	row("uncontended: zklock.Mutex / zk.Lock, p99 of each acquire+release", ratio("mutex-p99/zklock-p99"), "<= 1.5")
	contended("BenchmarkContended", 2, 20, ">= 1.0")
	contended("BenchmarkContended", 2, 200, ">= 1.0")
	contended("BenchmarkContendedOneSession", 1, 20, "")
}
