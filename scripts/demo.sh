#!/usr/bin/env bash
# The demo: two shop instances (the seed's two JVMs) on one database and one
# ZooKeeper, stock 100 for goods 1.
#
#   scripts/demo.sh compare  the seed's scenario three times: lock OFF, lock ON (the seed's
#                            purchase, one buyer per lock hold) and lock ON, batched (one hold
#                            and one transaction per batch of buyers): 1500 concurrent buyers
#                            over both instances, tables side by side, a verdict, and an HTML
#                            report with a chart per run (out/demo-report.html)
#   scripts/demo.sh up       migrate, stock 100, start the instances and leave them serving
#   scripts/demo.sh down     stop the instances
#
# Environment: DEMO_PORTS ("8081 8082"), DEMO_REQUESTS (1500), DEMO_CONCURRENCY (1500),
# DEMO_MAXSLEEP (50ms), and any SHOP_* setting for "up".
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
state="$root/.stack/demo"
out="$root/out"
shop="$root/bin/shop"
loadtest="$root/bin/loadtest"
ports=${DEMO_PORTS:-8081 8082}

log() { printf 'demo: %s\n' "$*" >&2; }

down() {
	for f in "$state"/shop-*.pid; do
		[ -f "$f" ] || continue
		pid=$(cat "$f")
		if kill -0 "$pid" 2>/dev/null; then
			log "stopping shop (pid $pid)"
			kill -INT "$pid"
			for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		fi
		rm -f "$f"
	done
}

up() {
	[ -x "$shop" ] || { log "build first: make build"; exit 1; }
	mkdir -p "$state"
	down
	cd "$root"
	"$shop" migrate
	"$shop" stock set --goods 1 --stock 100 --clear-orders --reset-fence
	for port in $ports; do
		nohup "$shop" serve --server.addr="127.0.0.1:$port" >"$state/shop-$port.log" 2>&1 </dev/null &
		echo $! >"$state/shop-$port.pid"
	done
	for port in $ports; do
		for i in $(seq 1 150); do
			if curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; then break; fi
			if [ "$i" = 150 ]; then log "instance on :$port not ready; see $state/shop-$port.log"; exit 1; fi
			sleep 0.2
		done
		log "shop serving on http://127.0.0.1:$port (lock ${SHOP_LOCK_ENABLED:-true}; log: .stack/demo/shop-$port.log)"
	done
}

urls() {
	local u=""
	for port in $ports; do u="$u${u:+,}http://127.0.0.1:$port"; done
	echo "$u"
}

compare() {
	[ -x "$loadtest" ] || { log "build first: make build"; exit 1; }
	mkdir -p "$out"
	trap down EXIT
	# 1500 buyers pass the lock one at a time, each holding it for the read, the sleep and the
	# write: with the seed's 0-1000 ms sleep the locked run would take ~12 minutes. 50 ms keeps
	# it near a minute and still makes every unlocked buyer read before the others write.
	export SHOP_DEMO_MAXSLEEP=${DEMO_MAXSLEEP:-50ms}
	export SHOP_LOCK_ACQUIRETIMEOUT=5m
	for mode in off on batched; do
		case $mode in
		off) export SHOP_LOCK_ENABLED=false SHOP_PURCHASE_STRATEGY=seed label="lock off" ;;
		on) export SHOP_LOCK_ENABLED=true SHOP_PURCHASE_STRATEGY=seed label="lock on" ;;
		batched) export SHOP_LOCK_ENABLED=true SHOP_PURCHASE_STRATEGY=batch label="lock on, batched" ;;
		esac
		up
		log "$label: ${DEMO_REQUESTS:-1500} purchases, ${DEMO_CONCURRENCY:-1500} at once, demo.maxSleep $SHOP_DEMO_MAXSLEEP"
		"$loadtest" --url "$(urls)" --label "$label" --requests "${DEMO_REQUESTS:-1500}" \
			--concurrency "${DEMO_CONCURRENCY:-1500}" --out "$out/lock-$mode.json" >/dev/null
	done
	down
	trap - EXIT
	echo
	"$loadtest" compare --html "$out/demo-report.html" --svg "$out/demo-chart.svg" \
		--expect oversell,exact,exact "$out/lock-off.json" "$out/lock-on.json" "$out/lock-batched.json"
	echo
	echo "report: $out/demo-report.html (chart: $out/demo-chart.svg)"
}

case "${1:-compare}" in
compare) compare ;;
up)
	up
	cat >&2 <<MSG
demo: stock of goods 1 is 100. Try:
  curl http://127.0.0.1:${ports%% *}/goods-stock/1     # buy one
  curl http://127.0.0.1:${ports%% *}/goods/1           # stock and order rows
  make demo-stop                          # stop the instances
MSG
	;;
down) down ;;
*) echo "usage: $0 compare|up|down" >&2; exit 2 ;;
esac
