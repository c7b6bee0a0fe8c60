# The scripts' shared bash: sourced by stack.sh, demo.sh and loadtools.sh,
# each of which sets log_prefix first.

# log MESSAGE...: a line on stderr, named after the script.
log() { printf '%s: %s\n' "${log_prefix:-script}" "$*" >&2; }
die() {
	log "$*"
	exit 1
}

# port_open HOST PORT: something accepts TCP connections there.
port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# alive PID: the process runs (a killed one nobody has reaped yet is a zombie, not alive).
alive() {
	local st
	st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
	[ -n "$st" ] && [ "$st" != Z ]
}

# stop_pid PID NAME SIGNAL SECONDS: sends SIGNAL and waits up to SECONDS for the process to
# end, then SIGKILLs it. A process that is not running is left alone.
stop_pid() {
	local pid=$1 name=$2 sig=$3 secs=$4
	alive "$pid" || return 0
	log "stopping $name (pid $pid)"
	kill "-$sig" "$pid" 2>/dev/null || return 0
	for _ in $(seq 1 $((secs * 10))); do
		alive "$pid" || return 0
		sleep 0.1
	done
	log "$name (pid $pid) did not stop within ${secs}s: SIGKILL"
	kill -9 "$pid" 2>/dev/null || true
}

apt_updated=
# apt_install [APT-OPTION...] PACKAGE...: Debian packages, as root; apt-get update once per
# script run.
apt_install() {
	if [ "$(id -u)" != 0 ]; then die "need root to apt-get install $*"; fi
	if [ -z "$apt_updated" ]; then
		log "apt-get update"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
		apt_updated=1
	fi
	log "apt-get install $*"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}
