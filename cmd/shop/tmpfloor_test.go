package main

import (
	"os"
	"strings"
	"testing"
)

func BenchmarkTmpC(b *testing.B) {
	for _, st := range strings.Split(os.Getenv("TMP_ST"), ",") {
		for _, n := range []int{1500, 3000, 6000} {
			r := benchSale(b, st, 100, n, n)
			b.Logf("%s (c) %d: %.2fs RSS %d/%d MB oversold %d other %v", st, n, r.elapsed.Seconds(), r.peakRSS[0]>>20, r.peakRSS[1]>>20, r.oversold, r.other)
		}
	}
}
func BenchmarkTmpA(b *testing.B) {
	for _, st := range strings.Split(os.Getenv("TMP_ST"), ",") {
		r := benchSale(b, st, 4000, 3000, 200)
		b.Logf("%s (a): %.0f/s p50 %v p99 %v oversold %d other %v", st, r.purchasesPerSec, r.p50, r.p99, r.oversold, r.other)
		r = benchSale(b, st, 100, 3000, 200)
		b.Logf("%s (b): sold %.3f all %.3f ratio %.2f oversold %d other %v", st, r.firstStock.Seconds(), r.elapsed.Seconds(), r.elapsed.Seconds()/r.firstStock.Seconds(), r.oversold, r.other)
	}
}
