#!/usr/bin/env bash
# A Docker engine of the project's own and what the compose stack needs to run on a machine that
# reaches no image registry (make test-compose; ../docs/operations.md "The compose stack, tested").
#
#   scripts/containers.sh install  install Debian's docker.io and debootstrap if missing (apt)
#   scripts/containers.sh up       install them if missing, start the engine, build Compose v2
#                                  into bin/ and the stand-in images
#   scripts/containers.sh env      the variables that point docker and the compose file at them
#   scripts/containers.sh down     stop the engine by its pid file (its images stay cached)
#   scripts/containers.sh test     up, the compose test, down: whatever happened, the engine stops
#
# The engine (dockerd) has its own socket, data root and pid file under
# ~/.cache/seckill-zk/docker (CONTAINERS_STATE), writes no firewall rule (--iptables=false:
# containers reach each other and published ports on 127.0.0.1, nothing else) and gives its
# networks addresses from 10.79.0.0/16 only. The images live in its data root, outside the clone
# as the Go caches are, so a second run on the same machine builds nothing, from any clone; a
# fresh machine builds all:
# a Debian base by debootstrap, and from it a stand-in for each official image the compose file
# names (scripts/standins/; what each leaves unchecked is in docs/operations.md).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
log_prefix=containers
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

state=${CONTAINERS_STATE:-${XDG_CACHE_HOME:-$HOME/.cache}/seckill-zk/docker}
sock=$state/docker.sock
pidfile=$state/docker.pid
COMPOSE_VERSION=$(cd tools/compose && go list -m -f '{{.Version}}' github.com/docker/compose/v2)
base=seckill-standin/debian:bookworm

export DOCKER_HOST=unix://$sock
export DOCKER_CONFIG=$state/config # the compose plugin below; the user's ~/.docker is left alone
plugin=$root/bin/docker-compose

# The stand-ins: the variable the compose file reads, the image it names by default, and the
# stand-in's directory under scripts/standins.
standins=(
	"GO_IMAGE golang:1.26 golang"
	"BASE_IMAGE gcr.io/distroless/static-debian12:nonroot static"
	"ZOOKEEPER_IMAGE zookeeper:3.8 zookeeper"
	"MYSQL_IMAGE mysql:8.0 mariadb"
	"MARIADB_IMAGE mariadb:11.4 mariadb"
	"PROMETHEUS_IMAGE prom/prometheus:v3.5.0 prometheus"
	"GRAFANA_IMAGE grafana/grafana:12.1.0 grafana"
)

install() {
	command -v dockerd >/dev/null || apt_install --no-install-recommends docker.io
	command -v debootstrap >/dev/null || apt_install --no-install-recommends debootstrap
}

engine_up() {
	mkdir -p "$state"
	if [ -f "$pidfile" ] && alive "$(cat "$pidfile")" && docker version >/dev/null 2>&1; then
		return
	fi
	log "starting dockerd (socket $sock, data root $state/root)"
	dockerd --data-root "$state/root" --exec-root "$state/exec" --host "$DOCKER_HOST" --pidfile "$pidfile" \
		--iptables=false --ip6tables=false --bip 10.79.0.1/24 --default-address-pool base=10.79.0.0/16,size=24 \
		>"$state/dockerd.log" 2>&1 &
	for _ in $(seq 1 300); do
		docker version >/dev/null 2>&1 && return
		sleep 0.1
	done
	tail -20 "$state/dockerd.log" >&2
	die "dockerd did not answer within 30 s (log: $state/dockerd.log)"
}

engine_down() {
	if [ -f "$pidfile" ]; then
		stop_pid "$(cat "$pidfile")" dockerd TERM 30
		rm -f "$pidfile"
	fi
	# What the engine leaves mounted under its state (the default network namespace, the data
	# root's bind mount), deepest first, so that the directory can be removed.
	awk -v d="$state/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r | while read -r m; do
		umount -l "$m" 2>/dev/null || true
	done
}

# compose_plugin builds Compose v2 from tools/compose into bin/ and makes it this engine's plugin
# (docker compose ...).
compose_plugin() {
	if [ ! -x "$plugin" ] || ! "$plugin" version 2>/dev/null | grep -q "$COMPOSE_VERSION"; then
		log "building Compose $COMPOSE_VERSION from the Go module proxy into bin/ (tools/compose; minutes the first time)"
		(cd tools/compose && go build -trimpath -ldflags "-X github.com/docker/compose/v2/internal.Version=$COMPOSE_VERSION" \
			-o "$plugin" github.com/docker/compose/v2/cmd)
	fi
	mkdir -p "$DOCKER_CONFIG/cli-plugins"
	ln -sf "$plugin" "$DOCKER_CONFIG/cli-plugins/docker-compose"
}

has_image() { docker image inspect "$1" >/dev/null 2>&1; }

# debian_base: Debian bookworm (minbase) from the mirror the machine's apt uses.
debian_base() {
	has_image "$base" && return
	local dir mirror
	dir=$(mktemp -d "$state/debootstrap.XXXXXX")
	mirror=$(grep -hm1 '^URIs:.*debian$' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}')
	mirror=${mirror:-http://deb.debian.org/debian}
	log "debootstrap bookworm from $mirror (a few minutes the first time)"
	debootstrap --variant=minbase bookworm "$dir" "$mirror" >"$state/debootstrap.log" 2>&1 ||
		die "debootstrap failed (log: $state/debootstrap.log)"
	tar -C "$dir" -c . | docker import - "$base" >/dev/null
	rm -rf "$dir"
}

# standin NAME: builds scripts/standins/NAME as seckill-standin/NAME:local, from the Debian base,
# with the host's network for its apt steps.
standin() {
	local name=$1 tag=seckill-standin/$1:local ctx
	has_image "$tag" && return
	ctx=$(mktemp -d "$state/ctx.XXXXXX")
	cp -a "scripts/standins/$name/." "$ctx/"
	case $name in
	golang) golang_context "$ctx" ;;
	esac
	log "building the stand-in $tag"
	# The classic builder: the client has no buildx plugin, and the steps need the host's network.
	DOCKER_BUILDKIT=0 docker build --network host --build-arg "BASE=$base" -t "$tag" "$ctx" >"$state/build-$name.log" 2>&1 || {
		tail -30 "$state/build-$name.log" >&2
		die "building $tag failed (log: $state/build-$name.log)"
	}
	rm -rf "$ctx"
}

# golang_context puts into the golang stand-in's build context this machine's Go toolchain
# (hard links, no copy) and a module proxy holding every module the project's go.mod needs,
# so that the Dockerfile's go mod download needs no network.
golang_context() {
	local ctx=$1
	cp -al "$(go env GOROOT)" "$ctx/go" 2>/dev/null || cp -a "$(go env GOROOT)" "$ctx/go"
	GOFLAGS=-mod=mod GOMODCACHE="$ctx/mod" go mod download
	mv "$ctx/mod/cache/download" "$ctx/goproxy"
	chmod -R u+w "$ctx/mod" && rm -rf "$ctx/mod"
}

images() {
	debian_base
	local s
	for s in "${standins[@]}"; do
		set -- $s
		standin "$3"
	done
}

print_env() {
	echo "export DOCKER_HOST=$DOCKER_HOST DOCKER_CONFIG=$DOCKER_CONFIG"
	local s
	for s in "${standins[@]}"; do
		set -- $s
		echo "export $1=seckill-standin/$3:local # stands in for $2"
	done
}

# up: the engine, then Compose's build (CPU) beside the images' (mostly apt's downloads).
up() {
	install
	engine_up
	compose_plugin &
	local compose=$!
	images
	wait "$compose" || die "building Compose failed"
	docker image prune -f >/dev/null # the stand-ins' build stages
}

case ${1:-} in
install) install ;;
up) up ;;
images) install; engine_up; images ;;
env) print_env ;;
down) engine_down ;;
test)
	trap engine_down EXIT
	up
	eval "$(print_env)"
	go test -count=1 -timeout 45m -run '^(TestTheComposeStack|TestTheComposeClusterProfile)$' -v ./tests/e2e/
	;;
*) echo "usage: $0 install | up | env | down | test" >&2; exit 2 ;;
esac
