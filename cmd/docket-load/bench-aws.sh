#!/bin/sh
# bench-aws.sh runs docket-load, in one run on one MariaDB server and one
# S3-compatible server (Versity's S3 gateway, as .ci/deps/s3.sh installs
# it), against docket-log -storage aws, against Tessera's own AWS
# conformance server (another database and bucket) counted both as it
# answers (sequenced) and at docket-log's semantics (done when a published
# checkpoint covers the entry), and against two docket-log writers of one
# log (requests in turn); then lone writes to docket-log; then reads of
# tiles and entry bundles from the bucket, through docket-log -serve-reads,
# and from docket-log on POSIX. It starts its own mariadbd (apt package
# mariadb-server, on a loopback port: Tessera's server takes a TCP address)
# and versitygw in a temporary directory. Usage (from the repository root):
#
#	[BATCH=16] sh cmd/docket-load/bench-aws.sh [RATES] [DURATION] [CLIENTS] [LONE]
set -eu
RATES=${1:-250,500,1000}
DURATION=${2:-10s}
CLIENTS=${3:-2048}
LONE=${4:-40}
# BATCH: entries per request of the batch form runs (none: skip them).
BATCH=${BATCH:-16}
BODIES=${BODIES:-40000}
W=$(mktemp -d /tmp/bench-aws.XXXXXX)
PIDS=""
DB_PID=""
S3_PID=""
cleanup() {
	kill $PIDS 2>/dev/null || true
	for p in $DB_PID $S3_PID; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	rm -rf "$W"
}
trap cleanup EXIT
for b in docket docket-log docket-load; do go build -o "$W/$b" ./cmd/$b; done
GOBIN="$W" go install github.com/transparency-dev/tessera/cmd/conformance/aws@v1.0.4
. .ci/deps/s3.sh

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
DB_PORT=$(free_port)
MARIADBD=$(command -v mariadbd || echo /usr/sbin/mariadbd)
mariadb-install-db --no-defaults --datadir="$W/db" --user="$(id -un)" --auth-root-authentication-method=normal --skip-test-db >/dev/null
"$MARIADBD" --no-defaults --datadir="$W/db" --socket="$W/sock" --bind-address=127.0.0.1 --port="$DB_PORT" --user="$(id -un)" \
	--pid-file="$W/db.pid" --log-error="$W/db.err" --innodb-buffer-pool-size=512M --innodb-log-file-size=256M \
	--innodb-flush-log-at-trx-commit=1 --max-connections=500 &
DB_PID=$!
for _ in $(seq 200); do mariadb --socket="$W/sock" -uroot -e 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.1; done
mariadb --socket="$W/sock" -uroot -e "CREATE DATABASE docket1; CREATE DATABASE docket2; CREATE DATABASE tessera;
	CREATE USER 'bench'@'127.0.0.1' IDENTIFIED BY 'benchpw'; GRANT ALL ON *.* TO 'bench'@'127.0.0.1'"
DSN() { echo "bench:benchpw@tcp(127.0.0.1:$DB_PORT)/$1"; }
mariadb --version

S3_PORT=$(free_port)
S3="http://127.0.0.1:$S3_PORT"
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true
mkdir "$W/s3"
"$DOCKET_S3_SERVER" --access "$AWS_ACCESS_KEY_ID" --secret "$AWS_SECRET_ACCESS_KEY" --region us-east-1 \
	--port "127.0.0.1:$S3_PORT" --quiet posix "$W/s3" >"$W/s3.log" 2>&1 &
S3_PID=$!
for _ in $(seq 200); do curl -s -o /dev/null "$S3/" && break; sleep 0.05; done
s3() { curl -sf -o /dev/null --aws-sigv4 aws:amz:us-east-1:s3 --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
	-H x-amz-content-sha256:UNSIGNED-PAYLOAD "$@"; }
for b in docket-bench1 docket-bench2 tessera-bench; do
	s3 -X PUT "$S3/$b"
	s3 -X PUT -H "Content-Type: application/json" "$S3/$b?policy=" --data \
		"{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::$b/*\"}]}"
done
"$DOCKET_S3_SERVER" --version 2>/dev/null | head -n 1 || true

wait_up() { for _ in $(seq 600); do curl -sf "$1" >/dev/null && return 0; sleep 0.05; done; echo "$1 did not start" >&2; exit 1; }
"$W/docket" keygen -log bench.example/log -o "$W/log.key" >/dev/null
AWSLOG="-key $W/log.key -storage aws -s3-endpoint $S3 -max-inflight 8192 -max-conns 8192"

# docket-log -storage aws: fixed rates, the closed loop, lone writes.
"$W/docket-log" $AWSLOG -mysql-dsn "$(DSN docket1)" -s3-bucket docket-bench1 -storage-dir "$W/d1" -listen 127.0.0.1:17790 >/dev/null 2>"$W/d1.err" &
P=$!; PIDS="$PIDS $P"
wait_up http://127.0.0.1:17790/health
"$W/docket-load" -url http://127.0.0.1:17790 -label docket-log-aws -rates "$RATES" -duration "$DURATION" -clients "$CLIENTS" -bodies "$BODIES" -lone "$LONE"
# The batch form of POST /add, as many entries in flight.
for b in $(echo "$BATCH" | tr , ' '); do
	"$W/docket-load" -url http://127.0.0.1:17790 -label "docket-log-aws, $b per request" -rates , -duration "$DURATION" \
		-batch "$b" -clients $(( (CLIENTS + b - 1) / b )) -bodies "$BODIES" | tail -n +3
done
kill $P; wait $P 2>/dev/null || true

# Tessera's AWS conformance server on the same MariaDB and S3 server, 1s
# checkpoints; its checkpoint is read from its bucket.
"$W/docket-load" -keygen "$W/tessera.key"
"$W/aws" -bucket tessera-bench -db_name tessera -db_host 127.0.0.1 -db_port "$DB_PORT" -db_user bench -db_password benchpw \
	-s3_endpoint "$S3" -s3_access_key "$AWS_ACCESS_KEY_ID" -s3_secret "$AWS_SECRET_ACCESS_KEY" \
	-signer "$(cat "$W/tessera.key")" -publish_interval 1s -listen 127.0.0.1:17791 2>"$W/tessera.err" &
P=$!; PIDS="$PIDS $P"
wait_up "$S3/tessera-bench/checkpoint"
"$W/docket-load" -url http://127.0.0.1:17791 -mode tessera -label tessera-aws -rates "$RATES" -duration "$DURATION" -clients "$CLIENTS" | tail -n +3
# The same server at docket-log's semantics: a request is done once a
# published checkpoint covers it (docket-log answers only then, with a proof).
"$W/docket-load" -url http://127.0.0.1:17791 -checkpoint-url "$S3/tessera-bench" -mode tessera-published \
	-label "tessera-aws, until published" -rates "$RATES" -duration "$DURATION" -clients "$CLIENTS" -lone "$LONE" | tail -n +3
kill $P; wait $P 2>/dev/null || true

# Two docket-log writers of one log, requests in turn.
"$W/docket-log" $AWSLOG -mysql-dsn "$(DSN docket2)" -s3-bucket docket-bench2 -storage-dir "$W/d2a" -listen 127.0.0.1:17792 >/dev/null 2>"$W/d2a.err" &
PIDS="$PIDS $!"
"$W/docket-log" $AWSLOG -mysql-dsn "$(DSN docket2)" -s3-bucket docket-bench2 -storage-dir "$W/d2b" -listen 127.0.0.1:17793 >/dev/null 2>"$W/d2b.err" &
PIDS="$PIDS $!"
wait_up http://127.0.0.1:17792/health
wait_up http://127.0.0.1:17793/health
"$W/docket-load" -url http://127.0.0.1:17792,http://127.0.0.1:17793 -label "docket-log-aws ×2" -rates "$RATES" -duration "$DURATION" -clients "$CLIENTS" | tail -n +3

# Reads: the bucket docket-log -storage aws wrote, served by the S3 server
# itself, and through docket-log -serve-reads; a POSIX log of about the same
# size, loaded the same way, served by docket-log.
"$W/docket-log" $AWSLOG -mysql-dsn "$(DSN docket1)" -s3-bucket docket-bench1 -storage-dir "$W/d1" -listen 127.0.0.1:17794 -serve-reads >/dev/null 2>"$W/d1r.err" &
P=$!; PIDS="$PIDS $P"
wait_up http://127.0.0.1:17794/checkpoint
"$W/docket-log" -key "$W/log.key" -storage-dir "$W/posix" -max-inflight 8192 -max-conns 8192 -listen 127.0.0.1:17795 >/dev/null 2>"$W/posix.err" &
PIDS="$PIDS $!"
wait_up http://127.0.0.1:17795/checkpoint
"$W/docket-load" -url http://127.0.0.1:17795 -label docket-log-posix -rates "$RATES" -duration "$DURATION" -clients "$CLIENTS" >/dev/null
"$W/docket-load" -mode reads -url "$S3/docket-bench1" -label "reads: S3 server (bucket of docket-log-aws)" -clients 64 -duration "$DURATION"
"$W/docket-load" -mode reads -url http://127.0.0.1:17794 -label "reads: docket-log -storage aws -serve-reads" -clients 64 -duration "$DURATION" | tail -n +3
"$W/docket-load" -mode reads -url http://127.0.0.1:17795 -label "reads: docket-log -storage posix" -clients 64 -duration "$DURATION" | tail -n +3
for u in "$S3/docket-bench1" http://127.0.0.1:17795; do printf '%s: ' "$u"; curl -s "$u/checkpoint" | sed -n 2p; done
