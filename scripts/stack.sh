#!/usr/bin/env bash
# Local stack for seckill-zk without Docker: ZooKeeper, MariaDB and Redis from Debian's packages.
#
#   scripts/stack.sh up      install what is missing, start what is not running, wait until all answer
#   scripts/stack.sh down    stop only what "up" started (tracked in .stack/)
#   scripts/stack.sh status  say what answers
#   scripts/stack.sh ensemble DIR [BASE]   start a 3-node ZooKeeper ensemble for tests: node N
#                                          (1..3) serves clients on 127.0.0.1:BASE+N (BASE 22180),
#                                          state and pid in DIR/zkN; prints the client addresses
#   scripts/stack.sh ensemble-node DIR N [BASE]   (re)start node N of that ensemble; waits until it
#                                          answers ruok (it may still be joining the quorum)
#   scripts/stack.sh ensemble-down DIR     stop the ensemble's nodes
#                                          With STACK_HOSTS="NS1=IP1 NS2=IP2 NS3=IP3" (a test's network
#                                          namespaces), node N runs in namespace NSN and serves on IPN
#                                          instead of 127.0.0.1 (ensemble, ensemble-node, and the
#                                          galera commands likewise)
#   scripts/stack.sh galera DIR [BASE]     start a 3-node MariaDB Galera cluster on loopback (Debian's
#                                          galera-4, mariabackup state transfer): node N (1..3) serves
#                                          SQL on 127.0.0.1:BASE+N (BASE 23300), datadir, socket, log and
#                                          pid in DIR/nodeN; the first node bootstraps, the others join;
#                                          waits until every node is Synced, creates the shop's user and
#                                          prints the SQL addresses
#   scripts/stack.sh galera-node DIR N [BASE]  (re)start node N: it joins the running nodes (state
#                                          transfer: IST or SST) and is waited for until Synced
#   scripts/stack.sh galera-kill DIR N     SIGKILL node N (by the pid in DIR/nodeN/pid)
#   scripts/stack.sh galera-recover DIR [BASE]  after every node crashed, as an operator would: each
#                                          node's last committed position (mariadbd --wsrep-recover),
#                                          the most advanced bootstraps, the others rejoin; prints
#                                          "recovered: node N seqno S" for each and which bootstrapped
#   scripts/stack.sh galera-down DIR       stop the cluster's nodes
#   scripts/stack.sh redis                 Debian's redis-server on 127.0.0.1:REDIS_PORT, without
#                                          persistence, for make bench-shop's Redis + Lua peer (up
#                                          starts it too)
#   scripts/stack.sh tls [DIR]             a CA and a server certificate for MariaDB on 127.0.0.1 /
#                                          localhost (openssl): DIR/ca.pem, server-cert.pem,
#                                          server-key.pem (DIR .stack/tls); kept if present. Point
#                                          MariaDB's ssl_ca, ssl_cert and ssl_key at them and the
#                                          shop's mysql.tlsCA at ca.pem (docs/security.md)
#
# Idempotent. State lives in .stack/ (git-ignored). Environment overrides:
#   ZK_PORT (2181), MYSQL_HOST (127.0.0.1), MYSQL_PORT (3306), REDIS_PORT (26379),
#   SHOP_DB_USER (seckill), SHOP_DB_PASSWORD (seckill), SHOP_DB_NAME (seckill)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
state="$root/.stack"
zk_port=${ZK_PORT:-2181}
redis_port=${REDIS_PORT:-26379}
mysql_host=${MYSQL_HOST:-127.0.0.1}
mysql_port=${MYSQL_PORT:-3306}
db_user=${SHOP_DB_USER:-seckill}
db_pass=${SHOP_DB_PASSWORD:-seckill}
db_name=${SHOP_DB_NAME:-seckill}

log_prefix=stack
# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"

zk_ok() { zk_ok_at "$zk_port"; }

zk_ok_at() { # zk_ok_at PORT [HOST]
	local reply
	reply=$( { exec 3<>"/dev/tcp/${2:-127.0.0.1}/$1" && printf ruok >&3 && timeout 2 cat <&3; } 2>/dev/null || true)
	[ "$reply" = imok ]
}

# node_ip N: the address node N of a test's cluster serves on; node_netns N: the
# network namespace it runs in, "" for this one (STACK_HOSTS, see the usage above).
node_ip() { node_host "$1" ip; }
node_netns() { node_host "$1" ns; }
node_host() {
	local entry
	[ -n "${STACK_HOSTS:-}" ] || { [ "$2" = ip ] && echo 127.0.0.1; return 0; }
	entry=$(echo "$STACK_HOSTS" | tr ' ' '\n' | sed -n "$1p")
	[ -n "$entry" ] || die "STACK_HOSTS names no host for node $1"
	if [ "$2" = ip ]; then echo "${entry#*=}"; else echo "${entry%%=*}"; fi
}

# zk_classpath: ZooKeeper's jar and the libraries Debian's package splits out.
zk_classpath() {
	local cp=/etc/zookeeper/conf:/usr/share/java/zookeeper.jar
	for jar in zookeeper-jute slf4j-api slf4j-simple netty-handler netty-common netty-buffer netty-transport netty-resolver netty-codec netty-transport-native-epoll netty-transport-native-unix-common metrics-core; do
		[ -f "/usr/share/java/$jar.jar" ] && cp="$cp:/usr/share/java/$jar.jar"
	done
	echo "$cp"
}

zk_install() {
	if [ ! -f /usr/share/java/zookeeper.jar ]; then apt_install --no-install-recommends zookeeper; fi
	command -v java >/dev/null || apt_install --no-install-recommends default-jre-headless
}

# zk_start DIR: start a server with DIR/zoo.cfg, logs and pid in DIR. A small
# server for a small machine: the serial collector (a 256 MB heap needs no other),
# and no pool of NIO worker threads (numWorkerThreads=0: the selector thread reads
# and writes the sockets itself, one thread hop fewer per request). On two cores
# each makes a request cheaper: docs/operations.md, "The local stack's ZooKeeper".
zk_start() { # zk_start DIR [NETNS]
	nohup ${2:+ip netns exec "$2"} java -Xmx256m -XX:+UseSerialGC -Dzookeeper.nio.numWorkerThreads=0 -Dzookeeper.log.dir="$1" -cp "$(zk_classpath)" \
		org.apache.zookeeper.server.quorum.QuorumPeerMain "$1/zoo.cfg" \
		>>"$1/server.log" 2>&1 </dev/null &
	echo $! >"$1/pid"
}

# zk_cfg DIR PORT TICK [ADDR]: a server's configuration, loopback only (or ADDR). A development and
# test server: no fsync per transaction, so that tests and benchmarks measure the
# clients, not the disk's drifting fsync latency.
zk_cfg() {
	cat <<CFG
tickTime=$3
initLimit=10
syncLimit=5
dataDir=$1/data
clientPort=$2
clientPortAddress=${4:-127.0.0.1}
maxClientCnxns=0
minSessionTimeout=1000
maxSessionTimeout=60000
admin.enableServer=false
4lw.commands.whitelist=*
forceSync=no
CFG
}

ensemble_node() { # ensemble_node DIR N BASE
	local dir=$1/zk$2 base=$3 n
	mkdir -p "$dir/data"
	echo "$2" >"$dir/data/myid"
	zk_cfg "$dir" $((base + $2)) 500 "$(node_ip "$2")" >"$dir/zoo.cfg"
	for n in 1 2 3; do
		echo "server.$n=$(node_ip "$n"):$((base + 700 + n)):$((base + 800 + n))" >>"$dir/zoo.cfg"
	done
	if [ -f "$dir/pid" ] && alive "$(cat "$dir/pid")"; then
		log "ensemble node $2 is running (pid $(cat "$dir/pid"))"
		return
	fi
	zk_start "$dir" "$(node_netns "$2")"
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
	zk_install
	mkdir -p "$state/zookeeper/data"
	{
		zk_cfg "$state/zookeeper" "$zk_port" 2000
		echo "autopurge.purgeInterval=1"
	} >"$state/zookeeper/zoo.cfg"
	log "starting ZooKeeper on 127.0.0.1:$zk_port (data in $state/zookeeper)"
	zk_start "$state/zookeeper"
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
		command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ] || apt_install --no-install-recommends mariadb-server mariadb-client
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

redis_ok() { [ "$(redis-cli -h 127.0.0.1 -p "$redis_port" ping 2>/dev/null)" = PONG ]; }

# redis_up: a Redis of the stack's own on its own port (a machine's Redis on 6379, if any, is
# left alone), keeping nothing on disk: the benchmark's peer needs no persistence.
redis_up() {
	command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
		apt_install --no-install-recommends redis-server redis-tools
	if redis_ok; then log "Redis answers on 127.0.0.1:$redis_port"; return; fi
	port_open 127.0.0.1 "$redis_port" && die "port $redis_port is taken by something that does not answer Redis's PING"
	mkdir -p "$state/redis"
	log "starting Redis on 127.0.0.1:$redis_port (no persistence)"
	redis-server --bind 127.0.0.1 --port "$redis_port" --save "" --appendonly no --daemonize yes \
		--dir "$state/redis" --pidfile "$state/redis/pid" --logfile "$state/redis/server.log"
	wait_for 30 Redis redis_ok
	log "Redis is up (pid $(cat "$state/redis/pid"))"
}

tls_certs() { # tls_certs DIR: a CA and a server certificate signed by it, unless there
	local d=$1
	[ -f "$d/ca.pem" ] && [ -f "$d/server-cert.pem" ] && [ -f "$d/server-key.pem" ] && { log "TLS certificates in $d already"; return; }
	command -v openssl >/dev/null || apt_install --no-install-recommends openssl
	mkdir -p "$d"
	chmod 755 "$d"
	openssl req -x509 -newkey rsa:2048 -nodes -days 825 -subj "/CN=seckill-zk local CA" \
		-keyout "$d/ca-key.pem" -out "$d/ca.pem" 2>/dev/null
	openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$d/server-key.pem" -out "$d/server.csr" 2>/dev/null
	printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >"$d/server.ext"
	openssl x509 -req -in "$d/server.csr" -CA "$d/ca.pem" -CAkey "$d/ca-key.pem" -CAcreateserial -days 825 \
		-extfile "$d/server.ext" -out "$d/server-cert.pem" 2>/dev/null
	rm -f "$d/server.csr" "$d/server.ext"
	chmod 600 "$d"/*-key.pem
	# MariaDB reads its key as the mysql user when it runs as that user.
	if id mysql >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then chown mysql "$d/server-key.pem" "$d/server-cert.pem" "$d/ca.pem"; fi
	log "TLS: CA $d/ca.pem, server certificate $d/server-cert.pem (127.0.0.1, localhost), key $d/server-key.pem"
}

stop_pidfile() { # stop_pidfile NAME
	local f="$state/$1/pid"
	[ -f "$f" ] || { log "$1: not started by this script"; return; }
	stop_pid "$(cat "$f")" "$1" TERM 10
	rm -f "$f"
}

# --- MariaDB Galera: three nodes on loopback, for the cluster tests and `make cluster-demo`.
# Node N: SQL on BASE+N, group communication on BASE+10+N, IST on BASE+20+N, SST on BASE+30+N.

galera_install() {
	[ -f /usr/lib/galera/libgalera_smm.so ] || apt_install --no-install-recommends galera-4
	command -v mariabackup >/dev/null || command -v mariadb-backup >/dev/null || apt_install --no-install-recommends mariadb-backup
	{ command -v mariadb-install-db >/dev/null && [ -x /usr/sbin/mariadbd ]; } || apt_install --no-install-recommends mariadb-server mariadb-client
	# The SST script of mariabackup streams with socat where it finds it (else nc) and
	# reads its configuration with my_print_defaults.
	command -v socat >/dev/null || apt_install --no-install-recommends socat
}

galera_cnf() { # galera_cnf DIR N BASE
	local d=$1/node$2 base=$3 gcomm="" n ip
	ip=$(node_ip "$2")
	for n in 1 2 3; do gcomm="$gcomm${gcomm:+,}$(node_ip "$n"):$((base + 10 + n))"; done
	cat <<CNF
[mysqld]
user=root
datadir=$d/data
socket=$d/mysqld.sock
port=$((base + $2))
bind-address=$ip
pid-file=$d/mysqld.pid
log-error=$d/error.log
skip-name-resolve
max_connections=1000
innodb_buffer_pool_size=64M
innodb_log_file_size=32M
innodb_flush_log_at_trx_commit=1
default_storage_engine=InnoDB
binlog_format=ROW
innodb_autoinc_lock_mode=2
wsrep_on=ON
wsrep_provider=/usr/lib/galera/libgalera_smm.so
wsrep_cluster_name=seckill
wsrep_cluster_address=gcomm://$gcomm
wsrep_node_name=node$2
wsrep_node_address=$ip:$((base + 10 + $2))
wsrep_provider_options="gmcast.listen_addr=tcp://$ip:$((base + 10 + $2));ist.recv_addr=$ip:$((base + 20 + $2));gcache.size=64M"
wsrep_sst_receive_address=$ip:$((base + 30 + $2))
wsrep_sst_method=mariabackup
wsrep_sst_auth=root:
CNF
}

galera_sql() { # galera_sql DIR N SQL...: as root over node N's socket
	local d=$1/node$2
	shift 2
	"$(command -v mariadb || command -v mysql)" --no-defaults -uroot --socket="$d/mysqld.sock" -N -B "$@"
}

galera_state() { # galera_state DIR N: the node's wsrep_local_state_comment, or nothing
	galera_sql "$1" "$2" -e "SHOW STATUS LIKE 'wsrep_local_state_comment'" 2>/dev/null | awk '{print $2}'
}

galera_synced() { [ "$(galera_state "$1" "$2")" = Synced ]; }

galera_running() { # galera_running DIR N
	[ -f "$1/node$2/pid" ] && alive "$(cat "$1/node$2/pid")"
}

# galera_start DIR N BASE [--wsrep-new-cluster]: initialise the datadir if new, start the node.
galera_start() {
	local dir=$1 n=$2 base=$3 d=$1/node$2
	shift 3
	local p
	for p in $((base + n)) $((base + 10 + n)); do
		port_open "$(node_ip "$n")" "$p" && die "galera node $n: port $p is taken by another process (another cluster? stop it with scripts/stack.sh galera-down ITS-DIR, or choose another BASE)"
	done
	mkdir -p "$d"
	galera_cnf "$dir" "$n" "$base" >"$d/my.cnf"
	if [ ! -d "$d/data/mysql" ]; then
		log "galera node $n: initialising $d/data"
		mariadb-install-db --no-defaults --user=root --datadir="$d/data" --auth-root-authentication-method=socket >"$d/install.log" 2>&1 ||
			die "galera node $n: mariadb-install-db failed (see $d/install.log)"
	fi
	if [ "${1:-}" = --wsrep-new-cluster ] && [ -f "$d/data/grastate.dat" ]; then
		# The node bootstraps a cluster none of whose nodes runs: it has the newest state.
		sed -i 's/^safe_to_bootstrap: 0/safe_to_bootstrap: 1/' "$d/data/grastate.dat"
	fi
	log "galera node $n: starting on $(node_ip "$n"):$((base + n)) ${1:+(bootstrap)}"
	local ns
	ns=$(node_netns "$n")
	nohup ${ns:+ip netns exec "$ns"} /usr/sbin/mariadbd --defaults-file="$d/my.cnf" "$@" >>"$d/server.log" 2>&1 </dev/null &
	echo $! >"$d/pid"
}

galera_wait() { # galera_wait DIR N: until the node is Synced, or its process ends
	local secs=180
	for _ in $(seq 1 $((secs * 5))); do
		galera_synced "$1" "$2" && return 0
		galera_running "$1" "$2" || die "galera node $2 exited while starting: $(tail -n 5 "$1/node$2/error.log" 2>/dev/null)"
		sleep 0.2
	done
	die "galera node $2 is not Synced after ${secs}s (state: $(galera_state "$1" "$2"); log $1/node$2/error.log)"
}

galera_node() { # galera_node DIR N BASE: start node N unless it runs, joining the others
	if galera_running "$1" "$2"; then
		log "galera node $2 is running (pid $(cat "$1/node$2/pid"))"
	else
		galera_start "$1" "$2" "$3"
	fi
	galera_wait "$1" "$2"
	log "galera node $2 is Synced ($(node_ip "$2"):$(($3 + $2)), pid $(cat "$1/node$2/pid"))"
}

# galera_answers BASE: every node on BASE+1..3 answers as the shop's user and is Synced.
galera_answers() {
	local n st
	for n in 1 2 3; do
		st=$("$(command -v mariadb || command -v mysql)" --no-defaults -u"$db_user" -p"$db_pass" -h"$(node_ip "$n")" -P$(($1 + n)) \
			-N -B -e "SHOW STATUS LIKE 'wsrep_local_state_comment'" 2>/dev/null | awk '{print $2}')
		[ "$st" = Synced ] || return 1
	done
}

galera_up() { # galera_up DIR BASE
	local dir=$1 base=$2 n first="" from=127.0.0.1 addrs
	[ -z "${STACK_HOSTS:-}" ] || from=% # the shop's user comes from the test's namespaces
	addrs="$(node_ip 1):$((base + 1)),$(node_ip 2):$((base + 2)),$(node_ip 3):$((base + 3))"
	galera_install
	mkdir -p "$dir"
	for n in 1 2 3; do galera_running "$dir" "$n" && { first=$n; break; }; done
	if [ -z "$first" ] && galera_answers "$base"; then
		# Another directory's cluster (a second checkout's) serves these ports: use it.
		log "a Galera cluster answers on $addrs (not started from $dir): using it"
		echo "$addrs"
		return
	fi
	if [ -z "$first" ]; then
		galera_start "$dir" 1 "$base" --wsrep-new-cluster
		galera_wait "$dir" 1
		log "galera node 1 bootstrapped the cluster"
	fi
	for n in 1 2 3; do galera_node "$dir" "$n" "$base"; done
	# The shop's user, created through one node: Galera replicates it to the others.
	galera_sql "$dir" "${first:-1}" <<SQL
CREATE USER IF NOT EXISTS '$db_user'@'$from' IDENTIFIED BY '$db_pass';
GRANT ALL PRIVILEGES ON \`seckill%\`.* TO '$db_user'@'$from';
GRANT PROCESS ON *.* TO '$db_user'@'$from';
CREATE DATABASE IF NOT EXISTS \`$db_name\` CHARACTER SET utf8mb4;
SQL
	log "galera cluster up: $addrs (user $db_user, state in $dir)"
	echo "$addrs"
}

# galera_recover DIR BASE: restart a cluster none of whose nodes runs (all crashed) from its most
# advanced node: each node's last committed seqno by mariadbd --wsrep-recover (grastate.dat says
# -1 after a crash), the highest bootstraps (safe_to_bootstrap set), the others join it.
galera_recover() {
	local dir=$1 base=$2 n d ns seqno best="" best_seqno=-2
	for n in 1 2 3; do
		galera_running "$dir" "$n" && die "galera node $n runs: galera-recover is for a cluster whose nodes all stopped"
	done
	for n in 1 2 3; do
		d=$dir/node$n
		galera_cnf "$dir" "$n" "$base" >"$d/my.cnf"
		ns=$(node_netns "$n")
		${ns:+ip netns exec "$ns"} /usr/sbin/mariadbd --defaults-file="$d/my.cnf" --wsrep-recover --log-error="$d/recover.log" >/dev/null 2>&1 || true
		seqno=$(sed -n 's/.*WSREP: Recovered position: [^:]*:\(-\{0,1\}[0-9]*\).*/\1/p' "$d/recover.log" | tail -n 1)
		[ -n "$seqno" ] || seqno=$(sed -n 's/^seqno: *//p' "$d/data/grastate.dat" 2>/dev/null)
		[ -n "$seqno" ] || die "galera node $n: no recovered position (see $d/recover.log)"
		echo "recovered: node $n seqno $seqno"
		if [ "$seqno" -gt "$best_seqno" ]; then best=$n best_seqno=$seqno; fi
	done
	echo "bootstrap: node $best"
	galera_start "$dir" "$best" "$base" --wsrep-new-cluster
	galera_wait "$dir" "$best"
	for n in 1 2 3; do [ "$n" = "$best" ] || galera_node "$dir" "$n" "$base"; done
	log "galera cluster recovered from node $best (seqno $best_seqno)"
}

galera_kill() { # galera_kill DIR N
	local f=$1/node$2/pid
	[ -f "$f" ] || die "galera node $2: no pid file in $1/node$2"
	kill -9 "$(cat "$f")" 2>/dev/null || true
	for _ in $(seq 1 50); do alive "$(cat "$f")" || break; sleep 0.1; done
	rm -f "$f"
	log "galera node $2 killed"
}

case "${1:-up}" in
up)
	mkdir -p "$state"
	command -v curl >/dev/null || apt_install --no-install-recommends curl ca-certificates
	# The Java Curator interop tests: a JDK and Debian's Curator 5.
	command -v javac >/dev/null || apt_install --no-install-recommends default-jdk-headless
	[ -f /usr/share/java/curator-recipes.jar ] || apt_install --no-install-recommends libcurator-recipes-java
	# The chaos test runs a MariaDB of its own (it kills and restarts it), even where the
	# shop's MariaDB is another machine's.
	{ command -v mariadb-install-db >/dev/null && { command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ]; }; } ||
		apt_install --no-install-recommends mariadb-server mariadb-client
	# The dashboard's browser test drives Debian's headless Chromium.
	command -v chromium >/dev/null || apt_install --no-install-recommends chromium
	# The partition tests cut links between network namespaces with nftables' drops.
	command -v nft >/dev/null || apt_install --no-install-recommends nftables
	command -v ip >/dev/null || apt_install --no-install-recommends iproute2
	zk_up
	mysql_up
	redis_up
	;;
down)
	stop_pidfile zookeeper
	stop_pidfile mariadb
	stop_pidfile redis
	;;
redis)
	redis_up
	;;
ensemble)
	[ -n "${2:-}" ] || die "usage: $0 ensemble DIR [BASE]"
	base=${3:-22180}
	zk_install
	for n in 1 2 3; do ensemble_node "$2" "$n" "$base"; done
	for n in 1 2 3; do wait_for 60 "ensemble node $n" zk_ok_at $((base + n)) "$(node_ip "$n")"; done
	addrs="$(node_ip 1):$((base + 1)),$(node_ip 2):$((base + 2)),$(node_ip 3):$((base + 3))"
	log "ensemble up: $addrs (state in $2)"
	echo "$addrs"
	;;
ensemble-node)
	[ -n "${2:-}" ] && [ -n "${3:-}" ] || die "usage: $0 ensemble-node DIR N [BASE]"
	base=${4:-22180}
	zk_install
	ensemble_node "$2" "$3" "$base"
	wait_for 60 "ensemble node $3" zk_ok_at $((base + $3)) "$(node_ip "$3")"
	;;
ensemble-down)
	[ -n "${2:-}" ] || die "usage: $0 ensemble-down DIR"
	for n in 1 2 3; do
		[ -f "$2/zk$n/pid" ] && kill -9 "$(cat "$2/zk$n/pid")" 2>/dev/null || true
		rm -f "$2/zk$n/pid"
	done
	;;
galera)
	[ -n "${2:-}" ] || die "usage: $0 galera DIR [BASE]"
	galera_up "$2" "${3:-23300}"
	;;
galera-node)
	[ -n "${2:-}" ] && [ -n "${3:-}" ] || die "usage: $0 galera-node DIR N [BASE]"
	galera_install
	galera_node "$2" "$3" "${4:-23300}"
	;;
galera-kill)
	[ -n "${2:-}" ] && [ -n "${3:-}" ] || die "usage: $0 galera-kill DIR N"
	galera_kill "$2" "$3"
	;;
galera-recover)
	[ -n "${2:-}" ] || die "usage: $0 galera-recover DIR [BASE]"
	galera_recover "$2" "${3:-23300}"
	;;
galera-down)
	[ -n "${2:-}" ] || die "usage: $0 galera-down DIR"
	for n in 3 2 1; do
		if galera_running "$2" "$n"; then
			kill "$(cat "$2/node$n/pid")" 2>/dev/null || true
			for _ in $(seq 1 150); do galera_running "$2" "$n" || break; sleep 0.2; done
			galera_running "$2" "$n" && kill -9 "$(cat "$2/node$n/pid")" 2>/dev/null
		fi
		rm -f "$2/node$n/pid"
	done
	;;
tls)
	tls_certs "${2:-$state/tls}"
	;;
status)
	if zk_ok; then echo "zookeeper: up (127.0.0.1:$zk_port)"; else echo "zookeeper: down"; fi
	if port_open "$mysql_host" "$mysql_port"; then echo "mysql: up ($mysql_host:$mysql_port)"; else echo "mysql: down"; fi
	if redis_ok; then echo "redis: up (127.0.0.1:$redis_port)"; else echo "redis: down"; fi
	;;
*) die "usage: $0 up|down|status|redis|tls [DIR]|ensemble DIR|ensemble-node DIR N|ensemble-down DIR|galera DIR|galera-node DIR N|galera-kill DIR N|galera-recover DIR [BASE]|galera-down DIR" ;;
esac
