#!/usr/bin/env bash
# Proves that the k6 script and the JMeter plan run here: each starts the demo's two
# instances (lock on), sets stock 20, sends 50 buyers and checks that exactly 20 bought
# and 30 were told sold out. Small on purpose; point the tools at a bigger setup by hand
# (see the README).
#
#   scripts/loadtools.sh k6       builds k6 from the Go module proxy into bin/ if missing
#   scripts/loadtools.sh jmeter   installs Debian's jmeter if missing
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
K6_VERSION=${K6_VERSION:-v1.8.1}
buyers=50
stock=20
users=30 # buyer mode

log() { printf 'loadtools: %s\n' "$*" >&2; }

start_shop() {
	trap 'scripts/demo.sh down' EXIT
	SHOP_LOCK_ENABLED=true scripts/demo.sh up
	bin/shop stock set --goods 1 --stock "$stock" --clear-orders --reset-fence
}

# restock sets the stock again for the next run and waits out the instances' sold-out mark
# (a restock shows within a second).
restock() {
	bin/shop stock set --goods 1 --stock "$stock" --clear-orders
	sleep 1.2
}

k6() {
	if [ ! -x bin/k6 ]; then
		log "building k6 $K6_VERSION from the Go module proxy (a few minutes the first time)"
		GOBIN="$root/bin" go install "go.k6.io/k6@$K6_VERSION"
	fi
	start_shop
	bin/k6 run -q -e BASE_URLS=http://127.0.0.1:8081,http://127.0.0.1:8082 -e BUYERS=$buyers \
		-e EXPECT_STOCK=$stock loadtest/k6/seckill.js
	log "k6: thresholds held ($stock bought, every answer a 200 or a 409)"
	# Buyer mode: $users buyers, $((buyers - users)) of them try twice: still the whole stock sold,
	# the repeats of those who bought answered already_bought.
	restock
	bin/k6 run -q -e BASE_URLS=http://127.0.0.1:8081,http://127.0.0.1:8082 -e BUYERS=$buyers -e USERS=$users \
		-e EXPECT_STOCK=$stock loadtest/k6/seckill.js
	log "k6 buyer mode: thresholds held ($stock bought by $users buyers, every answer a 200 or a 409)"
}

jmeter() {
	if [ ! -d /usr/share/jmeter ]; then
		log "apt-get install jmeter"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jmeter >/dev/null
	fi
	local cp
	cp="/usr/share/jmeter/bin/ApacheJMeter.jar:$(ls /usr/share/jmeter/lib/ext/*.jar /usr/share/jmeter/lib/*.jar | tr '\n' ':')"
	mkdir -p out/jmeter-launcher
	javac -cp "$cp" -d out/jmeter-launcher loadtest/jmeter/JMeterLauncher.java
	start_shop
	jmeter_run 0
	# Buyer mode: $users buyers, $((buyers - users)) of them try twice: still the whole stock sold,
	# every other answer a 409 (sold out, or already bought for the repeats of those who bought).
	restock
	jmeter_run $users
}

# jmeter_run USERS: one run of the plan (USERS 0: anonymous buyers) and its checks.
jmeter_run() {
	rm -f out/jmeter.csv out/jmeter-summary.csv
	java -cp "out/jmeter-launcher:$cp" -Djmeter.home=/usr/share/jmeter JMeterLauncher \
		-n -t loadtest/jmeter/seckill.jmx -Jthreads=$buyers -Jport=8081 -Jusers="$1" \
		-Jresults=out/jmeter-summary.csv -l out/jmeter.csv -j out/jmeter.log
	# CSV columns: timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,...
	local total ok refused failed
	total=$(grep -c . out/jmeter.csv)
	ok=$(awk -F, '$4 == 200' out/jmeter.csv | grep -c . || true)
	refused=$(awk -F, '$4 == 409' out/jmeter.csv | grep -c . || true)
	failed=$(awk -F, '$8 != "true"' out/jmeter.csv | grep -c . || true)
	log "jmeter (users $1): $total samples, $ok bought (200), $refused sold out or already bought (409), $failed failed assertions"
	if [ "$total" != $buyers ] || [ "$ok" != $stock ] || [ "$refused" != $((buyers - stock)) ] || [ "$failed" != 0 ]; then
		log "jmeter: expected $buyers samples: $stock bought, $((buyers - stock)) refused, none failed"
		exit 1
	fi
}

case "${1:-}" in
k6) k6 ;;
jmeter) jmeter ;;
*) echo "usage: $0 k6|jmeter" >&2; exit 2 ;;
esac
