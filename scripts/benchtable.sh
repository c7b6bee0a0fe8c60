#!/usr/bin/env bash
# Reads `go test -bench` output of internal/zklock on stdin (after echoing it)
# and prints the ratios the README reports. Several runs are averaged.
set -euo pipefail
tee /dev/stderr | awk '
/slice-ratio waiters=/ {
	w = $0; sub(/.*waiters=/, "", w); split(w, f, " ")
	sr[f[1]] += f[2]; sr2[f[1]] += f[2] * f[2]; nsr[f[1]]++
}
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	for (i = 3; i < NF; i++) {
		if ($(i+1) == "ns/op") { ns[name] += $i; nns[name]++ }
		if ($(i+1) == "mutex/zklock") { hs[name] += $i; nhs[name]++ }
		if ($(i+1) == "wakeups/handoff") { wk[name] += $i; nwk[name]++ }
		if ($(i+1) == "listings/handoff") { ls[name] += $i; nls[name]++ }
		if ($(i+1) == "shortcuts/handoff") { sc[name] += $i; nsc[name]++ }
		if ($(i+1) == "mutex/raw") { mr += $i; nmr++ }
		if ($(i+1) == "zklock/raw") { zr += $i; nzr++ }
	}
}
function max0(x) { return x > 0 ? x : 0 }
function avg(sum, n, k) { return n[k] ? sum[k] / n[k] : 0 }
function ratio(a, b) { return b ? sprintf("%.2f", a / b) : "n/a" }
END {
	printf "\n%-62s %8s %8s\n", "measure", "value", "target"
	printf "%-62s %8s %8s\n", "uncontended: zklock.Mutex / raw ops (time)", ratio(mr, nmr), "<= 1.2"
	printf "%-62s %8s %8s\n", "uncontended: zk.Lock / raw ops (time)", ratio(zr, nzr), ""
	for (w = 20; w <= 200; w *= 10) {
		k = "BenchmarkContended/waiters=" w
		printf "%-62s %8.2f %8s\n", "contended, " w " waiters: zklock.Mutex / zk.Lock (handoffs/s)", avg(hs, nhs, k), ">= 1.0"
		if (nsr[w] > 1) {
			m = sr[w] / nsr[w]
			sd = sqrt(max0((sr2[w] - nsr[w] * m * m) / (nsr[w] - 1)))
			printf "%-62s %8s %8s\n", "  per slice pair: mean +- 2 standard errors (" nsr[w] " pairs)", sprintf("%.2f+-%.2f", m, 2 * sd / sqrt(nsr[w])), ""
		}
		printf "%-62s %8.3f %8s\n", "contended, " w " waiters: wake-ups per hand-off", avg(wk, nwk, k), "1"
		printf "%-62s %8.3f %8s\n", "contended, " w " waiters: listings per hand-off (zk.Lock: 2)", avg(ls, nls, k), ""
		printf "%-62s %8.3f %8s\n", "contended, " w " waiters: hand-offs taken without re-listing", avg(sc, nsc, k), ""
	}
}'
