#!/bin/sh
# audit-compare.sh runs two builds of docket (OLD and NEW binaries) on the
# same input, alternated, ROUNDS times: docket audit of the presented chains
# against the storage directory, and docket monitor -once catching up from
# nothing. Each run prints its CPU seconds (user+sys), wall time and peak
# RSS; the end, the medians and NEW/OLD ratios (issue 24).
#
#     scripts/audit-compare.sh OLD NEW DIR [ROUNDS]
#
# DIR is what scripts/audit-bench.sh generates (log, log.vkey, issuers.jwks,
# chains/).
set -eu
old=$1 new=$2 dir=$3 rounds=${4:-3}
n=$(cat "$dir"/chains/*.jsonl | wc -l)
vkey=$(cat "$dir/log.vkey")
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $n receipts, $rounds rounds"
cd "$dir"
run() { # label, binary, command...
	label=$1
	shift
	/usr/bin/time -f '%U %S %e %M' -o "$out/t" "$@" >/dev/null 2>"$out/err" || true
	read -r u s e m <"$out/t"
	echo "$label $u $s $e $m" >>"$out/all"
	awk -v l="$label" -v u="$u" -v s="$s" -v e="$e" -v m="$m" -v n="$n" 'BEGIN {
		printf "%-12s cpu %6.1f s (%3.0f µs/receipt)  wall %6.1f s  peak RSS %4.0f MB\n", l, u+s, 1e6*(u+s)/n, e, m/1024}'
}
for r in $(seq "$rounds"); do
	for v in old new; do
		eval bin=\$$v
		run "audit-$v" "$bin" audit -log log -log-key "$vkey" -jwks issuers.jwks -evidence "$out/ev" chains/*.jsonl
	done
	for v in old new; do
		eval bin=\$$v
		rm -rf "$out/mon"
		run "monitor-$v" "$bin" monitor -once -log log -log-key "$vkey" -jwks issuers.jwks -state "$out/mon"
	done
done
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
for cmd in audit monitor; do
	for v in old new; do
		grep "^$cmd-$v " "$out/all" | awk '{print $2+$3, $5}' | sort -n >"$out/$cmd-$v"
	done
	awk -v cmd="$cmd" -v n="$n" '
		function med(a, k) { return k % 2 ? a[(k+1)/2] : (a[k/2] + a[k/2+1]) / 2 }
		FNR == 1 { f++ }
		f == 1 { oc[++ko] = $1; ro[ko] = $2 } f == 2 { nc[++kn] = $1; rn[kn] = $2 }
		END {
			asort(ro); asort(rn)
			printf "%s median: cpu %.1f -> %.1f s (%.0f -> %.0f µs/receipt, %.2fx), peak RSS %.0f -> %.0f MB (%.2fx)\n", cmd,
				med(oc, ko), med(nc, kn), 1e6*med(oc, ko)/n, 1e6*med(nc, kn)/n, med(nc, kn)/med(oc, ko),
				med(ro, ko)/1024, med(rn, kn)/1024, med(rn, kn)/med(ro, ko)}' "$out/$cmd-old" "$out/$cmd-new"
done
