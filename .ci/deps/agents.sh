# The real agent CLIs for e2e/agents_test.go (issue 13): Claude Code, Gemini
# CLI and Codex from npm at pinned versions, installed once into a cache
# directory, never globally. The tests read DOCKET_AGENTS_BIN; they skip,
# saying why, only when DOCKET_AGENTS_UNAVAILABLE is set (npm unreachable).
DOCKET_AGENTS_DIR="${DOCKET_AGENTS_DIR:-$HOME/.cache/docket-ci/agents}"
docket_agent_pkgs="@anthropic-ai/claude-code@2.1.330 @google/gemini-cli@0.61.0 @openai/codex@0.169.0"
if [ ! -f "$DOCKET_AGENTS_DIR/.installed" ] || [ "$(cat "$DOCKET_AGENTS_DIR/.installed")" != "$docket_agent_pkgs" ]; then
	if ! command -v npm >/dev/null 2>&1; then
		(apt-get update -qq && apt-get install -y -qq nodejs npm) >/dev/null
	fi
	if ! npm ping >/dev/null 2>&1; then
		echo "agents: the npm registry is unreachable; the real-agent tests will skip" >&2
		export DOCKET_AGENTS_UNAVAILABLE="npm registry unreachable"
	else
		mkdir -p "$DOCKET_AGENTS_DIR"
		# shellcheck disable=SC2086
		(cd "$DOCKET_AGENTS_DIR" && npm install --no-audit --no-fund --silent $docket_agent_pkgs) >/dev/null
		echo "$docket_agent_pkgs" >"$DOCKET_AGENTS_DIR/.installed"
	fi
fi
DOCKET_AGENTS_BIN="$DOCKET_AGENTS_DIR/node_modules/.bin"
export DOCKET_AGENTS_BIN
unset docket_agent_pkgs
