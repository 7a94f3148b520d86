#!/bin/sh
# audit-bench.sh measures docket audit and docket monitor as users run them,
# in one run beside the floor (Ed25519 verifications/s on all cores) and
# beside Tessera's client merely streaming the same bundles (issue 24).
#
#     scripts/audit-bench.sh [DIR [RECEIPTS]]
#
# DIR (default /tmp/docket-audit-bench-RECEIPTS) receives, once, a Tessera
# POSIX log of RECEIPTS (default 200000) receipts of 20 issuers and every
# session chain as DIR/chains/*.jsonl (audit's TestGenerateAuditInput);
# later runs reuse it. Each command runs under /usr/bin/time -v (wall time,
# CPU, peak RSS). Run it from the repository's root.
set -eu
n=${2:-200000}
dir=${1:-/tmp/docket-audit-bench-$n}
addr=127.0.0.1:${DOCKET_BENCH_PORT:-7791}

go build -o "$dir.docket" ./cmd/docket
go test -c -o "$dir.audit.test" ./audit
if [ ! -f "$dir/log.vkey" ]; then
	echo "generating $n receipts into $dir" >&2
	"$dir.audit.test" -test.run TestGenerateAuditInput -test.timeout 4h -audit.out "$dir" -audit.receipts "$n" >&2
fi
vkey=$(cat "$dir/log.vkey")

"$dir.audit.test" -test.run TestServeAuditLog -test.timeout 10h -audit.dir "$dir" -audit.serve "$addr" >/dev/null 2>&1 &
server=$!
trap 'kill $server 2>/dev/null' EXIT
sleep 1

timed() { # name, command...
	name=$1
	shift
	/usr/bin/time -v "$@" >/dev/null 2>"$dir.err" || true
	printf '%s: ' "$name"
	grep -E '^docket: (audited|monitor: no alert)' "$dir.err" | sed -E 's/ against.*| and is consistent.*|; [0-9]+ new.*//' | tr '\n' ' ' || true
	awk -F': ' '/Elapsed \(wall/ {w=$2} /User time/ {u=$2} /System time/ {s=$2} /Maximum resident/ {r=$2}
		END {k=split(w, p, ":"); secs=0; for (i=1; i<=k; i++) secs=secs*60+p[i]
		printf "wall %s (%.0f receipts/s", w, n/secs; if (fw > 0) printf ", %.0f%% of the floor", 100*n/secs/fw
		printf "), cpu %.1f s (%.0f receipts/cpu-s", u+s, n/(u+s); if (fc > 0) printf ", %.0f%% of the floor", 100*n/(u+s)/fc
		printf "), peak RSS %.0f MB (%.0f B/receipt)\n", r/1024, r*1024/n}' n="$n" fw="${floor_wall:-0}" fc="${floor_cpu:-0}" "$dir.err"
}

echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $n receipts"
"$dir.audit.test" -test.run '^$' -test.bench 'Floor|Stream' -test.benchtime 1x -audit.dir "$dir" -audit.url "http://$addr" 2>/dev/null | grep -E '^Benchmark' >"$dir.floor" || true
cat "$dir.floor"
# The floor's rates, by wall clock and per CPU-second, for the ratios below.
floor_wall=$(awk '/^BenchmarkFloor/ {for (i = 2; i <= NF; i++) if ($i == "verifications/s") print $(i-1)}' "$dir.floor")
floor_cpu=$(awk '/^BenchmarkFloor/ {for (i = 2; i <= NF; i++) if ($i == "verifications/cpu-s") print $(i-1)}' "$dir.floor")
cd "$dir"
timed "docket audit, storage directory" "$dir.docket" audit -log log -log-key "$vkey" -jwks issuers.jwks -evidence "$dir.ev" chains/*.jsonl
timed "docket audit, loopback HTTP" "$dir.docket" audit -log "http://$addr" -log-key "$vkey" -jwks issuers.jwks -evidence "$dir.ev" chains/*.jsonl
rm -rf "$dir.state" "$dir.mon"
timed "docket audit -state, first" "$dir.docket" audit -log log -log-key "$vkey" -jwks issuers.jwks -evidence "$dir.ev" -state "$dir.state" chains/*.jsonl
timed "docket audit -state, again (nothing new)" "$dir.docket" audit -log log -log-key "$vkey" -jwks issuers.jwks -evidence "$dir.ev" -state "$dir.state" chains/*.jsonl
timed "docket monitor -once, catch-up from nothing" "$dir.docket" monitor -once -log log -log-key "$vkey" -jwks issuers.jwks -state "$dir.mon"
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
