package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/seckill-zk/seckill-zk/internal/loadgen"
)

// loadtest compare: runs' results side by side, and the expectations a run is
// held to (--expect).

// compareCommand prints runs side by side with a verdict each, and can
// write them as one HTML report or SVG chart.
func compareCommand(stdout io.Writer) *cobra.Command {
	var html, svg, expect string
	cmd := &cobra.Command{
		Use:     "compare [flags] RUN.json...",
		Short:   "Compare saved runs (loadtest --out) side by side, with a verdict each",
		Example: "  loadtest compare --html report.html --svg chart.svg --expect oversell,exact off.json on.json",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("compare needs one or more RUN.json files (loadtest --out writes them)")
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			return compare(args, html, svg, expect, stdout)
		},
	}
	cmd.Flags().StringVar(&html, "html", "", "write a self-contained HTML report to this file")
	cmd.Flags().StringVar(&svg, "svg", "", "write the charts as one SVG to this file")
	cmd.Flags().StringVar(&expect, "expect", "", "comma-separated expectation per run, oversell or exact; exit 3 if one fails")
	return cmd
}

// compare prints the runs in files side by side with a verdict each.
func compare(files []string, html, svg, expect string, stdout io.Writer) error {
	var rs []*loadgen.Result
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var r loadgen.Result
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		rs = append(rs, &r)
	}
	vs := verdicts(rs...)
	if err := writeTable(stdout, rs...); err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	for _, v := range vs {
		fmt.Fprintln(stdout, v)
	}
	fmt.Fprintln(stdout)
	if err := writeLegend(stdout); err != nil {
		return err
	}
	if html != "" {
		if err := writeFile(html, func(w io.Writer) error { return writeHTML(w, vs, rs...) }); err != nil {
			return err
		}
	}
	if svg != "" {
		if err := writeFile(svg, func(w io.Writer) error { return writeSVG(w, rs...) }); err != nil {
			return err
		}
	}
	if expect != "" {
		return checkExpectations(strings.Split(expect, ","), rs)
	}
	return nil
}

// verdicts says of each run whether it oversold, sold exactly, or neither.
func verdicts(rs ...*loadgen.Result) []string {
	var out []string
	for _, r := range rs {
		switch p := r.Problems(); {
		case r.Oversold > 0:
			out = append(out, fmt.Sprintf("%s: OVERSOLD %d — %d buyers were told they succeeded for a stock that went down by %d.",
				r.Label, r.Oversold, r.Succeeded, r.StockBefore-r.StockAfter))
		case len(p) == 0:
			out = append(out, fmt.Sprintf("%s: exact — sold %d of %d, 0 oversold, one order row per success.", r.Label, r.Succeeded, r.StockBefore))
		default:
			out = append(out, fmt.Sprintf("%s: not exact — %s.", r.Label, strings.Join(p, "; ")))
		}
	}
	return out
}

func checkExpectations(expect []string, rs []*loadgen.Result) error {
	if len(expect) != len(rs) {
		return fmt.Errorf("--expect has %d entries for %d runs", len(expect), len(rs))
	}
	var failed []string
	for i, e := range expect {
		r := rs[i]
		switch strings.TrimSpace(e) {
		case "oversell":
			if r.Oversold <= 0 {
				failed = append(failed, r.Label+" did not oversell")
			}
		case "exact":
			if p := r.Problems(); len(p) > 0 {
				failed = append(failed, r.Label+" not exact: "+strings.Join(p, "; "))
			}
		default:
			return fmt.Errorf("--expect: %q is neither oversell nor exact", e)
		}
	}
	if len(failed) > 0 {
		return &failure{"expectation failed: " + strings.Join(failed, "; "), 3}
	}
	return nil
}
