// Package scrape reads what a Prometheus endpoint serves (the shop's
// /metrics), for the clients of the shop's metrics: the load tester and the
// tests. It is a leaf: the tests' harness, below every package it tests,
// reads metrics through it.
package scrape

import (
	"fmt"
	"io"
	"math"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one value of a scrape: a counter's or a gauge's, or one of a
// histogram's cumulative buckets (Name with _bucket and the bound in the
// label le, "+Inf" for the last), its _sum or its _count.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Parse reads a scrape in Prometheus' text exposition format (what
// /metrics serves) with Prometheus' own parser.
func Parse(r io.Reader) ([]Sample, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("scrape: %w", err)
	}
	var out []Sample
	for name, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			out = append(out, samplesOf(name, f.GetType(), m, labels)...)
		}
	}
	return out, nil
}

// samplesOf is one metric's samples.
func samplesOf(name string, typ dto.MetricType, m *dto.Metric, labels map[string]string) []Sample {
	with := func(k, v string) map[string]string {
		out := map[string]string{k: v}
		for lk, lv := range labels {
			out[lk] = lv
		}
		return out
	}
	switch typ {
	case dto.MetricType_COUNTER:
		return []Sample{{name, labels, m.GetCounter().GetValue()}}
	case dto.MetricType_GAUGE:
		return []Sample{{name, labels, m.GetGauge().GetValue()}}
	case dto.MetricType_HISTOGRAM:
		h := m.GetHistogram()
		out := []Sample{{name + "_sum", labels, h.GetSampleSum()}, {name + "_count", labels, float64(h.GetSampleCount())}}
		infSeen := false
		for _, b := range h.GetBucket() {
			le := strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)
			if math.IsInf(b.GetUpperBound(), 1) {
				le, infSeen = "+Inf", true
			}
			out = append(out, Sample{name + "_bucket", with("le", le), float64(b.GetCumulativeCount())})
		}
		if !infSeen { // the text format's +Inf bucket is the count
			out = append(out, Sample{name + "_bucket", with("le", "+Inf"), float64(h.GetSampleCount())})
		}
		return out
	default: // untyped, summary: the value as written
		return []Sample{{name, labels, m.GetUntyped().GetValue()}}
	}
}
