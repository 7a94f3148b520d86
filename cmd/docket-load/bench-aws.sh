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
#	ROUNDS=N [BATCH=16] [OLD=docket-log] [PPROF=dir] sh cmd/docket-load/bench-aws.sh , [DURATION] [CLIENTS,...] [LONE]
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

# tessera_aws PORT: Tessera's AWS conformance server on the database
# tessera and the bucket tessera-bench, 1s checkpoints.
tessera_aws() {
	"$W/aws" -bucket tessera-bench -db_name tessera -db_host 127.0.0.1 -db_port "$DB_PORT" -db_user bench -db_password benchpw \
		-s3_endpoint "$S3" -s3_access_key "$AWS_ACCESS_KEY_ID" -s3_secret "$AWS_SECRET_ACCESS_KEY" \
		-signer "$(cat "$W/tessera.key")" -publish_interval 1s -listen "127.0.0.1:$1" 2>"$W/tessera.err" &
}
cpu_us() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%d\n", ($14 + $15) * 1000000 / hz }' "/proc/$1/stat"; }
# dbstat: the database's counters that a run's deltas are taken of.
DBSTATS="'Questions','Com_select','Com_insert','Com_insert_select','Com_update','Com_delete','Com_commit','Innodb_data_fsyncs','Innodb_row_lock_waits'"
dbstat() { mariadb --socket="$W/sock" -uroot -N -e "SHOW GLOBAL STATUS WHERE Variable_name IN ($DBSTATS)" | sort; }

# With ROUNDS set: docket-log -storage aws and Tessera's AWS conformance
# server (counted until published) both started once, then measured in
# turn, round after round, at each client count in CLIENTS (a list): single
# adds and, for each size in BATCH, the batch form; each row with the CPU
# time per answered entry of the server, of mariadbd and of the S3 server,
# and the database's statements and InnoDB fsyncs per entry (the deltas of
# SHOW GLOBAL STATUS over the run; the idle server's few ticks included).
# After the rounds, a summary: each row's entries/s as a share of Tessera's
# server's in the same round, and the median for single adds (the target
# is 70%). Then LONE lone writes to each (docket-log's p99 is printed
# against the 1.2 s target); then reads of tiles and entry bundles
# (64 clients), in turn, from the bucket docket-log wrote and from
# docket-log on POSIX, ROUNDS times each. With OLD set to a docket-log binary, that
# binary is measured too, with single adds, on a database and bucket of
# its own (before and after, in one run). LOGARGS are more arguments of
# the docket-log measured (-v), ERRLOG a file for its log. With PPROF set (a directory), a 30 s CPU
# profile of docket-log is taken from the start of its first run at the last client
# count.
interleaved() {
	"$W/docket-log" $AWSLOG -mysql-dsn "$(DSN docket1)" -s3-bucket docket-bench1 -storage-dir "$W/d1" -listen 127.0.0.1:17790 \
		-pprof 127.0.0.1:17796 ${LOGARGS:-} >/dev/null 2>"${ERRLOG:-$W/d1.err}" &
	DOCKET=$!; PIDS="$PIDS $DOCKET"
	"$W/docket-load" -keygen "$W/tessera.key"
	tessera_aws 17791
	RAW=$!; PIDS="$PIDS $RAW"
	targets=3
	if [ -n "${OLD:-}" ]; then
		mariadb --socket="$W/sock" -uroot -e "CREATE DATABASE docketold"
		s3 -X PUT "$S3/docket-old"
		"$OLD" $AWSLOG -mysql-dsn "$(DSN docketold)" -s3-bucket docket-old -storage-dir "$W/old" -listen 127.0.0.1:17797 >/dev/null 2>"$W/old.err" &
		OLDPID=$!; PIDS="$PIDS $OLDPID"
		wait_up http://127.0.0.1:17797/health
		targets=4
	fi
	wait_up http://127.0.0.1:17790/health
	wait_up "$S3/tessera-bench/checkpoint"
	uptime
	echo "| target | offered/s | sent | ok | 503 | other | sustained/s | p50 ms | p90 ms | p99 ms | max ms | server CPU µs/entry | mariadbd µs/entry | S3 µs/entry | statements/entry | fsyncs/entry |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	for round in $(seq "$ROUNDS"); do
		for n in $(echo "$CLIENTS" | tr , ' '); do
			# Each round starts at another target, so that what one run
			# leaves behind weighs on all alike.
			for j in $(seq 0 $((targets - 1))); do
				case $(( (j + round - 1) % targets )) in
				0) KEY="$round $n single"; run "$DOCKET" "docket-log-aws, $n clients (round $round)" -url http://127.0.0.1:17790 -clients "$n" ;;
				1) for b in $(echo "$BATCH" | tr , ' '); do
					KEY="$round $n batch$b"; run "$DOCKET" "docket-log-aws, $b per request, $((n / b)) clients (round $round)" -url http://127.0.0.1:17790 \
						-batch "$b" -clients $(( (n + b - 1) / b ))
				done ;;
				2) KEY="$round $n tessera"; run "$RAW" "tessera-aws until published, $n clients (round $round)" -url http://127.0.0.1:17791 \
					-checkpoint-url "$S3/tessera-bench" -mode tessera-published -clients "$n" ;;
				3) KEY="$round $n old"; run "$OLDPID" "docket-log-aws OLD, $n clients (round $round)" -url http://127.0.0.1:17797 -clients "$n" ;;
				esac
			done
		done
		uptime
	done
	summary
	"$W/docket-load" -url http://127.0.0.1:17790 -label "docket-log-aws" -rates , -clients 0 -lone "$LONE" | tail -n 1 | tee "$W/lone"
	"$W/docket-load" -url http://127.0.0.1:17791 -checkpoint-url "$S3/tessera-bench" -mode tessera-published \
		-label "tessera-aws, until published" -rates , -clients 0 -lone "$LONE" | tail -n 1
	awk -F'|' -v n="$LONE" '{ printf "lone write to its proof: p50 %s ms, p99 %s ms (the largest of %d), %.2f of the 1,200 ms target\n", $9 + 0, $11 + 0, n, $11 / 1200 }' "$W/lone"
	kill $RAW ${OLDPID:-}

	# Reads, in turn: the bucket docket-log -storage aws wrote, served by
	# the S3 server, and a POSIX log loaded to about the same size, served
	# by docket-log.
	"$W/docket-log" -key "$W/log.key" -storage-dir "$W/posix" -max-inflight 8192 -max-conns 8192 -listen 127.0.0.1:17795 >/dev/null 2>"$W/posix.err" &
	PIDS="$PIDS $!"
	wait_up http://127.0.0.1:17795/checkpoint
	size=$(curl -s "$S3/docket-bench1/checkpoint" | sed -n 2p)
	while [ "$(curl -s http://127.0.0.1:17795/checkpoint | sed -n 2p)" -lt "$size" ]; do
		"$W/docket-load" -url http://127.0.0.1:17795 -rates , -duration "$DURATION" -clients 2000 -bodies "$BODIES" >/dev/null
	done
	for u in "$S3/docket-bench1" http://127.0.0.1:17795; do printf '%s: %s entries\n' "$u" "$(curl -s "$u/checkpoint" | sed -n 2p)"; done
	echo "| target | clients | requests | ok | other | requests/s | p50 ms | p90 ms | p99 ms | max ms |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	for round in $(seq "$ROUNDS"); do
		"$W/docket-load" -mode reads -url "$S3/docket-bench1" -label "reads: S3 server (round $round)" -clients 64 -duration "$DURATION" | tail -n 1
		"$W/docket-load" -mode reads -url http://127.0.0.1:17795 -label "reads: docket-log -storage posix (round $round)" -clients 64 -duration "$DURATION" | tail -n 1
	done
}

# summary prints, for each round and client count, each docket-log row's
# entries/s as a share of Tessera's server's in the same round (the target
# is 70%), and the median share of single adds at each client count.
summary() {
	[ -s "$W/summary" ] || return 0
	echo
	awk '{ v[$1 " " $2 " " $3] = $4; if ($3 != "tessera") kinds[$3] = 1; ns[$2] = 1; rounds[$1] = 1 }
	END {
		for (n in ns) {
			k = 0
			for (r in rounds) {
				t = v[r " " n " tessera"]; line = ""
				for (kind in kinds) if ((r " " n " " kind) in v && t > 0) {
					line = line sprintf(" %s %.0f%%", kind, 100 * v[r " " n " " kind] / t)
					if (kind == "single") s[++k] = v[r " " n " " kind] / t
				}
				printf "%s clients, round %s: Tessera %d/s;%s\n", n, r, t, line
			}
			for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (s[j] < s[i]) { x = s[i]; s[i] = s[j]; s[j] = x }
			if (k > 0) printf "%s clients: single adds, median %.0f%% of Tessera (target 70%%)\n", n, 100 * (k % 2 ? s[(k + 1) / 2] : (s[k / 2] + s[k / 2 + 1]) / 2)
		}
	}' "$W/summary" | sort -n
}

# run PID LABEL ARGS...: one closed-loop row, then the CPU per answered
# entry of the server PID, mariadbd and the S3 server, and the database's
# statements and InnoDB fsyncs per entry.
run() {
	pid=$1; label=$2; shift 2
	c0=$(cpu_us "$pid"); m0=$(cpu_us "$DB_PID"); s0=$(cpu_us "$S3_PID"); dbstat >"$W/st0"
	prof=""
	if [ -n "${PPROF:-}" ] && [ ! -e "$PPROF/docket-log.pprof" ] && [ "$pid" = "$DOCKET" ] && [ "$n" = "${CLIENTS##*,}" ]; then
		mkdir -p "$PPROF"
		curl -s -o "$PPROF/docket-log.pprof" "http://127.0.0.1:17796/debug/pprof/profile?seconds=30" &
		prof=$!
	fi
	"$W/docket-load" -label "$label" -rates , -duration "$DURATION" -bodies "$BODIES" "$@" | tail -n 1 >"$W/row"
	c1=$(cpu_us "$pid"); m1=$(cpu_us "$DB_PID"); s1=$(cpu_us "$S3_PID"); dbstat >"$W/st1"
	if [ -n "$prof" ]; then wait "$prof"; fi
	st=$(join "$W/st0" "$W/st1" | awk '{ d[$1] = $3 - $2 } END { printf "%d %d", d["Questions"], d["Innodb_data_fsyncs"] }')
	awk -F'|' -v us=$((c1 - c0)) -v db=$((m1 - m0)) -v s3=$((s1 - s0)) -v st="$st" '{
		ok = $5 + 0; split(st, q, " ")
		if (ok == 0) { printf "%s - | - | - | - | - |\n", $0; next }
		printf "%s %d | %d | %d | %.2f | %.3f |\n", $0, us / ok, db / ok, s3 / ok, q[1] / ok, q[2] / ok
	}' "$W/row"
	if [ -n "${KEY:-}" ]; then awk -F'|' -v k="$KEY" '{ print k, $8 + 0 }' "$W/row" >>"$W/summary"; fi
	if [ -n "${DBSTATS_OUT:-}" ]; then echo "$label" >>"$DBSTATS_OUT"; join "$W/st0" "$W/st1" | awk '{ print "  " $1, $3 - $2 }' >>"$DBSTATS_OUT"; fi
}

wait_up() { for _ in $(seq 600); do curl -sf "$1" >/dev/null && return 0; sleep 0.05; done; echo "$1 did not start" >&2; exit 1; }
"$W/docket" keygen -log bench.example/log -o "$W/log.key" >/dev/null
AWSLOG="-key $W/log.key -storage aws -s3-endpoint $S3 -max-inflight 8192 -max-conns 8192"

if [ -n "${ROUNDS:-}" ]; then
	interleaved
	exit 0
fi

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
tessera_aws 17791
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
