#!/bin/bash
# The official MySQL and MariaDB images' first start, from their variables: a data directory,
# the root password (root@localhost and root@%), one database and one user with all rights on
# it; then the server, with the container's arguments (options alone are the server's).
set -euo pipefail
if [ "${1:0:1}" = - ]; then set -- mariadbd "$@"; fi
root_pw=${MARIADB_ROOT_PASSWORD:-${MYSQL_ROOT_PASSWORD:-}}
db=${MARIADB_DATABASE:-${MYSQL_DATABASE:-}}
user=${MARIADB_USER:-${MYSQL_USER:-}}
pw=${MARIADB_PASSWORD:-${MYSQL_PASSWORD:-}}
mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld /var/lib/mysql
if [ "$1" = mariadbd ] && [ ! -d /var/lib/mysql/mysql ]; then
	mariadb-install-db --user=mysql --datadir=/var/lib/mysql --skip-test-db >/dev/null
	mariadbd --skip-networking --wsrep-on=OFF --socket=/run/mysqld/init.sock &
	pid=$!
	for _ in $(seq 1 300); do
		mariadb --socket=/run/mysqld/init.sock -uroot -e 'SELECT 1' >/dev/null 2>&1 && break
		sleep 0.1
	done
	{
		echo "ALTER USER root@localhost IDENTIFIED BY '$root_pw';"
		echo "CREATE USER root@'%' IDENTIFIED BY '$root_pw'; GRANT ALL ON *.* TO root@'%' WITH GRANT OPTION;"
		if [ -n "$db" ]; then echo "CREATE DATABASE IF NOT EXISTS \`$db\`;"; fi
		if [ -n "$user" ]; then
			echo "CREATE USER '$user'@'%' IDENTIFIED BY '$pw';"
			if [ -n "$db" ]; then echo "GRANT ALL ON \`$db\`.* TO '$user'@'%';"; fi
		fi
	} | mariadb --socket=/run/mysqld/init.sock -uroot
	kill "$pid"
	wait "$pid" || true
fi
exec "$@"
