#!/bin/sh
# explore-compare.sh runs two docket binaries' explore side by side over one
# log, as users run it, each with a fresh -state: both catch up at the same
# time on the same machine (time, CPU seconds, peak RSS each), then each page
# is asked of one and then of the other, ROUNDS times (p50 and p99 each).
# While both catch up, their home pages and an issuer's page are asked of
# each in turn, once a second.
#
#     scripts/explore-compare.sh OLD NEW DIR [ROUNDS]
#
# DIR holds log/, log.vkey and policy (BenchmarkExplore's
# DOCKET_EXPLORE_BENCH_DIR). Needs curl.
set -eu
old=$1 new=$2 dir=$3 rounds=${4:-100}
vkey=$(cat "$dir/log.vkey")
n=$(cat "$dir/entries")
work=$(mktemp -d)
trap 'kill $po $pn 2>/dev/null; rm -rf "$work"' EXIT
echo "# $(date -u +%FT%TZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $n entries"
start() { # binary, port
	"$1" explore -log "$dir/log" -log-key "$vkey" -witness-policy "$dir/policy" -listen "127.0.0.1:$2" -state "$work/$2" >/dev/null 2>&1 &
}
start "$old" 7491
po=$!
start "$new" 7492
pn=$!
t0=$(date +%s.%N)
cpu() { awk '{print ($14+$15)/100}' "/proc/$1/stat"; }
rss() { awk '/VmHWM/ {print int($2/1024)}' "/proc/$1/status"; }
done_o= done_n=
: >"$work/co" && : >"$work/cn"
issuer=
while [ -z "$done_o" ] || [ -z "$done_n" ]; do
	sleep 1
	# While both catch up, the home page and an issuer's page of each, one
	# after the other (the issuer the first one the new home page lists).
	if [ -z "$done_o" ] && [ -z "$done_n" ]; then
		for path in / ${issuer:+"$issuer"}; do
			curl -s -o /dev/null -w "$path %{http_code} %{time_total}\n" "http://127.0.0.1:7491$path" >>"$work/co"
			curl -s -o "$work/page" -w "$path %{http_code} %{time_total}\n" "http://127.0.0.1:7492$path" >>"$work/cn"
		done
		[ -n "$issuer" ] || issuer=$(grep -o 'href="/issuer/sb:issuer:[^"/]*"' "$work/page" 2>/dev/null | head -1 | cut -d'"' -f2)
	fi
	now=$(date +%s.%N)
	if [ -z "$done_o" ] && curl -s http://127.0.0.1:7491/health | grep -q '"ok"'; then
		done_o=1
		echo "old caught up: $(echo "$now - $t0" | bc) s, $(cpu $po) CPU-s, peak RSS $(rss $po) MB"
	fi
	if [ -z "$done_n" ] && curl -s http://127.0.0.1:7492/health | grep -q '"ok"'; then
		done_n=1
		echo "new caught up: $(echo "$now - $t0" | bc) s, $(cpu $pn) CPU-s, peak RSS $(rss $pn) MB"
	fi
done
pct() { sort -n "$1" | awk '{a[NR]=$1} END {i=int(NR*0.99)+1; if (i>NR) i=NR; printf "%.1f/%.1f ms", a[int(NR/2)+1]*1000, a[i]*1000}'; }
for kind in home issuer; do
	pat='^/ 200 '
	[ $kind = issuer ] && pat='^/issuer/[^ ]* 200 '
	grep "$pat" "$work/co" | cut -d' ' -f3 >"$work/o"
	grep "$pat" "$work/cn" | cut -d' ' -f3 >"$work/n"
	echo "while both catch up, $kind: old $(pct "$work/o"), new $(pct "$work/n") (p50/p99 of $(wc -l <"$work/o") and $(wc -l <"$work/n") answers)"
done
half=$((n / 2))
hour=$(date -u -d "2026-11-24T00:00:00Z + $((half * 17)) seconds" +%Y-%m-%dT%H:%M)
hour2=$(date -u -d "2026-11-24T00:00:00Z + $((half * 17 + 3600)) seconds" +%Y-%m-%dT%H:%M)
for path in / "/?before=$((n / 3))" "/search?tool=Read&decision=deny" "/search?kind=unmediated&tool=Write" \
	"/search?tool=NoSuchTool" "/search?kind=bad" "/search?from=$hour&to=$hour2" "/search?decision=deny&before=$((n / 10))" \
	/session/1 "/session/$((n / 50))"; do
	: >"$work/o" && : >"$work/n"
	i=0
	while [ $i -lt "$rounds" ]; do
		curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:7491$path" >>"$work/o"
		curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:7492$path" >>"$work/n"
		i=$((i + 1))
	done
	echo "$path: old $(pct "$work/o"), new $(pct "$work/n") (p50/p99)"
done
echo "peak RSS after pages: old $(rss $po) MB, new $(rss $pn) MB"
echo "# load after: $(cut -d' ' -f1-3 /proc/loadavg)"
