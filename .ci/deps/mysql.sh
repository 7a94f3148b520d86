# The log's MySQL backend (log/mysql): its tests start a real MariaDB
# server themselves (mariadbd in a temporary directory, on a unix socket).
if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
	(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mariadb-server) >/dev/null
fi
