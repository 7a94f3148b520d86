# The explorer's browser test: Debian's Chromium and playwright-core from npm
# (no browser download: playwright-core drives /usr/bin/chromium).
if ! command -v chromium >/dev/null 2>&1; then
	(apt-get update -qq && apt-get install -y -qq chromium) >/dev/null
fi
DOCKET_NODE_MODULES="${DOCKET_NODE_MODULES:-$HOME/.cache/docket-ci/browser/node_modules}"
if [ ! -d "$DOCKET_NODE_MODULES/playwright-core" ]; then
	mkdir -p "$(dirname "$DOCKET_NODE_MODULES")"
	(cd "$(dirname "$DOCKET_NODE_MODULES")" && npm install --no-audit --no-fund --silent playwright-core@1.64.1) >/dev/null
fi
export DOCKET_NODE_MODULES
