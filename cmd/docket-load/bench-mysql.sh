#!/bin/sh
# bench-mysql.sh runs docket-load, in one run, against docket-log on MariaDB
# (-storage mysql), against Tessera's own MySQL conformance server on the same
# MariaDB server (another database), and against two docket-log writers of one
# database (requests in turn), with the same offered rates; then lone writes
# (each after a random pause) to docket-log. It starts its own mariadbd (apt
# package mariadb-server) in a temporary directory, on a unix socket. Usage
# (from the repository root):
#
#	sh cmd/docket-load/bench-mysql.sh [RATES] [DURATION] [CLIENTS] [LONE]
set -eu
RATES=${1:-250,500,1000}
DURATION=${2:-10s}
CLIENTS=${3:-2048}
LONE=${4:-40}
W=$(mktemp -d /tmp/bench-mysql.XXXXXX)
PIDS=""
DB_PID=""
cleanup() {
	kill $PIDS 2>/dev/null || true
	if [ -n "$DB_PID" ]; then kill "$DB_PID" 2>/dev/null || true; wait "$DB_PID" 2>/dev/null || true; fi
	rm -rf "$W"
}
trap cleanup EXIT
for b in docket docket-log docket-load; do go build -o "$W/$b" ./cmd/$b; done
GOBIN="$W" go install github.com/transparency-dev/tessera/cmd/conformance/mysql@v1.0.4
SCHEMA="$(go list -m -f '{{.Dir}}' github.com/transparency-dev/tessera)/storage/mysql/schema.sql"

MARIADBD=$(command -v mariadbd || echo /usr/sbin/mariadbd)
mariadb-install-db --no-defaults --datadir="$W/db" --user="$(id -un)" --auth-root-authentication-method=normal --skip-test-db >/dev/null
"$MARIADBD" --no-defaults --datadir="$W/db" --socket="$W/sock" --skip-networking --user="$(id -un)" \
	--pid-file="$W/db.pid" --log-error="$W/db.err" --innodb-buffer-pool-size=512M --innodb-log-file-size=256M \
	--innodb-flush-log-at-trx-commit=1 --max-connections=500 &
DB_PID=$!
for _ in $(seq 200); do mariadb --socket="$W/sock" -uroot -e 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.1; done
mariadb --socket="$W/sock" -uroot -e 'CREATE DATABASE docket1; CREATE DATABASE docket2; CREATE DATABASE tessera'
DSN() { echo "root@unix($W/sock)/$1"; }
mariadb --version

wait_up() { for _ in $(seq 300); do curl -sf "$1/checkpoint" >/dev/null && return 0; sleep 0.05; done; echo "$1 did not start" >&2; exit 1; }
"$W/docket" keygen -log bench.example/log -o "$W/log.key" >/dev/null
LOG="-key $W/log.key -storage mysql -max-inflight 8192 -max-conns 8192"

# docket-log on MariaDB: fixed rates, the closed loop, lone writes.
"$W/docket-log" $LOG -mysql-dsn "$(DSN docket1)" -storage-dir "$W/d1" -listen 127.0.0.1:17790 >/dev/null 2>"$W/d1.err" &
P=$!; PIDS="$PIDS $P"
wait_up http://127.0.0.1:17790
"$W/docket-load" -url http://127.0.0.1:17790 -label docket-log-mysql -rates "$RATES" -duration "$DURATION" -clients "$CLIENTS" -lone "$LONE" | tee "$W/docket.out"
kill $P; wait $P 2>/dev/null || true

# Tessera's MySQL conformance server on the same MariaDB, 1s checkpoints.
"$W/docket-load" -keygen "$W/tessera.key"
"$W/mysql" -mysql_uri "$(DSN tessera)" -init_schema_path "$SCHEMA" -private_key_path "$W/tessera.key" \
	-publish_interval 1s -listen 127.0.0.1:17791 2>"$W/tessera.err" &
P=$!; PIDS="$PIDS $P"
wait_up http://127.0.0.1:17791
"$W/docket-load" -url http://127.0.0.1:17791 -mode tessera -label tessera-mysql -rates "$RATES" -duration "$DURATION" -clients "$CLIENTS" | tail -n +3
# The same server at docket-log's semantics: a request is done once a
# published checkpoint covers it (docket-log answers only then, with a proof).
"$W/docket-load" -url http://127.0.0.1:17791 -mode tessera-published -label "tessera-mysql, until published" -rates , -duration "$DURATION" -clients "$CLIENTS" | tail -n +3
kill $P; wait $P 2>/dev/null || true

# Two docket-log writers of one database, requests in turn.
"$W/docket-log" $LOG -mysql-dsn "$(DSN docket2)" -storage-dir "$W/d2a" -listen 127.0.0.1:17792 >/dev/null 2>"$W/d2a.err" &
PIDS="$PIDS $!"
"$W/docket-log" $LOG -mysql-dsn "$(DSN docket2)" -storage-dir "$W/d2b" -listen 127.0.0.1:17793 >/dev/null 2>"$W/d2b.err" &
PIDS="$PIDS $!"
wait_up http://127.0.0.1:17792
wait_up http://127.0.0.1:17793
"$W/docket-load" -url http://127.0.0.1:17792,http://127.0.0.1:17793 -label "docket-log-mysql ×2" -rates "$RATES" -duration "$DURATION" -clients "$CLIENTS" | tail -n +3
