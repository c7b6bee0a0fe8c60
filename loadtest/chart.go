package main

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/seckill-zk/seckill-zk/internal/loadgen"
)

// Chart geometry, in SVG user units.
const (
	chartW, chartH         = 520, 300
	padL, padR, padT, padB = 52, 16, 34, 40
)

// series is one line of a chart.
type series struct {
	name, color, dash string
	value             func(loadgen.Sample) int
}

var chartSeries = []series{
	{"stock", "#1f77b4", "", func(s loadgen.Sample) int { return s.Stock }},
	{"order rows", "#2ca02c", "", func(s loadgen.Sample) int { return s.Orders }},
	{"200 answers", "#ff7f0e", "5 4", func(s loadgen.Sample) int { return s.Succeeded }},
}

// chartSVG draws one run: stock, order rows and successful answers over time.
// The picture of overselling is the green and orange lines climbing past the
// stock the blue line started from.
// Runs drawn side by side share the scales (maxT seconds, maxY pieces), so
// that their panels compare at a glance.
func chartSVG(r *loadgen.Result, x0, maxT float64, maxY int) string {
	var b strings.Builder
	px := func(t float64) float64 { return x0 + padL + t/maxT*(chartW-padL-padR) }
	py := func(v int) float64 { return padT + (1-float64(v)/float64(maxY))*(chartH-padT-padB) }

	title := fmt.Sprintf("%s: %d sold from a stock of %d, oversold %d", r.Label, r.Succeeded, r.StockBefore, r.Oversold)
	fmt.Fprintf(&b, `<text x="%.0f" y="20" font-size="14" font-weight="bold">%s</text>`, x0+padL, template.HTMLEscapeString(title))
	// axes and grid
	for i := 0; i <= 4; i++ {
		v := maxY * i / 4
		y := py(v)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`, px(0), y, px(maxT), y)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="11" text-anchor="end">%d</text>`, px(0)-6, y+4, v)
	}
	for i := 0; i <= 4; i++ {
		t := maxT * float64(i) / 4
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" text-anchor="middle">%.1fs</text>`, px(t), chartH-padB+16, t)
	}
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`, px(0), py(0), px(maxT), py(0))
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`, px(0), py(0), px(0), py(maxY))
	// the stock the run started with
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999" stroke-dasharray="2 3"/>`, px(0), py(r.StockBefore), px(maxT), py(r.StockBefore))
	for i, se := range chartSeries {
		var pts []string
		for _, s := range r.Samples {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.T), py(se.value(s))))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" stroke-dasharray="%s" points="%s"/>`, se.color, se.dash, strings.Join(pts, " "))
		lx := x0 + padL + float64(i)*140
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="2" stroke-dasharray="%s"/>`, lx, chartH-8, lx+18, chartH-8, se.color, se.dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11">%s</text>`, lx+22, chartH-4, se.name)
	}
	return b.String()
}

// niceCeil rounds up to 1, 2 or 5 times a power of ten, for the axis.
func niceCeil(v int) int {
	p := 1
	for p*10 <= v {
		p *= 10
	}
	for _, m := range []int{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// scales returns the time and value ranges that hold every run.
func scales(rs ...*loadgen.Result) (maxT float64, maxY int) {
	for _, r := range rs {
		maxY = max(maxY, r.StockBefore)
		for _, s := range r.Samples {
			maxT = math.Max(maxT, s.T)
			for _, se := range chartSeries {
				maxY = max(maxY, se.value(s))
			}
		}
	}
	return math.Max(maxT, 0.001), niceCeil(max(maxY, 1))
}

// writeSVG writes the runs' charts side by side, on the same scales, as one
// SVG document that scales to the width it is given (viewBox, width 100%).
func writeSVG(w io.Writer, rs ...*loadgen.Result) error {
	maxT, maxY := scales(rs...)
	var body strings.Builder
	for i, r := range rs {
		body.WriteString(chartSVG(r, float64(i*chartW), maxT, maxY))
	}
	_, err := fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="100%%" viewBox="0 0 %d %d" preserveAspectRatio="xMinYMin meet" font-family="sans-serif"><rect width="100%%" height="100%%" fill="white"/>%s</svg>`+"\n",
		len(rs)*chartW, chartH, body.String())
	return err
}

var reportTmpl = template.Must(template.New("report").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>seckill-zk load test</title>
<style>
body { font-family: sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
td, th { border: 1px solid #ccc; padding: 4px 10px; text-align: right; }
td:first-child, th:first-child { text-align: left; }
.verdict { font-size: 1.1em; font-weight: bold; }
</style></head><body>
<h1>seckill-zk load test</h1>
<p>Targets: {{.Targets}}; goods {{.GoodsNo}}.
<b>Oversold</b> = successful answers − (stock before − stock after + orders expired meanwhile): sales the stock column does not account for.</p>
{{range .Verdicts}}<p class="verdict">{{.}}</p>{{end}}
<table>{{range $i, $row := .Rows}}<tr>{{range $row}}{{if eq $i 0}}<th>{{.}}</th>{{else}}<td>{{.}}</td>{{end}}{{end}}</tr>{{end}}</table>
{{.SVG}}
<p>Blue: the stock column over time. Green: order rows created. Orange: 200 answers counted by the load tester.
Without the lock the green and orange lines climb past the stock the run started with (dotted).</p>
</body></html>
`))

// writeHTML writes a self-contained report of the runs.
func writeHTML(w io.Writer, verdicts []string, rs ...*loadgen.Result) error {
	var svg bytes.Buffer
	if err := writeSVG(&svg, rs...); err != nil {
		return err
	}
	return reportTmpl.Execute(w, map[string]any{
		"Targets":  strings.Join(rs[0].Targets, ", "),
		"GoodsNo":  rs[0].GoodsNo,
		"Verdicts": verdicts,
		"Rows":     rows(rs...),
		"SVG":      template.HTML(svg.String()), // built above from numbers and escaped labels
	})
}
