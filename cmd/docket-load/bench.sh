#!/bin/sh
# bench.sh runs docket-load against docket-log and against Tessera's own POSIX
# conformance server, one after the other on fresh storage, with the same
# offered rates, and prints both tables and each server's CPU per answered
# request (read from /proc: Linux only). Usage (from the repository root):
#
#	sh cmd/docket-load/bench.sh [RATES] [DURATION] [CLIENTS]
set -eu
RATES=${1:-250,500,1000}
DURATION=${2:-10s}
CLIENTS=${3:-256}
W=$(mktemp -d)
trap 'kill $PID 2>/dev/null || true; rm -rf "$W"' EXIT
go build -o "$W/docket-log" ./cmd/docket-log
go build -o "$W/docket-load" ./cmd/docket-load
GOBIN="$W" go install github.com/transparency-dev/tessera/cmd/conformance/posix@v1.0.4

# cpu_us PID: the CPU time (user + system) process PID has used, in µs.
cpu_us() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%d\n", ($14 + $15) * 1000000 / hz }' "/proc/$1/stat"; }
# per_request US TABLE: US divided by the answered (ok) requests of TABLE.
per_request() { awk -F'|' -v us="$1" 'NR > 2 { ok += $5 } END { if (ok > 0) printf "%d", us / ok; else print "-" }' "$2"; }

wait_up() { for _ in $(seq 200); do curl -sf "$1/checkpoint" >/dev/null && return 0; sleep 0.05; done; echo "server did not start" >&2; exit 1; }

"$W/docket-log" -storage-dir "$W/docket" -listen 127.0.0.1:17790 -max-inflight 8192 -max-conns 8192 >/dev/null 2>"$W/docket-log.err" &
PID=$!
wait_up http://127.0.0.1:17790
C0=$(cpu_us $PID)
"$W/docket-load" -url http://127.0.0.1:17790 -label docket-log -rates "$RATES" -duration "$DURATION" -clients "$CLIENTS" | tee "$W/docket.out"
DOCKET_CPU=$(per_request $(( $(cpu_us $PID) - C0 )) "$W/docket.out")
kill $PID; wait $PID 2>/dev/null || true

"$W/docket-load" -keygen "$W/tessera.key"
"$W/posix" -storage_dir "$W/tessera" -listen 127.0.0.1:17791 -private_key "$W/tessera.key" 2>"$W/tessera.err" &
PID=$!
wait_up http://127.0.0.1:17791
C0=$(cpu_us $PID)
"$W/docket-load" -url http://127.0.0.1:17791 -mode tessera -label tessera-posix -rates "$RATES" -duration "$DURATION" -clients "$CLIENTS" > "$W/tessera.out"
TESSERA_CPU=$(per_request $(( $(cpu_us $PID) - C0 )) "$W/tessera.out")
tail -n +3 "$W/tessera.out"
# The same server at docket-log's semantics: a request is done once a
# published checkpoint covers it (docket-log answers only then, with a proof).
"$W/docket-load" -url http://127.0.0.1:17791 -mode tessera-published -label "tessera-posix, until published" -rates , -duration "$DURATION" -clients "$CLIENTS" | tail -n +3
echo
echo "server CPU (user + system) per answered request, over all rows: docket-log $DOCKET_CPU µs, tessera-posix $TESSERA_CPU µs"
