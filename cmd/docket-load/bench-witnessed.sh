#!/bin/sh
# bench-witnessed.sh runs docket-load against a docket-log that publishes only
# checkpoints cosigned by 2 of 3 docket-witness processes, all on loopback, on
# fresh storage, and prints the table. Usage (from the repository root):
#
#	sh cmd/docket-load/bench-witnessed.sh [RATES] [DURATION]
set -eu
RATES=${1:-250,500,1000}
DURATION=${2:-10s}
W=$(mktemp -d)
PIDS=""
trap 'kill $PIDS 2>/dev/null || true; rm -rf "$W"' EXIT
for b in docket docket-log docket-witness docket-load; do go build -o "$W/$b" ./cmd/$b; done

cd "$W"
./docket keygen -log bench.example/log -o log.key >/dev/null
echo "log $(cat log.key.pub) http://127.0.0.1:17790/" > policy
for i in 1 2 3; do
	./docket keygen -witness "w$i.example" -o "w$i.key" >/dev/null
	echo "witness w$i $(cat "w$i.key.pub") http://127.0.0.1:1738$i/" >> policy
done
printf 'group ops 2 w1 w2 w3\nquorum ops\n' >> policy
for i in 1 2 3; do
	./docket-witness -key "w$i.key" -db "w$i.db" -logs policy -listen "127.0.0.1:1738$i" -rate 0 >/dev/null 2>"w$i.err" &
	PIDS="$PIDS $!"
done
wait_up() { for _ in $(seq 200); do curl -sf "$1" >/dev/null && return 0; sleep 0.05; done; echo "$1 did not come up" >&2; exit 1; }
for i in 1 2 3; do wait_up "http://127.0.0.1:1738$i/health"; done
./docket-log -key log.key -storage-dir s -witness-policy policy -listen 127.0.0.1:17790 -max-inflight 8192 >/dev/null 2>log.err &
PIDS="$PIDS $!"
wait_up http://127.0.0.1:17790/checkpoint
./docket-load -url http://127.0.0.1:17790 -label "docket-log 2-of-3" -rates "$RATES" -duration "$DURATION" -clients 0
