package e2e

import (
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"strings"
	"testing"
)

// benchShopChart draws (a)'s purchases/s per strategy as horizontal bars,
// each labelled with its median and the rounds' spread: the chart the README
// shows beside the table.
func benchShopChart(strategies []string, runs map[string][]benchRun, buyers, conc int) string {
	const w, barH, gap, left, right, top = 560, 26, 12, 70, 150, 40
	rate := func(r benchRun) float64 { return r.purchasesPerSec }
	top1 := 0.0
	for _, st := range strategies {
		for _, r := range runs[st] {
			top1 = max(top1, rate(r))
		}
	}
	if top1 == 0 {
		top1 = 1
	}
	h := top + len(strategies)*(barH+gap) + 24
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="100%%" style="max-width: %dpx" viewBox="0 0 %d %d" font-family="sans-serif" font-size="13">`+"\n", w, w, h)
	fmt.Fprintf(&b, `<text x="8" y="22" font-size="14" font-weight="bold">%s</text>`+"\n",
		html.EscapeString(fmt.Sprintf("purchases/s, every buyer buys (%d buyers, %d at a time)", buyers, conc)))
	colors := map[string]string{"atomic": "#7f7f7f", "seed": "#1f77b4", "batch": "#2ca02c"}
	for i, st := range strategies {
		rs := runs[st]
		y := top + i*(barH+gap)
		med := median(rs, rate)
		lo, hi := med, med
		for _, r := range rs {
			lo, hi = min(lo, rate(r)), max(hi, rate(r))
		}
		scale := float64(w-left-right) / top1
		color := colors[st]
		if color == "" {
			color = "#ff7f0e"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-8, y+barH/2+5, html.EscapeString(st))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", left, y, med*scale, barH, color)
		// The rounds' spread as a whisker over the bar's end.
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#000"/>`+"\n", left+lo*scale, left+hi*scale, y+barH/2, y+barH/2)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%.0f/s (%.0f-%.0f)</text>`+"\n", left+hi*scale+8, y+barH/2+5, med, lo, hi)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#555">two instances each; median of the rounds, the line their spread</text>`+"\n", left, h-8)
	b.WriteString("</svg>\n")
	return b.String()
}

// checkWellFormed fails the test unless svg is well-formed XML.
func checkWellFormed(t *testing.T, svg string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		if _, err := d.Token(); err == io.EOF {
			return
		} else if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, svg)
		}
	}
}

// The chart is well-formed SVG with a bar and a label per strategy.
func TestBenchShopChart(t *testing.T) {
	runs := map[string][]benchRun{
		"atomic": {{purchasesPerSec: 1000}, {purchasesPerSec: 1100}},
		"seed":   {{purchasesPerSec: 380}, {purchasesPerSec: 390}},
		"batch":  {{purchasesPerSec: 5400}, {purchasesPerSec: 5600}},
	}
	svg := benchShopChart([]string{"atomic", "seed", "batch"}, runs, 3000, 200)
	checkWellFormed(t, svg)
	for _, want := range []string{">atomic<", ">seed<", ">batch<", "1050/s (1000-1100)", "385/s (380-390)", "5500/s (5400-5600)"} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q:\n%s", want, svg)
		}
	}
	if n := strings.Count(svg, "<rect "); n != 3 {
		t.Errorf("%d bars, want 3", n)
	}
}
