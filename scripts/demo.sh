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
#   scripts/demo.sh failover starts the instances again with orders.payTimeout 20s and
#                            zookeeper.sessionTimeout 10s, places three orders (one paid), SIGKILLs
#                            the instance that leads the sweeper's election and shows the other one
#                            take over and expire the two unpaid orders (run it as often as you like)
#   scripts/demo.sh cluster  "compare" on a cluster: three Galera nodes (scripts/stack.sh galera,
#                            .stack/galera, 127.0.0.1:23301-23303), three ZooKeeper servers
#                            (scripts/stack.sh ensemble, .stack/cluster-zk, 127.0.0.1:22281-22283) and
#                            three instances (:8091-8093), instance N on node N and ZooKeeper server N
#                            (its DSN lists the other nodes after its own, for failover); the
#                            ensemble is stopped at the end, the Galera cluster (the tests') left up
#
# Environment: DEMO_PORTS ("8081 8082"), DEMO_STATE (.stack/demo: the instances' pid files and
# logs), DEMO_OUT (out: the reports), DEMO_REQUESTS (1500), DEMO_CONCURRENCY (1500), DEMO_BUYERS
# (0: anonymous buyers; N: N buyer ids, one purchase each allowed, the table shows already_bought),
# DEMO_MAXSLEEP (50ms; compare also opens 100 MySQL connections per pool at each start,
# SHOP_MYSQL_INITIALCONNS), and any SHOP_* setting for "up" (config.yaml's defaults otherwise: an
# unpaid order expires after orders.payTimeout, 15m).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
state=${DEMO_STATE:-$root/.stack/demo}
out=${DEMO_OUT:-$root/out}
shop="$root/bin/shop"
loadtest="$root/bin/loadtest"
ports=${DEMO_PORTS:-8081 8082}

log_prefix=demo
# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"

down() {
	for f in "$state"/shop-*.pid; do
		[ -f "$f" ] || continue
		stop_pid "$(cat "$f")" shop INT 15 # SIGINT: the graceful shutdown
		rm -f "$f"
	done
}

# instance_env N: the environment of the Nth instance (1-based): on a cluster, its own
# Galera node first in its DSN and its own ZooKeeper server.
instance_env() {
	[ -n "${cluster:-}" ] || return 0
	local n=$1 addrs="" k
	for k in $n $(((n % 3) + 1)) $((((n + 1) % 3) + 1)); do addrs="$addrs${addrs:+,}127.0.0.1:$((23300 + k))"; done
	echo "SHOP_MYSQL_DSN=seckill:seckill@tcp($addrs)/seckill SHOP_ZOOKEEPER_SERVERS=127.0.0.1:$((22280 + n))"
}

up() {
	[ -x "$shop" ] || die "build first: make build"
	mkdir -p "$state"
	down
	cd "$root"
	for port in $ports; do
		# down stopped the instances this script started; anything still
		# listening would answer in place of ours.
		if port_open 127.0.0.1 "$port"; then
			log "port $port is taken by another process; stop it, or pick other ports (DEMO_PORTS)"
			exit 1
		fi
	done
	# shellcheck disable=SC2046 # instance_env's words are NAME=value pairs
	env $(instance_env 1) "$shop" migrate
	# A new sale, open now: a sale window left by docs/orders.md's example
	# (or any stock set --start/--end) would answer every buyer 409.
	# shellcheck disable=SC2046
	env $(instance_env 1) "$shop" stock set --goods 1 --stock 100 --clear-orders --reset-fence --start none --end none
	local n=0
	for port in $ports; do
		n=$((n + 1))
		# shellcheck disable=SC2046
		SHOP_DASHBOARD_PEERS=${SHOP_DASHBOARD_PEERS:-$(urls)} \
			nohup env $(instance_env $n) "$shop" serve --server.addr="127.0.0.1:$port" >"$state/shop-$port.log" 2>&1 </dev/null &
		echo $! >"$state/shop-$port.pid"
		disown # it outlives this script; a kill of it is no job of ours to report
	done
	for port in $ports; do
		for i in $(seq 1 150); do
			# Ours must be the one answering: a process left on the port
			# would answer for it while ours exits (address already in use).
			if ! alive "$(cat "$state/shop-$port.pid")"; then
				log "instance on :$port exited: $(tail -1 "$state/shop-$port.log")"
				exit 1
			fi
			if curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; then break; fi
			if [ "$i" = 150 ]; then log "instance on :$port not ready; see $state/shop-$port.log"; exit 1; fi
			sleep 0.2
		done
		log "shop serving on http://127.0.0.1:$port (lock ${SHOP_LOCK_ENABLED:-true}, unpaid orders expire after ${SHOP_ORDERS_PAYTIMEOUT:-15m}; log: ${state#"$root"/}/shop-$port.log)"
	done
}

urls() {
	local u=""
	for port in $ports; do u="$u${u:+,}http://127.0.0.1:$port"; done
	echo "$u"
}

compare() {
	[ -x "$loadtest" ] || die "build first: make build"
	mkdir -p "$out"
	trap 'down; stop_ensemble' EXIT
	# 1500 buyers pass the lock one at a time, each holding it for the read, the sleep and the
	# write: with the seed's 0-1000 ms sleep the locked run would take ~12 minutes. 50 ms keeps
	# it near a minute and still makes every unlocked buyer read before the others write.
	export SHOP_DEMO_MAXSLEEP=${DEMO_MAXSLEEP:-50ms}
	export SHOP_LOCK_ACQUIRETIMEOUT=5m
	# 1500 buyers at once at instances just started: the lock-off run opens a MySQL connection per
	# buyer up to mysql.maxOpenConns, past MariaDB's back_log, and a dropped connection is tried
	# again a second later. The instances open their pools before they listen instead
	# (docs/operations.md, "The database's accept backlog").
	export SHOP_MYSQL_INITIALCONNS=${SHOP_MYSQL_INITIALCONNS:-100}
	# The seed's scenario is 1500 threads that each wait as long as it takes (a closed loop): the
	# admission, which refuses at once the buyers an instance cannot serve within
	# purchase.queueTarget, is off here, so that the three runs differ in the lock alone.
	export SHOP_PURCHASE_QUEUETARGET=${SHOP_PURCHASE_QUEUETARGET:-0s}
	# The fair line orders the buyers by when the shop read each request. Unpinned, the 1500
	# buyers' generator takes the instances' CPU in the burst, one instance's lock requests reach
	# ZooKeeper a few milliseconds after the other's, and at 15 arrivals a millisecond that
	# reorders dozens (66-100% to the first arrivals in six runs; 94-100% pinned).
	local pin=""
	if command -v taskset >/dev/null && [ "$(nproc)" -gt 1 ]; then
		pin="taskset -c $(($(nproc) - 1))"
		log "the load generator runs on CPU $(($(nproc) - 1)) alone (taskset), the shops anywhere"
	fi
	for mode in off on batched; do
		case $mode in
		off) export SHOP_LOCK_ENABLED=false SHOP_PURCHASE_STRATEGY=seed label="lock off" ;;
		on) export SHOP_LOCK_ENABLED=true SHOP_PURCHASE_STRATEGY=seed label="lock on" ;;
		batched) export SHOP_LOCK_ENABLED=true SHOP_PURCHASE_STRATEGY=batch label="lock on, batched" ;;
		esac
		up
		log "$label: ${DEMO_REQUESTS:-1500} purchases, ${DEMO_CONCURRENCY:-1500} at once, demo.maxSleep $SHOP_DEMO_MAXSLEEP"
		$pin "$loadtest" --url "$(urls)" --label "$label" --requests "${DEMO_REQUESTS:-1500}" \
			--concurrency "${DEMO_CONCURRENCY:-1500}" --buyers "${DEMO_BUYERS:-0}" --out "$out/lock-$mode.json" >/dev/null
	done
	down
	trap stop_ensemble EXIT
	echo
	"$loadtest" compare --html "$out/${report}.html" --svg "$out/${chart}.svg" \
		--expect oversell,exact,exact "$out/lock-off.json" "$out/lock-on.json" "$out/lock-batched.json"
	echo
	echo "report: $out/${report}.html (chart: $out/${chart}.svg)"
}

# stop_ensemble stops the cluster demo's ZooKeeper ensemble, if this is one.
stop_ensemble() {
	[ -z "${cluster:-}" ] || "$root/scripts/stack.sh" ensemble-down "$root/.stack/cluster-zk"
}

# cluster: compare on three Galera nodes, three ZooKeeper servers and three instances.
cluster() {
	"$root/scripts/stack.sh" galera "$root/.stack/galera" >/dev/null
	trap stop_ensemble EXIT
	"$root/scripts/stack.sh" ensemble "$root/.stack/cluster-zk" 22280 >/dev/null
	log "Galera nodes 127.0.0.1:23301-23303 and ZooKeeper servers 127.0.0.1:22281-22283 are up"
	compare
}

# field JSON KEY: a scalar field of a flat JSON object (enough for the shop's answers).
field() { sed -n "s/.*\"$2\":\"\{0,1\}\([^\",}]*\).*/\1/p" <<<"$1"; }

# get PORT PATH [curl options]: the body of an instance's answer; a failure names the port.
get() {
	local port=$1 path=$2 body
	shift 2
	body=$(curl -fsS "$@" "http://127.0.0.1:$port$path" 2>&1) || die "GET :$port$path failed ($body); is the instance up? make serve starts them"
	printf '%s' "$body"
}

failover() {
	[ -x "$shop" ] || die "build first: make build"
	export SHOP_ORDERS_PAYTIMEOUT=${SHOP_ORDERS_PAYTIMEOUT:-20s} SHOP_ZOOKEEPER_SESSIONTIMEOUT=${SHOP_ZOOKEEPER_SESSIONTIMEOUT:-10s}
	log "starting the instances again with orders.payTimeout $SHOP_ORDERS_PAYTIMEOUT and zookeeper.sessionTimeout $SHOP_ZOOKEEPER_SESSIONTIMEOUT, so that the takeover and the expiry show within a minute"
	up
	local leader="" other="" start=$SECONDS
	until [ -n "$leader" ]; do
		for port in $ports; do
			if [ "$(field "$(get "$port" /leader)" leader)" = true ]; then leader=$port; fi
		done
		[ $((SECONDS - start)) -lt 60 ] || { log "no leader among :${ports// /, :} within 60s; see $state/shop-*.log"; exit 1; }
		[ -n "$leader" ] || sleep 0.5
	done
	for port in $ports; do [ "$port" = "$leader" ] || other=$port; done
	log "the sweeper's leader is :$leader ($(field "$(get "$leader" /leader)" leaderId))"
	local ids=()
	for _ in 1 2 3; do ids+=("$(field "$(get "$other" /goods-stock/1)" orderId)"); done
	get "$other" "/orders/${ids[0]}/pay" -X POST >/dev/null
	log "orders ${ids[*]} placed, ${ids[0]} paid; the other two expire after $SHOP_ORDERS_PAYTIMEOUT unpaid"
	log "SIGKILL the leader (pid $(cat "$state/shop-$leader.pid")): no goodbye, its ZooKeeper session lives on until it times out"
	kill -KILL "$(cat "$state/shop-$leader.pid")"
	rm -f "$state/shop-$leader.pid"
	start=$SECONDS
	until [ "$(field "$(get "$other" /leader)" leader)" = true ]; do
		[ $((SECONDS - start)) -lt 120 ] || die ":$other did not take over within 120s"
		sleep 0.5
	done
	log ":$other leads $((SECONDS - start))s after the kill (the session timeout, plus ZooKeeper's tick)"
	until [ "$(field "$(get "$other" "/orders/${ids[2]}")" status)" = expired ]; do
		[ $((SECONDS - start)) -lt 180 ] || die "the unpaid orders did not expire within 180s"
		sleep 0.5
	done
	for id in "${ids[@]}"; do log "order $id: $(field "$(get "$other" "/orders/$id")" status)"; done
	sleep 1 # an instance counts a goods' orders at most once a second (ordersAgeMs says how long ago)
	log "goods 1: $(get "$other" /goods/1)"
	log "the survivor's log: $state/shop-$other.log (grep leading); make demo-stop stops it, make serve starts both again"
}

report=demo-report chart=demo-chart
case "${1:-compare}" in
compare) compare ;;
cluster)
	cluster=1 ports=${CLUSTER_PORTS:-8091 8092 8093} report=cluster-report chart=cluster-chart
	cluster
	;;
up)
	up
	[ -n "${DEMO_QUIET:-}" ] && exit 0
	cat >&2 <<MSG
demo: stock of goods 1 is 100. Try:
  curl http://127.0.0.1:${ports%% *}/goods-stock/1     # buy one (an unpaid order expires after ${SHOP_ORDERS_PAYTIMEOUT:-15m})
  curl -X POST http://127.0.0.1:${ports%% *}/orders/ID/pay   # pay it (ID: the answer's orderId)
  curl http://127.0.0.1:${ports%% *}/goods/1           # stock and order rows
  http://127.0.0.1:${ports%% *}/dashboard              # the live dashboard (both instances), in a browser
  curl http://127.0.0.1:${ports%% *}/metrics           # Prometheus metrics
  make failover                           # restart both with a 20s pay timeout, kill the sweeper's
                                          # leader, watch the other take over and expire orders
  make demo-stop                          # stop the instances
MSG
	;;
down) down ;;
failover) failover ;;
*) echo "usage: $0 compare|cluster|up|down|failover" >&2; exit 2 ;;
esac
