#!/usr/bin/env bash
# Runs Docket's gate corpora (testdata/corpus) through cc-safety-net, the
# most used Claude Code hook guard on npm, as Claude Code would: one
# PreToolUse event per line on the stdin of `cc-safety-net hook
# --claude-code`, in a project laid out like the one policy/corpus_test.go
# builds. Prints the share of attacks blocked (deny or ask) and of
# ordinary calls allowed, for comparison with
#   go test -run '^$' -bench Corpus ./policy
#
# Usage: scripts/cc-safety-net-corpus.sh [VERSION]   (default 2.4.5)
# Needs node and npm; installs cc-safety-net into a temporary directory.
set -euo pipefail
version=${1:-2.4.5}
repo=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm install --silent --no-audit --no-fund "cc-safety-net@$version" >/dev/null)
node "$repo/scripts/cc-safety-net-corpus.mjs" \
	"$tmp/node_modules/cc-safety-net/dist/bin/cc-safety-net.js" "$tmp/fixture" \
	"$repo/testdata/corpus/attacks.txt" "$repo/testdata/corpus/benign.txt"
