# seckill-zk. `make demo` and `make test` are the two commands the README promises.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
export PATH := /usr/local/go/bin:$(HOME)/go/bin:$(PATH)
GO ?= go
# The commit, for shop version and /healthz, where the toolchain stamps none (GOFLAGS=-buildvcs=false).
BUILDINFO := github.com/seckill-zk/seckill-zk/internal/buildinfo
LDFLAGS := -X $(BUILDINFO).commit=$(shell git rev-parse HEAD 2>/dev/null) -X $(BUILDINFO).modified=$(shell git status --porcelain 2>/dev/null | grep -q . && echo true)

.PHONY: all build loadtools test test-kube test-compose vet fmt-check openapi-lint unit interop bench bench-shop chaos galera-crash serve failover k6 jmeter stack-up stack-down stack-status galera-up galera-down cluster-demo demo demo-stop clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/shop ./cmd/shop
	$(GO) build -o bin/loadtest ./loadtest

## stack-up: install (apt) and start ZooKeeper and MariaDB if they are missing; idempotent
stack-up:
	scripts/stack.sh up

## stack-down: stop what stack-up started
stack-down:
	scripts/stack.sh down

stack-status:
	scripts/stack.sh status

## galera-up: a 3-node MariaDB Galera cluster on 127.0.0.1:23301-23303 (Debian's galera-4,
## mariabackup state transfer; state in .stack/galera) for the cluster tests; idempotent
galera-up:
	scripts/stack.sh galera $(CURDIR)/.stack/galera

## galera-down: stop that cluster's nodes
galera-down:
	scripts/stack.sh galera-down $(CURDIR)/.stack/galera

vet:
	$(GO) vet ./...

## openapi-lint: internal/api/openapi.yaml under Redocly's recommended rules (pinned; npm from Debian if missing)
REDOCLY := @redocly/cli@2.77.0
openapi-lint:
	@command -v npx >/dev/null || { echo "openapi-lint: apt-get install npm"; apt-get update -q >/dev/null && apt-get install -y -q npm >/dev/null; }
	npx --yes $(REDOCLY) lint --format=summary internal/api/openapi.yaml

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "not gofmt-ed:"; echo "$$out"; exit 1; fi

## test: bring the stack and the Galera cluster up, install k6, helm and JMeter, vet, lint the OpenAPI
## description, and run every test with the race detector
test: stack-up galera-up build loadtools fmt-check vet openapi-lint
	$(GO) test -race -count=1 -timeout 30m -skip '^(TestTheChartOnAControlPlane|TestTheComposeStack|TestTheComposeClusterProfile)$$' ./...

## test-kube: the chart on a Kubernetes control plane built here (tests/e2e/kube_test.go): helm
## install --wait of every value set into a PodSecurity-restricted namespace with the operators'
## CRDs, an upgrade's rollout against the PodDisruptionBudget, rollback, uninstall, and the API
## server's refusals. kube-apiserver, kube-controller-manager, kube-scheduler, kubectl and kwok are built
## into bin/ once per machine (scripts/loadtools.sh kube; docs/testing.md has the cold and warm
## times); .ci/run runs it after make test.
test-kube: build
	scripts/loadtools.sh helm
	scripts/loadtools.sh kube
	$(GO) test -count=1 -timeout 20m -run '^TestTheChartOnAControlPlane$$' -v ./tests/e2e/

## test-compose: the demo stack in real containers (tests/e2e/compose_test.go): docker compose up
## --build --wait, the loadtest exact and with the lock off, a shop killed mid-sale, the cluster
## profile, down -v. scripts/containers.sh installs Debian's docker.io, starts an engine of the
## project's own (its socket and data root under ~/.cache/seckill-zk/docker, no firewall rules),
## builds Compose v2 into bin/ (tools/compose) and stand-ins for the official images, and stops the engine at
## the end; .ci/run runs it after make test-kube.
test-compose: build
	scripts/containers.sh test

## unit: every package's tests that need no server: go test -short, where a test that needs one
## skips and says so (e2e.Integration); the examples run against ZooKeeper and cannot skip
unit:
	$(GO) test -race -count=1 -short -skip '^Example' ./...

## interop: Go recipes against Java Curator 5 (Debian's jars) on the same paths
interop: stack-up
	$(GO) test -race -count=1 -run Interop -v ./internal/zklock/

## bench: zklock benchmarks against the local ZooKeeper, then the ratios the README reports.
## The runs repeat (BENCH_RUNS of them), and within each the contenders alternate, so that
## the server's drifting speed weighs on every contender alike. BENCH_HANDOFFS is the
## number of contended hand-offs each contender makes per run and waiter count.
bench: stack-up
	$(GO) test -c -o bin/zklock.test ./internal/zklock/
	for i in $$(seq $${BENCH_RUNS:-3}); do \
		(cd internal/zklock && \
			../../bin/zklock.test -test.run '^$$' -test.bench Uncontended -test.benchtime 2s -test.v && \
			../../bin/zklock.test -test.run '^$$' -test.bench Contended -test.benchtime $${BENCH_HANDOFFS:-4000}x -test.v) || exit 1; \
	done | $(GO) run ./cmd/benchtable

## bench-shop: the purchase strategies side by side on two instances each (seed, batch, atomic):
## every buyer buys, a sell-out, how time and memory grow with the crowd, and each strategy on one
## MariaDB, one Galera node and three Galera nodes, a sale of many goods against one, and what
## auth.mode jwt and the limits cost, batch beside the Redis + Lua design, and (i) the spike: open
## loops at 0.5-8x each sale's capacity, (j) one buyer who spends no stock beside honest ones, (k) the waiting room
## and (h) where each strategy's time goes (CPU per process, ZooKeeper and MariaDB counters per purchase). Prints the table (also in out/bench-shop.txt, (a)'s chart
## in out/bench-shop.svg, (i)'s in out/bench-shop-spike.svg). BENCH_SHOP_BUYERS,
## _CONCURRENCY, _ROUNDS, _SIZES change it; BENCH_SHOP_SPIKE=only runs (i) alone (about 5 minutes),
## BENCH_SHOP_STARVE=only (j) alone (about 3 minutes);
## BENCH_SHOP_ROOM=only (k) alone, BENCH_SHOP_COST=only (h) alone.
bench-shop: stack-up galera-up
	mkdir -p out
	rm -f out/bench-shop.txt out/bench-shop.svg # a run that measured nothing then fails at the cat below
	@echo "bench-shop: (d), (a)-(c), 5 rounds each, then (e) many goods, (f) who may do what, (g) the Redis design, (i) the spike, (j) one buyer who spends no stock, (k) the waiting room, (h) where the time goes: 30-50 minutes; the whole log in out/bench-shop.log"
	BENCH_SHOP_TABLE=$(CURDIR)/out/bench-shop.txt BENCH_SHOP_CHART=$(CURDIR)/out/bench-shop.svg $(GO) test -count=1 -timeout 90m -run '^$$' \
		-bench '^BenchmarkShop$$' -benchtime 1x ./tests/e2e/ 2>&1 | tee out/bench-shop.log | grep --line-buffered '^bench-shop:' \
		|| { tail -50 out/bench-shop.log; exit 1; }
	cat out/bench-shop.txt

## galera-crash: all three nodes of a Galera cluster of its own SIGKILLed together mid-sale and
## recovered as an operator would (the most advanced node bootstraps), for
## innodb_flush_log_at_trx_commit 1, 2 and 0, and (Jepsen's shape) split 1 | 2 first, at 1;
## GALERA_CRASH_RUNS times each (default 3): how many acknowledged purchases and payments
## survive, every history checked. About 4 minutes a run.
galera-crash: stack-up
	mkdir -p out
	GALERA_CRASH_RUNS=$${GALERA_CRASH_RUNS:-3} $(GO) test -count=1 -timeout 90m -run '^(TestGaleraWholeClusterCrash|TestGaleraSplitThenCrashed)$$' -v ./internal/repo/ \
		>out/galera-crash.log 2>&1; status=$$?; \
		grep -E '^ *(--- |galera_crash_test.go|recovered:|bootstrap:)' out/galera-crash.log | tee out/galera-crash.txt; exit $$status

## chaos: the fault scenarios of `make test` with the seed's numbers (1500 buyers, stock 100, 25 a second):
## a ZooKeeper leader, then a follower, killed mid-sale; MariaDB crashed and restarted;
## one of two instances SIGKILLed; both instances' links jittered 50-200 ms; then the
## partitions, on a network of network namespaces (tests/e2e/partition_test.go): an instance
## cut from ZooKeeper, then from MariaDB, while it holds the lock; the ZooKeeper leader
## isolated with an instance; 5% loss on every link.
## Prints the tables (also in out/chaos.txt and out/partitions.txt).
chaos: stack-up
	mkdir -p out
	rm -f out/chaos.txt out/partitions.txt # a run that ran no scenario then fails at the cat below
	@echo "chaos: nine fault scenarios, about eleven minutes; each reports as it ends (go test -v)"
	CHAOS_BUYERS=$${CHAOS_BUYERS:-1500} CHAOS_STOCK=$${CHAOS_STOCK:-100} CHAOS_RATE=$${CHAOS_RATE:-25} \
		CHAOS_TABLE=$(CURDIR)/out/chaos.txt PARTITION_TABLE=$(CURDIR)/out/partitions.txt \
		$(GO) test -race -count=1 -timeout 30m -run '^(TestChaos|TestPartitions)$$' -v ./tests/e2e/
	cat out/chaos.txt out/partitions.txt

## demo: the seed's scenario (1500 buyers, stock 100) on two instances, lock off then on;
## tables side by side, the verdict, and out/demo-report.html with a chart per run
demo: stack-up build
	scripts/demo.sh compare

## cluster-demo: the demo's three runs on 3 Galera nodes, 3 ZooKeeper servers and 3 instances,
## each instance on its own node and server; the table and out/cluster-report.html
cluster-demo: stack-up build
	scripts/demo.sh cluster

## loadtools: build k6, helm and kubectl-validate into bin/ (Go module proxy) and install Debian's JMeter, if missing
loadtools:
	scripts/loadtools.sh install

## k6: build k6 (Go module proxy) and run loadtest/k6/seckill.js briefly against two local instances
k6: stack-up build
	scripts/loadtools.sh k6

## jmeter: run loadtest/jmeter/seckill.jmx in non-GUI mode with Debian's jmeter against a local instance
jmeter: stack-up build
	scripts/loadtools.sh jmeter

## serve: stack up, stock 100, two shop instances left serving on :8081 and :8082
serve: stack-up build
	scripts/demo.sh up

## failover: start the two instances again with a 20 s pay timeout, SIGKILL the one that sweeps
## expired orders and watch the other take over the election and expire the unpaid orders
failover: stack-up build
	scripts/demo.sh failover

## demo-stop: stop the instances `make serve` started
demo-stop:
	scripts/demo.sh down

clean:
	rm -rf bin out
