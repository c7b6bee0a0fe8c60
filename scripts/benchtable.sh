#!/usr/bin/env bash
# Reads `go test -bench` output of internal/zklock on stdin (after echoing it)
# and prints the ratios the README reports. Several runs are averaged.
set -euo pipefail
tee /dev/stderr | awk '
/slice-ratio sessions=/ {
	k = $0; sub(/.*slice-ratio /, "", k); split(k, f, " ")
	key = f[1] " " f[2]
	sr[key] += f[3]; sr2[key] += f[3] * f[3]; nsr[key]++
}
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	for (i = 3; i < NF; i++) {
		if ($(i+1) == "mutex/zklock") { hs[name] += $i; nhs[name]++ }
		if ($(i+1) == "wakeups/handoff") { wk[name] += $i; nwk[name]++ }
		if ($(i+1) == "listings/handoff") { ls[name] += $i; nls[name]++ }
		if ($(i+1) == "shortcuts/handoff") { sc[name] += $i; nsc[name]++ }
		if ($(i+1) == "mutex/raw") { mr += $i; nmr++ }
		if ($(i+1) == "zklock/raw") { zr += $i; nzr++ }
		if ($(i+1) == "fenced/mutex") { fr += $i; nfr++ }
		if ($(i+1) == "mutex-p50/zklock-p50") { p50 += $i; np50++ }
		if ($(i+1) == "mutex-p99/zklock-p99") { p99 += $i; np99++ }
	}
}
function max0(x) { return x > 0 ? x : 0 }
function avg(sum, n, k) { return n[k] ? sum[k] / n[k] : 0 }
function ratio(a, b) { return b ? sprintf("%.2f", a / b) : "n/a" }
# met says whether value meets target ("<= 1.2", ">= 1.0", a bare number: equal within 5%).
function met(value, target,    op, t, v) {
	if (target == "" || value == "n/a" || value == "value") return ""
	v = value + 0
	split(target, t, " ")
	if (t[2] == "") return (v >= t[1] * 0.95 && v <= t[1] * 1.05) ? "met" : "MISSED"
	if (t[1] == "<=") return v <= t[2] + 0 ? "met" : "MISSED"
	if (t[1] == ">=") return v >= t[2] + 0 ? "met" : "MISSED"
	return ""
}
function row(label, value, target) { printf "%-70s %9s %7s %s\n", label, value, target, (label == "measure" ? "this run" : met(value, target)) }
# contended prints the rows of one contended benchmark, if it ran.
function contended(bench, sessions, waiters, target,    k, key, m, sd, label) {
	k = bench "/waiters=" waiters
	if (!nhs[k]) return
	key = "sessions=" sessions " waiters=" waiters
	label = "contended, " waiters " waiters, " sessions " session" (sessions > 1 ? "s" : "")
	row(label ": zklock.Mutex / zk.Lock (handoffs/s)", sprintf("%.2f", avg(hs, nhs, k)), target)
	if (nsr[key] > 1) {
		m = sr[key] / nsr[key]
		sd = sqrt(max0((sr2[key] - nsr[key] * m * m) / (nsr[key] - 1)))
		row("  per slice pair: mean +- 2 standard errors (" nsr[key] " pairs)", sprintf("%.2f+-%.2f", m, 2 * sd / sqrt(nsr[key])), "")
	}
	row("  wake-ups per hand-off", sprintf("%.3f", avg(wk, nwk, k)), "1")
	row("  listings per hand-off (zk.Lock: 2)", sprintf("%.3f", avg(ls, nls, k)), "")
	row("  hand-offs taken without listing again", sprintf("%.3f", avg(sc, nsc, k)), "")
}
END {
	printf "\n"
	row("measure", "value", "target")
	row("uncontended: zklock.Mutex / raw ops (time)", ratio(mr, nmr), "<= 1.2")
	row("uncontended: zk.Lock / raw ops (time)", ratio(zr, nzr), "")
	row("uncontended: with Token (read early) / without (time)", ratio(fr, nfr), "")
	row("uncontended: zklock.Mutex / zk.Lock, median of each acquire+release", ratio(p50, np50), "")
	row("uncontended: zklock.Mutex / zk.Lock, p99 of each acquire+release", ratio(p99, np99), "<= 1.5")
	contended("BenchmarkContended", 2, 20, ">= 1.0")
	contended("BenchmarkContended", 2, 200, ">= 1.0")
	contended("BenchmarkContendedOneSession", 1, 20, "")
}'
