#!/usr/bin/env bash
# Local stack for seckill-zk without Docker: ZooKeeper and MariaDB from Debian's packages.
#
#   scripts/stack.sh up      install what is missing, start what is not running, wait until both answer
#   scripts/stack.sh down    stop only what "up" started (tracked in .stack/)
#   scripts/stack.sh status  say what answers
#
# Idempotent. State lives in .stack/ (git-ignored). Environment overrides:
#   ZK_PORT (2181), MYSQL_HOST (127.0.0.1), MYSQL_PORT (3306),
#   SHOP_DB_USER (seckill), SHOP_DB_PASSWORD (seckill), SHOP_DB_NAME (seckill)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
state="$root/.stack"
zk_port=${ZK_PORT:-2181}
mysql_host=${MYSQL_HOST:-127.0.0.1}
mysql_port=${MYSQL_PORT:-3306}
db_user=${SHOP_DB_USER:-seckill}
db_pass=${SHOP_DB_PASSWORD:-seckill}
db_name=${SHOP_DB_NAME:-seckill}

log() { printf 'stack: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

zk_ok() {
	local reply
	reply=$( { exec 3<>"/dev/tcp/127.0.0.1/$zk_port" && printf ruok >&3 && timeout 2 cat <&3; } 2>/dev/null || true)
	[ "$reply" = imok ]
}

apt_updated=
apt_install() {
	if [ "$(id -u)" != 0 ]; then die "need root to apt-get install $*"; fi
	if [ -z "$apt_updated" ]; then
		log "apt-get update"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
		apt_updated=1
	fi
	log "apt-get install $*"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

wait_for() { # wait_for SECONDS DESCRIPTION COMMAND...
	local secs=$1 what=$2
	shift 2
	for _ in $(seq 1 $((secs * 5))); do
		if "$@"; then return 0; fi
		sleep 0.2
	done
	die "$what did not come up within ${secs}s (logs in $state)"
}

zk_up() {
	if zk_ok; then log "ZooKeeper answers on 127.0.0.1:$zk_port"; return; fi
	if port_open 127.0.0.1 "$zk_port"; then
		die "port $zk_port is taken by something that does not answer ruok; if it is ZooKeeper, add 4lw.commands.whitelist=ruok,... to its config"
	fi
	if [ ! -f /usr/share/java/zookeeper.jar ]; then apt_install zookeeper; fi
	command -v java >/dev/null || apt_install default-jre-headless
	mkdir -p "$state/zookeeper/data"
	cat >"$state/zookeeper/zoo.cfg" <<CFG
tickTime=2000
initLimit=10
syncLimit=5
dataDir=$state/zookeeper/data
clientPort=$zk_port
clientPortAddress=127.0.0.1
maxClientCnxns=0
minSessionTimeout=1000
maxSessionTimeout=60000
admin.enableServer=false
4lw.commands.whitelist=*
autopurge.purgeInterval=1
# A development and test server: no fsync per transaction. Tests and
# benchmarks then measure the clients, not the disk's drifting fsync latency.
forceSync=no
CFG
	local cp=/etc/zookeeper/conf:/usr/share/java/zookeeper.jar
	for jar in zookeeper-jute slf4j-api slf4j-simple netty-handler netty-common netty-buffer netty-transport netty-resolver netty-codec netty-transport-native-epoll netty-transport-native-unix-common metrics-core; do
		[ -f "/usr/share/java/$jar.jar" ] && cp="$cp:/usr/share/java/$jar.jar"
	done
	log "starting ZooKeeper on 127.0.0.1:$zk_port (data in $state/zookeeper)"
	nohup java -Xmx512m -Dzookeeper.log.dir="$state/zookeeper" -cp "$cp" \
		org.apache.zookeeper.server.quorum.QuorumPeerMain "$state/zookeeper/zoo.cfg" \
		>"$state/zookeeper/server.log" 2>&1 </dev/null &
	echo $! >"$state/zookeeper/pid"
	wait_for 60 ZooKeeper zk_ok
	log "ZooKeeper is up (pid $(cat "$state/zookeeper/pid"))"
}

# mysql_root runs SQL as an administrator: over the unix socket first (a fresh Debian
# install lets root in only that way), then over TCP as root with an empty password.
mysql_root() {
	local client
	client=$(command -v mariadb || command -v mysql) || die "no mariadb client"
	if "$client" -uroot -e 'select 1' >/dev/null 2>&1; then
		"$client" -uroot "$@"
	else
		"$client" -uroot -h"$mysql_host" -P"$mysql_port" "$@"
	fi
}

mysql_up() {
	if ! port_open "$mysql_host" "$mysql_port"; then
		[ "$mysql_host" = 127.0.0.1 ] || [ "$mysql_host" = localhost ] || die "MySQL at $mysql_host:$mysql_port does not answer"
		command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ] || apt_install mariadb-server mariadb-client
		install -d -o mysql -g mysql /run/mysqld
		if [ ! -d /var/lib/mysql/mysql ]; then
			log "initialising /var/lib/mysql"
			mariadb-install-db --user=mysql --datadir=/var/lib/mysql >/dev/null
		fi
		mkdir -p "$state/mariadb"
		log "starting MariaDB on $mysql_host:$mysql_port"
		nohup /usr/sbin/mariadbd --user=mysql --bind-address=127.0.0.1 --port="$mysql_port" \
			--max-connections=1000 >"$state/mariadb/server.log" 2>&1 </dev/null &
		echo $! >"$state/mariadb/pid"
		wait_for 60 MariaDB port_open "$mysql_host" "$mysql_port"
		wait_for 30 "MariaDB (admin login)" mysql_root -e 'select 1' >/dev/null 2>&1
	fi
	# A dedicated user for the shop and its tests: TCP logins as root are refused on a fresh
	# Debian install. The tests create and drop databases named seckill_*.
	# PROCESS lets the fault tests see which transactions wait for a row lock
	# (information_schema.innodb_trx).
	# Two shop instances with the seed's pool of 100 each need more than
	# MariaDB's default 151 connections.
	mysql_root <<SQL
SET GLOBAL max_connections = GREATEST(@@GLOBAL.max_connections, 1000);
CREATE DATABASE IF NOT EXISTS \`$db_name\` CHARACTER SET utf8mb4;
CREATE USER IF NOT EXISTS '$db_user'@'127.0.0.1' IDENTIFIED BY '$db_pass';
CREATE USER IF NOT EXISTS '$db_user'@'localhost' IDENTIFIED BY '$db_pass';
GRANT ALL PRIVILEGES ON \`seckill%\`.* TO '$db_user'@'127.0.0.1';
GRANT ALL PRIVILEGES ON \`seckill%\`.* TO '$db_user'@'localhost';
GRANT ALL PRIVILEGES ON \`$db_name\`.* TO '$db_user'@'127.0.0.1';
GRANT ALL PRIVILEGES ON \`$db_name\`.* TO '$db_user'@'localhost';
GRANT PROCESS ON *.* TO '$db_user'@'127.0.0.1';
GRANT PROCESS ON *.* TO '$db_user'@'localhost';
SQL
	local client
	client=$(command -v mariadb || command -v mysql)
	"$client" -u"$db_user" -p"$db_pass" -h"$mysql_host" -P"$mysql_port" -e 'select 1' "$db_name" >/dev/null ||
		die "user $db_user cannot log in over TCP at $mysql_host:$mysql_port"
	log "MariaDB answers on $mysql_host:$mysql_port (database $db_name, user $db_user)"
}

stop_pidfile() { # stop_pidfile NAME
	local f="$state/$1/pid"
	[ -f "$f" ] || { log "$1: not started by this script"; return; }
	local pid
	pid=$(cat "$f")
	if kill -0 "$pid" 2>/dev/null; then
		log "stopping $1 (pid $pid)"
		kill "$pid"
		for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$f"
}

case "${1:-up}" in
up)
	mkdir -p "$state"
	command -v curl >/dev/null || apt_install curl ca-certificates
	# The Java Curator interop tests: a JDK and Debian's Curator 5.
	command -v javac >/dev/null || apt_install default-jdk-headless
	[ -f /usr/share/java/curator-recipes.jar ] || apt_install libcurator-recipes-java
	zk_up
	mysql_up
	;;
down)
	stop_pidfile zookeeper
	stop_pidfile mariadb
	;;
status)
	if zk_ok; then echo "zookeeper: up (127.0.0.1:$zk_port)"; else echo "zookeeper: down"; fi
	if port_open "$mysql_host" "$mysql_port"; then echo "mysql: up ($mysql_host:$mysql_port)"; else echo "mysql: down"; fi
	;;
*) die "usage: $0 up|down|status" ;;
esac
