#!/bin/sh
# perf-rows.sh measures the rows of the README's performance table that
# issue 28 did not target (it targeted the hook, docket-log against raw
# Tessera, the batch add and the relay) at two commits, OLD and NEW, in one
# run: each commit is checked out as a worktree under /tmp and built, and
# each row's own command runs for OLD and NEW in turn (OLD first in odd
# rounds, NEW first in even ones), ROUNDS times, so that the load of a
# shared machine weighs on both alike. One line per row: each figure's
# median over the rounds for OLD and NEW, new/old, and the load average
# when the row ended. cpu-s is the user + system CPU of the whole command
# (the test binary and its children), steadier than wall time under load.
# Usage (from the repository; takes 20-40 minutes on 2 cores):
#
#	[ROUNDS=3] [ROWS="ed25519 policy ..."] [SYNC_N=1000,10000] [PORT=17890] \
#	[DIR=/tmp/perf-rows-keep] sh scripts/perf-rows.sh OLD NEW
#
# With DIR, the worktrees and builds stay there and a later run with the
# same DIR reuses them (delete it, or git worktree remove, afterwards).
set -eu
OLD=$1
NEW=$2
ROUNDS=${ROUNDS:-3}
ROWS=${ROWS:-ed25519 policy witness corpus exec verify strict sync log burst}
SYNC_N=${SYNC_N:-1000,10000}
PORT=${PORT:-17890}
REPO=$(git rev-parse --show-toplevel)
W=${DIR:-$(mktemp -d /tmp/perf-rows.XXXXXX)}
PIDS=""
trap 'kill $PIDS 2>/dev/null || true; [ -n "${DIR:-}" ] || { git -C "$REPO" worktree remove --force "$W/old"; git -C "$REPO" worktree remove --force "$W/new"; rm -rf "$W"; }' EXIT
trap 'exit 1' INT TERM
PKGS="receipts policy internal/cli/docketcmd e2e witness cmd/docket-log"
for s in old new; do
	if [ $s = old ]; then rev=$OLD; else rev=$NEW; fi
	if [ -d "$W/$s" ]; then
		[ -x "$W/$s/bin/docket" ] && [ "$(git -C "$W/$s" rev-parse HEAD)" = "$(git -C "$REPO" rev-parse "$rev^{commit}")" ] && continue
		git -C "$W/$s" checkout -q --detach "$rev"
	else
		git -C "$REPO" worktree add -q --detach "$W/$s" "$rev"
	fi
	mkdir -p "$W/$s/bin"
	(
		cd "$W/$s"
		for p in $PKGS; do go test -c -o "bin/$(basename $p).test" "./$p"; done
		CGO_ENABLED=0 go build -o bin/ ./cmd/docket ./cmd/docket-log ./cmd/docket-load
	)
done
echo "OLD $OLD = $(git -C "$W/old" log -1 --format='%h %ad' --date=iso)"
echo "NEW $NEW = $(git -C "$W/new" log -1 --format='%h %ad' --date=iso)"
uptime

# metrics: "name unit value" lines from go test output (benchmark lines,
# and the -v lines of TestCorpus and TestBurst).
metrics() {
	awk 'function ms(d) { if (d ~ /ms$/) return d + 0; if (d ~ /µs$/) return d / 1000; return d * 1000 }
	/^Benchmark/ { n = $1; sub(/-[0-9]+$/, "", n); sub(/^Benchmark/, "", n); for (i = 3; i < NF; i += 2) print n, $(i + 1), $i }
	/attacks blocked/ { split($0, a, "[(%]"); print "corpus", "attacks-blocked-%", a[2]; print "corpus", "ordinary-allowed-%", a[4]
		k = "attacks"; for (i = 1; i <= NF; i++) if ($i ~ /^[0-9]+\/[0-9]+$/) { split($i, a, "/"); print "corpus", k, a[2]; k = "ordinary" } }
	/client during the burst/ { for (i = 1; i < NF; i++) if ($i ~ /^p(50|99)$/) { v = $(i + 1); sub(/,$/, "", v); print "burst", "good-client-" $i "-ms", ms(v) } }
	/server peak RSS/ { for (i = 1; i < NF; i++) { if ($i == "RSS") print "burst", "peak-RSS-MB", $(i + 1); if ($i == "most") print "burst", "goroutines", $(i + 1) } }'
}

# gotest SIDE PKG ARGS...: PKG's test binary of SIDE, run in its package
# directory; its figures and CPU time appended to $W/res.SIDE. With PER
# set to the iterations of one benchmark (-test.benchtime PERx), the CPU
# time is given per iteration, as CPU_AS cpu-µs/op (the process's start
# and the benchmark's setup included).
gotest() {
	side=$1; pkg=$2; shift 2
	if ! (cd "$W/$side/$pkg" && /usr/bin/time -f '%U %S' -o "$W/cpu" "$W/$side/bin/$(basename "$pkg").test" "$@") >"$W/out" 2>&1; then
		echo "$side: $pkg $*: failed; the end of its output:" >&2
		tail -n 20 "$W/out" >&2
		return 1
	fi
	metrics <"$W/out" >>"$W/res.$side"
	awk -v k="${CPU_AS:-all}" -v n="${PER:-0}" '{ gsub(/[$^]/, "", k); sub(/^Benchmark/, "", k); c = $1 + $2; if (n > 0) print k, "cpu-µs/op", int(c * 1e6 / n); else print k, "cpu-s", c }' "$W/cpu" >>"$W/res.$side"
}

# report ROW: the medians of $W/res.old and $W/res.new, one line.
report() {
	awk -v row="$1" -v la="$(cut -d' ' -f1-3 /proc/loadavg)" '
	function med(s,   v, n, i, j, t) {
		n = split(s, v, " ")
		for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) { t = v[j]; v[j] = v[j - 1]; v[j - 1] = t }
		return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
	}
	{ k = $1 " " $2; if (!(k in seen)) { seen[k] = 1; keys[++nk] = k } }
	FILENAME ~ /old$/ { o[k] = o[k] " " $3 }
	FILENAME ~ /new$/ { m[k] = m[k] " " $3 }
	END {
		line = row ":"
		for (i = 1; i <= nk; i++) {
			k = keys[i]
			a = (k in o) ? med(o[k]) : "-"; b = (k in m) ? med(m[k]) : "-"
			r = (a != "-" && b != "-" && a + 0 != 0) ? sprintf("%.2f", b / a) : "-"
			line = line sprintf(" %s old %s new %s (%s);", k, a, b, r)
		}
		print line " load " la
	}' "$W/res.old" "$W/res.new"
}

# row NAME: each round runs one_NAME for both sides, then report.
row() {
	: >"$W/res.old"
	: >"$W/res.new"
	for r in $(seq "$ROUNDS"); do
		if [ $((r % 2)) -eq 1 ]; then order="old new"; else order="new old"; fi
		for s in $order; do "one_$1" "$s" || { echo "$1: failed (its output on stderr)"; return 0; }; done
	done
	report "$1"
}

one_verify() { gotest "$1" internal/cli/docketcmd -test.run '^$' -test.bench 'VerifyChainFile$' -test.benchtime 1x; }
# each BENCH:N: a process of its own for one benchmark of N iterations, so
# that its CPU time per iteration can be given (ns/op is wall time, which a
# loaded machine stretches).
micro() {
	side=$1; pkg=$2; shift 2
	for bn in "$@"; do
		CPU_AS=${bn%:*}; PER=${bn#*:}
		gotest "$side" "$pkg" -test.run '^$' -test.bench "$CPU_AS" -test.benchtime "${PER}x" || return 1
	done
	CPU_AS=; PER=
}
one_ed25519() { micro "$1" receipts 'VerifyEd25519/^crypto$:5000' 'VerifyEd25519/^table$:5000' 'VerifyEd25519/^build$:500'; }
one_policy() { micro "$1" policy '^BenchmarkDecideBash$:2000' '^BenchmarkDecideBash20$:2000' '^BenchmarkLoadDefaultValidated$:300'; }
one_strict() { gotest "$1" e2e -test.run '^$' -test.bench StrictPre -test.benchtime 50x; }
one_witness() { micro "$1" witness 'AddCheckpoint/^logs=1$:3000' 'AddCheckpoint/^logs=8$:3000'; }
one_burst() { gotest "$1" cmd/docket-log -test.count=1 -test.run '^TestBurst$' -test.v; }
one_corpus() { gotest "$1" policy -test.count=1 -test.run '^TestCorpus$' -test.v; }

# sync: each side's benchmark times its own docket (-sync.impl new).
# NEW's benchmark cannot time OLD's binary (-sync.old): it checks the
# output, and "stored 1 proofs" became "stored 1 proof" in between.
one_sync() {
	gotest "$1" internal/cli/docketcmd -test.run '^$' -test.bench '^BenchmarkSync$' -test.benchtime 20x \
		-sync.n "$SYNC_N" -sync.impl new
}

# log: OLD's and NEW's docket-log started once on fresh storage, each
# driven in turn by NEW's docket-load (the same generator for both): 1,000
# receipts/s offered, then a closed loop of 4,096 clients, 10 s each; the
# server's CPU (user + system, /proc) per answered request.
cpu_us() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%d\n", ($14 + $15) * 1000000 / hz }' "/proc/$1/stat"; }
start_logs() {
	for s in old new; do
		if [ $s = old ]; then port=$PORT; else port=$((PORT + 1)); fi
		"$W/$s/bin/docket-log" -storage-dir "$W/$s.log" -listen 127.0.0.1:$port -max-inflight 8192 -max-conns 8192 >/dev/null 2>"$W/$s.log.err" &
		eval "LOG_$s=$!"
		PIDS="$PIDS $!"
		for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/checkpoint" >/dev/null && break; sleep 0.05; done
	done
}
one_log() {
	if [ $1 = old ]; then port=$PORT; pid=$LOG_old; else port=$((PORT + 1)); pid=$LOG_new; fi
	c0=$(cpu_us "$pid")
	"$W/new/bin/docket-load" -url "http://127.0.0.1:$port" -rates 1000 -duration 10s -clients 4096 >"$W/out"
	c1=$(cpu_us "$pid")
	awk -F'|' -v us=$((c1 - c0)) '
	NR > 2 && $3 + 0 > 0 { print "1000/s", "p50-ms", $9 + 0; print "1000/s", "p99-ms", $11 + 0 }
	NR > 2 && $3 + 0 == 0 { print "4096-clients", "sustained/s", $8 + 0 }
	NR > 2 { ok += $5 }
	END { if (ok > 0) print "server", "cpu-µs/request", int(us / ok) }' "$W/out" >>"$W/res.$1"
}

# exec: docket exec, absent before issue 23, against /bin/true in a project
# docket init wrote; 50 runs of each, the mean wall time and CPU per run.
one_exec() {
	d=$W/$1/bin/docket
	mkdir -p "$W/exec.$1"
	cd "$W/exec.$1"
	[ -d .docket ] || "$d" init -command "$d" >/dev/null
	if ! "$d" exec -- /bin/true >/dev/null 2>&1; then cd "$REPO"; return 0; fi
	for k in true exec; do
		c=/bin/true
		[ $k = exec ] && c="$d exec -- /bin/true"
		/usr/bin/time -f '%e %U %S' -o "$W/cpu" sh -c "for i in \$(seq 50); do $c; done"
		awk -v k=$k '{ printf "exec %s-ms %.2f\nexec %s-cpu-ms %.2f\n", k, $1 * 20, k, ($2 + $3) * 20 }' "$W/cpu" >>"$W/res.$1"
	done
	cd "$REPO"
}

for name in $ROWS; do
	[ "$name" = log ] && start_logs
	row "$name"
done
