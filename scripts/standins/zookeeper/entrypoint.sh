#!/bin/bash
# The official zookeeper image's configuration from its variables, then the server in the foreground.
set -euo pipefail
if [ ! -f /conf/zoo.cfg ]; then
	{
		echo "dataDir=/data"
		echo "dataLogDir=/datalog"
		echo "tickTime=${ZOO_TICK_TIME:-2000}"
		echo "initLimit=${ZOO_INIT_LIMIT:-5}"
		echo "syncLimit=${ZOO_SYNC_LIMIT:-2}"
		echo "maxClientCnxns=${ZOO_MAX_CLIENT_CNXNS:-60}"
		echo "standaloneEnabled=${ZOO_STANDALONE_ENABLED:-true}"
		echo "admin.enableServer=false"
		echo "4lw.commands.whitelist=${ZOO_4LW_COMMANDS_WHITELIST:-srvr}"
		if [ -z "${ZOO_SERVERS:-}" ]; then
			echo "clientPort=2181"
		else
			for server in $ZOO_SERVERS; do echo "$server"; done
		fi
	} >/conf/zoo.cfg
fi
echo "${ZOO_MY_ID:-1}" >/data/myid
cp=/conf:/usr/share/java/zookeeper.jar
for jar in zookeeper-jute slf4j-api slf4j-simple netty-handler netty-common netty-buffer netty-transport netty-resolver netty-codec netty-transport-native-epoll netty-transport-native-unix-common metrics-core; do
	[ -f "/usr/share/java/$jar.jar" ] && cp="$cp:/usr/share/java/$jar.jar"
done
exec java -Xmx256m -XX:+UseSerialGC -cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain /conf/zoo.cfg
