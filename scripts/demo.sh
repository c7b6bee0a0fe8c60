#!/usr/bin/env bash
# The demo: two shop instances (the seed's two JVMs) on one database and one
# ZooKeeper, stock 100 for goods 1.
#
#   scripts/demo.sh up     migrate, set stock, start the instances (idempotent: restarts them)
#   scripts/demo.sh down   stop them
#
# Environment: DEMO_PORTS ("8081 8082"), SHOP_* settings (e.g. SHOP_LOCK_ENABLED=false).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
state="$root/.stack/demo"
shop="$root/bin/shop"
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
	"$shop" stock set --goods 1 --stock 100 --clear-orders
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
		log "shop serving on http://127.0.0.1:$port (log: .stack/demo/shop-$port.log)"
	done
	cat >&2 <<MSG
demo: stock of goods 1 is 100. Try:
  curl http://127.0.0.1:${ports%% *}/goods-stock/1     # buy one
  curl http://127.0.0.1:${ports%% *}/goods/1           # see the stock
  make demo-stop                          # stop the instances
MSG
}

case "${1:-up}" in
up) up ;;
down) down ;;
*) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
