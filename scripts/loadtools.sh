#!/usr/bin/env bash
# The k6 script and the JMeter plan, run so that a failure is an exit status, never a pass.
#
#   scripts/loadtools.sh k6                      the local check (make k6): starts the demo's two
#                                                instances (lock on), stock 20, 50 buyers; exactly 20
#                                                bought, 30 told sold out; then the same with buyer ids;
#                                                then a Zipf crowd over goods 1-10 of stock 3 each,
#                                                exact goods by goods
#   scripts/loadtools.sh k6 URLS [BUYERS]        the seed's scenario against URLS (comma separated),
#                                                BUYERS (1500) buyers at once; fails unless every
#                                                answer is a 200 or a 409 with the shop's JSON
#   scripts/loadtools.sh jmeter                  the local check (make jmeter), as for k6
#   scripts/loadtools.sh jmeter HOST PORT [THREADS]
#                                                the seed's JMeter plan against http://HOST:PORT,
#                                                THREADS (1500) threads; fails unless every sample is a
#                                                200 or a 409 that passed the plan's assertions
#
#   scripts/loadtools.sh helm                    build helm and kubectl-validate into bin/ if missing
#                                                (HELM_VERSION, KUBECTL_VALIDATE_VERSION), for the chart's
#                                                tests
#   scripts/loadtools.sh kube                    the chart's control plane into bin/ if missing:
#                                                kube-apiserver, kube-controller-manager,
#                                                kube-scheduler and kubectl built from k8s.io/kubernetes
#                                                (tools/kube),
#                                                kwok (KWOK_VERSION), and Debian's etcd-server
#   scripts/loadtools.sh install                 k6, helm and JMeter, each if missing (make loadtools;
#                                                make test-kube builds the control plane)
#
# k6 is built from the Go module proxy into bin/ if missing (K6_VERSION); JMeter is Debian's,
# installed if missing, and started through loadtest/jmeter/JMeterLauncher.java: Debian's
# JMeter 2.13 cannot load any plan with the XStream Debian ships beside it
# (ForbiddenClassException), and then exits 0 having sent nothing.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
K6_VERSION=${K6_VERSION:-v1.8.1}
HELM_VERSION=${HELM_VERSION:-v4.3.1}
KUBECTL_VALIDATE_VERSION=${KUBECTL_VALIDATE_VERSION:-v0.0.4}
KWOK_VERSION=${KWOK_VERSION:-v0.8.0}
buyers=50
stock=20
users=30 # buyer mode

log_prefix=loadtools
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

# serving: make serve's instances run (scripts/demo.sh's pid files, alive). The runs replace them
# with their own; at the end they are started again as make serve starts them (stock 100), or,
# when none ran, the runs' instances are stopped.
serving=""
for port in 8081 8082; do
	pidf=${DEMO_STATE:-$root/.stack/demo}/shop-$port.pid
	[ -f "$pidf" ] && alive "$(cat "$pidf")" && serving=1
done
leave() {
	if [ -n "$serving" ]; then
		log "starting make serve's instances again (stock 100), as they were before the runs"
		scripts/demo.sh up
	else
		scripts/demo.sh down
	fi
}
# The instances of the runs say nothing of what to try with them (DEMO_QUIET): make serve does.
export DEMO_QUIET=1

# start_shop starts the two instances for the seed's scenario: every buyer waits its turn (a closed
# loop, as make demo's), so the admission's queue target is off (purchase.queueTarget=0s).
start_shop() {
	trap leave EXIT
	SHOP_LOCK_ENABLED=true SHOP_PURCHASE_QUEUETARGET=0s scripts/demo.sh up
	bin/shop stock set --goods 1 --stock "$stock" --clear-orders --reset-fence
}

# open_shop starts them again as a sale runs them (the admission on, config.yaml's queue target),
# with a stock that does not run out, for an open loop; start_shop brings back the other.
open_shop() {
	SHOP_LOCK_ENABLED=true scripts/demo.sh up
	bin/shop stock set --goods 1 --stock 100000 --clear-orders
}

# many_goods sets goods 1-10 to stock 3 each for the sale of many goods, and waits out the
# sold-out marks; check_many_goods fails unless every goods' order rows equal the pieces sold.
many_goods() {
	bin/shop stock set --goods 1-10 --stock 3 --clear-orders
	sleep 1.2
}

check_many_goods() {
	local g stock orders
	for g in $(seq 10); do
		read -r stock orders < <(curl -sf "http://127.0.0.1:8081/goods/$g" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["stock"], d["orders"])')
		[ "$orders" = $((3 - stock)) ] || { log "$1: goods $g has $orders order rows for a stock that went 3 -> $stock"; exit 1; }
	done
	log "$1: every goods exact (order rows = pieces sold)"
}

# jwt_shop starts the instances again with auth.mode jwt and a fresh HS256 secret in
# out/jwt.secret, restocked; an anonymous purchase must then be refused (401). The limits,
# on by default with jwt, are turned off: every buyer of a load tool comes from this one
# address (limits.clientRate would count them all as one client).
jwt_shop() {
	scripts/demo.sh down
	mkdir -p out
	head -c 48 /dev/urandom | base64 | tr -d '\n' >out/jwt.secret
	chmod 600 out/jwt.secret
	SHOP_LOCK_ENABLED=true SHOP_PURCHASE_QUEUETARGET=0s SHOP_AUTH_MODE=jwt SHOP_AUTH_HMACSECRETFILE="$root/out/jwt.secret" \
		SHOP_LIMITS_BUYERRATE=0 SHOP_LIMITS_CLIENTRATE=0 scripts/demo.sh up
	bin/shop stock set --goods 1 --stock "$stock" --clear-orders
	local code
	code=$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:8081/goods-stock/1)
	[ "$code" = 401 ] || { log "auth.mode jwt: an anonymous purchase answered $code, want 401"; exit 1; }
}

# restock sets the stock again for the next run (stock set returns once every running instance
# answers from it).
restock() {
	bin/shop stock set --goods 1 --stock "$stock" --clear-orders
}

install_k6() {
	if [ ! -x bin/k6 ]; then
		log "building k6 $K6_VERSION from the Go module proxy into bin/ (a few minutes the first time)"
		GOBIN="$root/bin" go install "go.k6.io/k6@$K6_VERSION"
	fi
}

k6() {
	install_k6
	if [ $# -gt 0 ]; then
		log "k6: ${2:-1500} buyers against $1"
		bin/k6 run -e BASE_URLS="$1" -e BUYERS="${2:-1500}" loadtest/k6/seckill.js ||
			{ log "k6 failed (exit $?): a threshold did not hold or a target did not answer"; exit 1; }
		return
	fi
	start_shop
	bin/k6 run -q -e BASE_URLS=http://127.0.0.1:8081,http://127.0.0.1:8082 -e BUYERS=$buyers \
		-e EXPECT_STOCK=$stock loadtest/k6/seckill.js
	log "k6: thresholds held ($stock bought, every answer a 200 or a 409)"
	# An open loop (constant-arrival-rate after a 1 s ramp): buyers arrive on their own schedule,
	# past what the seed's purchase serves; the excess must hear 503 busy at once, nobody may time
	# out, and the sale must stay exact.
	open_shop
	bin/k6 run -q -e BASE_URLS=http://127.0.0.1:8081,http://127.0.0.1:8082 -e RATE="${K6_RATE:-1000}" -e DURATION=4s \
		-e RAMP_UP=1s loadtest/k6/seckill.js
	log "k6 open loop: thresholds held (every answer a 200 or 503 busy, no buyer timed out, exact)"
	start_shop
	# Buyer mode: $users buyers, $((buyers - users)) of them try twice: still the whole stock sold,
	# the repeats of those who bought answered already_bought.
	restock
	bin/k6 run -q -e BASE_URLS=http://127.0.0.1:8081,http://127.0.0.1:8082 -e BUYERS=$buyers -e USERS=$users \
		-e EXPECT_STOCK=$stock loadtest/k6/seckill.js
	log "k6 buyer mode: thresholds held ($stock bought by $users buyers, every answer a 200 or a 409)"
	many_goods
	bin/k6 run -q -e BASE_URLS=http://127.0.0.1:8081,http://127.0.0.1:8082 -e BUYERS=$buyers -e GOODS=1-10 -e SKEW=zipf:1.1 \
		loadtest/k6/seckill.js
	check_many_goods "k6 many goods"
	jwt_shop
	bin/k6 run -q -e BASE_URLS=http://127.0.0.1:8081,http://127.0.0.1:8082 -e BUYERS=$buyers -e JWT_SECRET_FILE="$root/out/jwt.secret" \
		-e EXPECT_STOCK=$stock loadtest/k6/seckill.js
	log "k6 with a token per buyer (auth.mode jwt): thresholds held ($stock bought)"
}

install_jmeter() {
	if [ ! -d /usr/share/jmeter ] || ! command -v javac >/dev/null; then
		apt_install jmeter default-jdk-headless
	fi
	cp="/usr/share/jmeter/bin/ApacheJMeter.jar:$(ls /usr/share/jmeter/lib/ext/*.jar /usr/share/jmeter/lib/*.jar | tr '\n' ':')"
	mkdir -p out/jmeter-launcher
	javac -cp "$cp" -d out/jmeter-launcher loadtest/jmeter/JMeterLauncher.java
}

jmeter() {
	local cp
	install_jmeter
	if [ $# -gt 0 ]; then
		[ $# -ge 2 ] || { echo "usage: $0 jmeter HOST PORT [THREADS]" >&2; exit 2; }
		local threads=${3:-1500}
		log "jmeter: $threads threads against http://$1:$2"
		jmeter_plan "$1" "$2" "$threads" 0
		local total bad
		total=$(grep -c . out/jmeter.csv || true)
		bad=$(awk -F, '($4 != 200 && $4 != 409) || $8 != "true"' out/jmeter.csv | grep -c . || true)
		log "jmeter: $total samples, $bad neither a 200 nor a 409 that passed the assertions (out/jmeter.csv, out/jmeter.log)"
		[ "$total" = "$threads" ] && [ "$bad" = 0 ] || { log "jmeter: FAILED"; exit 1; }
		return
	fi
	start_shop
	jmeter_run 0
	open_shop
	jmeter_open 127.0.0.1 8081 "${JMETER_RATE:-400}" 4
	start_shop
	# Buyer mode: $users buyers, $((buyers - users)) of them try twice: still the whole stock sold,
	# every other answer a 409 (sold out, or already bought for the repeats of those who bought).
	restock
	jmeter_run $users
	many_goods
	jmeter_plan 127.0.0.1 8081 $buyers 0 -Jgoods=1-10 -Jskew=zipf:1.1
	local failed
	failed=$(awk -F, '$8 != "true"' out/jmeter.csv | grep -c . || true)
	[ "$(grep -c . out/jmeter.csv)" = $buyers ] && [ "$failed" = 0 ] || { log "jmeter many goods: $failed failed assertions"; exit 1; }
	check_many_goods "jmeter many goods"
	jwt_shop
	bin/loadtest tokens --jwt-secret-file out/jwt.secret --buyers $buyers >out/tokens.csv
	jmeter_run 0 -Jtokens="$root/out/tokens.csv" -Jtokenheader=Authorization
}

# orders_of HOST PORT: goods 1's order rows, counted after this call began (the shop answers with
# a count up to a second old and says how old: ordersAgeMs).
orders_of() {
	python3 - "$1" "$2" <<'PY'
import json, sys, time, urllib.request
since = time.time()
for _ in range(40):
    g = json.load(urllib.request.urlopen(f"http://{sys.argv[1]}:{sys.argv[2]}/goods/1", timeout=10))
    if time.time() - g.get("ordersAgeMs", 0) / 1000 >= since:
        break
    time.sleep(0.1)
print(g["orders"])
PY
}

# jmeter_open HOST PORT RATE SECONDS: the open-loop plan (loadtest/jmeter/seckill-open.jmx), purchases
# of goods 1 arriving at RATE a second; every sample must pass (a 200, 409, 503 busy or 429 in time)
# and every order row must have its 200, when the shop on HOST:PORT answers /goods/1.
jmeter_open() {
	local before after total ok busy failed threads=$(($3 * $4))
	before=$(orders_of "$1" "$2")
	rm -f out/jmeter.csv out/jmeter-summary.csv
	java -cp "out/jmeter-launcher:$cp" -Djmeter.home=/usr/share/jmeter JMeterLauncher \
		-n -t loadtest/jmeter/seckill-open.jmx -Jhost="$1" -Jport="$2" -Jrate="$3" -Jduration="$4" \
		-Jresults=out/jmeter-summary.csv -l out/jmeter.csv -j out/jmeter.log
	[ -s out/jmeter.csv ] || { log "jmeter sent nothing (see out/jmeter.log)"; exit 1; }
	sleep 1 # a purchase under way when the plan stopped lands
	after=$(orders_of "$1" "$2")
	total=$(grep -c . out/jmeter.csv)
	ok=$(awk -F, '$4 == 200' out/jmeter.csv | grep -c . || true)
	busy=$(awk -F, '$4 == 503 || $4 == 429' out/jmeter.csv | grep -c . || true)
	failed=$(awk -F, '$8 != "true"' out/jmeter.csv | grep -c . || true)
	log "jmeter open loop: $3/s for $4 s, a thread an arrival: $total of $threads samples, the last sent $(awk -F, 'NR == 1 {a = $1} {b = $1} END {printf "%.1f", (b - a) / 1000}' out/jmeter.csv) s after the first, $ok bought (200), $busy refused (503 busy, 429), $failed failed; $((after - before - ok)) order rows beyond the 200s"
	[ "$total" = "$threads" ] && [ "$failed" = 0 ] && [ $((after - before)) = "$ok" ] ||
		{ log "jmeter open loop: FAILED (every arrival a sample that passed, every order row with its 200)"; exit 1; }
}

# jmeter_plan HOST PORT THREADS USERS [PROPERTIES...]: one run of the plan, out/jmeter.csv its
# samples; no CSV (the plan did not load, nothing was sent) is a failure.
# out/jmeter.csv is each thread's last sample (a patient buyer's answers before it are in
# out/jmeter-all.csv), one line a buyer.
jmeter_plan() {
	rm -f out/jmeter.csv out/jmeter-all.csv out/jmeter-summary.csv
	java -cp "out/jmeter-launcher:$cp" -Djmeter.home=/usr/share/jmeter JMeterLauncher \
		-n -t loadtest/jmeter/seckill.jmx -Jhost="$1" -Jport="$2" -Jthreads="$3" -Jusers="$4" "${@:5}" \
		-Jresults=out/jmeter-summary.csv -l out/jmeter-all.csv -j out/jmeter.log
	[ -s out/jmeter-all.csv ] || { log "jmeter sent nothing (see out/jmeter.log)"; exit 1; }
	# CSV columns: timeStamp,elapsed,label,responseCode,responseMessage,threadName,...: by thread, in order
	awk -F, '{ last[$6] = $0 } END { for (t in last) print last[t] }' out/jmeter-all.csv >out/jmeter.csv
	local came
	came=$(($(grep -c . out/jmeter-all.csv) - $(grep -c . out/jmeter.csv)))
	[ "$came" = 0 ] || log "jmeter: buyers came back $came times, as told"
}

# install_helm builds the chart's tools (tests/e2e/helm_chart_test.go) from the Go module proxy
# into bin/ if missing, a few minutes each once per machine: helm, and kubectl-validate, which
# embeds the Kubernetes API's OpenAPI schemas up to 1.30 and validates offline.
install_helm() {
	if [ ! -x bin/helm ]; then
		log "building helm $HELM_VERSION from the Go module proxy into bin/ (a few minutes the first time)"
		GOBIN="$root/bin" go install "helm.sh/helm/v4/cmd/helm@$HELM_VERSION"
	fi
	if [ ! -x bin/kubectl-validate ]; then
		log "building kubectl-validate $KUBECTL_VALIDATE_VERSION from the Go module proxy into bin/ (a few minutes the first time)"
		GOBIN="$root/bin" go install "sigs.k8s.io/kubectl-validate@$KUBECTL_VALIDATE_VERSION"
	fi
}

# install_kube builds the control plane of the chart's install test (tests/e2e/kube_test.go) into
# bin/ if missing: kube-apiserver, kube-controller-manager, kube-scheduler and kubectl from tools/kube (a
# module that requires k8s.io/kubernetes, pinned there, with its staging modules replaced by their
# published versions), and kwok; etcd is Debian's etcd-server. Cold, 523 s on two
# cores with empty Go caches (docs/testing.md); a no-op once built.
install_kube() {
	command -v etcd >/dev/null || apt_install etcd-server
	local c v minor ldflags
	# The version the programs report (helm checks the chart's kubeVersion against it), as
	# Kubernetes' own build stamps it: tools/kube/go.mod's k8s.io/kubernetes version.
	v=$(cd tools/kube && go list -m -f '{{.Version}}' k8s.io/kubernetes)
	minor=$(echo "$v" | cut -d. -f2)
	ldflags=""
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		ldflags="$ldflags -X $p.gitVersion=$v -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
	done
	for c in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
		if [ ! -x "bin/$c" ] || ! "bin/$c" --version 2>/dev/null | grep -q "$v"; then
			log "building $c $v from the Go module proxy into bin/ (tools/kube; minutes the first time)"
			(cd tools/kube && go build -trimpath -ldflags "$ldflags" -o "$root/bin/$c" "k8s.io/kubernetes/cmd/$c")
		fi
	done
	if [ ! -x bin/kwok ]; then
		log "building kwok $KWOK_VERSION from the Go module proxy into bin/"
		GOBIN="$root/bin" go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
	fi
}

# jmeter_run USERS [PROPERTIES...]: one run of the plan (USERS 0: anonymous buyers) and its checks.
jmeter_run() {
	jmeter_plan 127.0.0.1 8081 $buyers "$@"
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
k6) shift; k6 "$@" ;;
jmeter) shift; jmeter "$@" ;;
jmeter-open) shift; [ $# = 4 ] || { echo "usage: $0 jmeter-open HOST PORT RATE SECONDS" >&2; exit 2; }; cp=""; install_jmeter; jmeter_open "$@" ;;
helm) install_helm ;;
kube) install_kube ;;
install) install_k6; install_helm; cp=""; install_jmeter ;;
*) echo "usage: $0 k6 [URLS [BUYERS]] | jmeter [HOST PORT [THREADS]] | jmeter-open HOST PORT RATE SECONDS | helm | kube | install" >&2; exit 2 ;;
esac
