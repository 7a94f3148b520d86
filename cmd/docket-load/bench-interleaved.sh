#!/bin/sh
# bench-interleaved.sh runs docket-load's closed loop against docket-log and
# against Tessera's POSIX conformance server (answered once an entry is
# sequenced), all started once on fresh storage and then measured in turn,
# round after round, at each client count, so that a loaded machine weighs
# on every target alike. After each row it prints the server's CPU time
# (user + system, from /proc: Linux only) per answered entry. With BATCH
# set (a list such as "1,16"), docket-log is also measured with batch
# POST /add of that many entries per request, from CLIENTS/that many
# clients (as many entries in flight). With OLD set to a docket-log
# binary, that binary is measured too (before and after, in one run).
# At the end it prints every row against raw Tessera's row of the same
# round with as many entries in flight: % of its rate, × its CPU per entry.
# The servers listen on PORT, PORT+1 and PORT+2 of 127.0.0.1 (default
# 17790: set another when another benchmark runs on the machine).
# Usage (from the repository root):
#
#	[OLD=path/to/docket-log] [BATCH=1,16] [PORT=17790] sh cmd/docket-load/bench-interleaved.sh [CLIENTS] [DURATION] [ROUNDS]
set -eu
CLIENTS=${1:-500,2000}
DURATION=${2:-10s}
ROUNDS=${3:-2}
BATCH=${BATCH:-1}
# Signed bodies per docket-log run (each is sent once: the log dedups).
BODIES=${BODIES:-40000}
PORT=${PORT:-17790}
D=127.0.0.1:$PORT
R=127.0.0.1:$((PORT + 1))
O=127.0.0.1:$((PORT + 2))
W=$(mktemp -d)
PIDS=""
trap 'kill $PIDS 2>/dev/null || true; rm -rf "$W"' EXIT
go build -o "$W/docket-log" ./cmd/docket-log
go build -o "$W/docket-load" ./cmd/docket-load
GOBIN="$W" go install github.com/transparency-dev/tessera/cmd/conformance/posix@v1.0.4

# cpu_us PID: the CPU time of a server so far; a server that is gone
# ends the run with the end of its error output.
cpu_us() {
	if [ ! -e "/proc/$1/stat" ]; then
		echo "server $1 exited; the end of its error output:" >&2
		for f in "$W"/*.err; do echo "== $f" >&2; tail -n 40 "$f" >&2; done
		exit 1
	fi
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%d\n", ($14 + $15) * 1000000 / hz }' "/proc/$1/stat"
}
wait_up() { for _ in $(seq 200); do curl -sf "$1/checkpoint" >/dev/null && return 0; sleep 0.05; done; echo "server did not start" >&2; exit 1; }

for a in $D $R $O; do
	if curl -s -o /dev/null "http://$a/"; then echo "$a is taken by another server: set PORT" >&2; exit 1; fi
done
"$W/docket-log" -storage-dir "$W/docket" -listen $D -max-inflight 8192 -max-conns 8192 ${PPROF:+-pprof $PPROF} >/dev/null 2>"$W/docket-log.err" &
DOCKET=$!; PIDS="$PIDS $DOCKET"
if [ -n "${OLD:-}" ]; then
	"$OLD" -storage-dir "$W/old" -listen $O -max-inflight 8192 -max-conns 8192 >/dev/null 2>"$W/old.err" &
	OLDPID=$!; PIDS="$PIDS $OLDPID"
	wait_up http://$O
fi
"$W/docket-load" -keygen "$W/tessera.key"
"$W/posix" -storage_dir "$W/tessera" -listen $R -private_key "$W/tessera.key" 2>"$W/tessera.err" &
RAW=$!; PIDS="$PIDS $RAW"
wait_up http://$D
wait_up http://$R

# run PID LABEL ARGS...: one closed-loop row, then the server's CPU per
# answered entry during it.
run() {
	pid=$1; label=$2; shift 2
	c0=$(cpu_us "$pid")
	"$W/docket-load" -label "$label" -rates , -duration "$DURATION" -bodies "$BODIES" "$@" | tail -n 1 >"$W/row"
	c1=$(cpu_us "$pid")
	awk -F'|' -v us=$((c1 - c0)) '{ ok = $5 + 0; printf "%s %s |\n", $0, (ok > 0 ? int(us / ok) : "-") }' "$W/row" | tee -a "$W/rows"
}
uptime
echo "| target | offered/s | sent | ok | 503 | other | sustained/s | p50 ms | p90 ms | p99 ms | max ms | server CPU µs/entry |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
# target K N: the K-th target at N clients (raw Tessera, docket-log at each
# BATCH, the OLD docket-log).
target() {
	k=$1; n=$2
	if [ "$k" -eq 0 ]; then
		run "$RAW" "tessera-posix (round $round)" -url http://$R -mode tessera -clients "$n"
		return
	fi
	k=$((k - 1))
	for b in $(echo "$BATCH" | tr , ' '); do
		if [ "$k" -eq 0 ]; then
			# As many entries in flight as single adds from n clients.
			run "$DOCKET" "docket-log, $b per request (round $round)" -url http://$D -batch "$b" -clients $(( (n + b - 1) / b ))
			return
		fi
		k=$((k - 1))
	done
	run "$OLDPID" "docket-log old (round $round)" -url http://$O -clients "$n"
}
TARGETS=$(( 1 + $(echo "$BATCH" | tr , '\n' | wc -l) ))
if [ -n "${OLD:-}" ]; then TARGETS=$((TARGETS + 1)); fi
for round in $(seq "$ROUNDS"); do
	for n in $(echo "$CLIENTS" | tr , ' '); do
		# Each round starts at another target: what one run leaves behind
		# (a server still integrating its backlog) weighs on all alike.
		for j in $(seq 0 $((TARGETS - 1))); do
			target $(( (j + round - 1) % TARGETS )) "$n"
		done
	done
	uptime
done

# Each row against raw Tessera's row of the same round and client count.
echo
echo "| target | clients | round | % of raw's rate | × raw's CPU per entry |"
echo "|---|---|---|---|---|"
awk -F'|' '
{
	label = $2; sub(/^ */, "", label); sub(/ *$/, "", label)
	round = label; sub(/.*\(round /, "", round); sub(/\).*/, "", round)
	sub(/ \(round [0-9]+\)/, "", label)
	n = $3; sub(/.*max \(/, "", n); sub(/ clients.*/, "", n)
	if (label ~ /^tessera/) { rate[n, round] = $8; cpu[n, round] = $13; clients[n] = 1; next }
	per = 1
	if (label ~ / per request/) { per = label; sub(/.*, /, "", per); sub(/ per request/, "", per) }
	row[++rows] = label; rc[rows] = n; rp[rows] = per; rr[rows] = round; rrate[rows] = $8; rcpu[rows] = $13
}
END {
	for (i = 1; i <= rows; i++) {
		# The raw row with as many entries in flight: CLIENTS/per clients.
		for (n in clients) {
			if (int((n + rp[i] - 1) / rp[i]) != rc[i] || !((n, rr[i]) in rate) || rate[n, rr[i]] == 0) continue
			c = (cpu[n, rr[i]] + 0 > 0 && rcpu[i] + 0 > 0) ? sprintf("%.2f", rcpu[i] / cpu[n, rr[i]]) : "-"
			printf "| %s | %d | %s | %.0f%% | %s |\n", row[i], n, rr[i], 100 * rrate[i] / rate[n, rr[i]], c
		}
	}
}' "$W/rows"
