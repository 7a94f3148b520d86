# docket mcp's end-to-end tests: real MCP servers and the TypeScript SDK's
# client from npm, pinned, in a cache directory (Node comes from Debian when
# it is missing). The tests read DOCKET_MCP_NODE_MODULES and skip, naming
# this script, when it is unset.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	(apt-get update -qq && apt-get install -y -qq nodejs npm) >/dev/null
fi
DOCKET_MCP_NODE_MODULES="${DOCKET_MCP_NODE_MODULES:-$HOME/.cache/docket-ci/mcp/node_modules}"
if [ ! -f "$DOCKET_MCP_NODE_MODULES/.docket-mcp-1" ]; then
	mkdir -p "$(dirname "$DOCKET_MCP_NODE_MODULES")"
	(cd "$(dirname "$DOCKET_MCP_NODE_MODULES")" && npm install --no-audit --no-fund --silent \
		@modelcontextprotocol/sdk@1.32.2 \
		@modelcontextprotocol/server-filesystem@2026.8.31 \
		@modelcontextprotocol/server-everything@2026.8.31) >/dev/null
	touch "$DOCKET_MCP_NODE_MODULES/.docket-mcp-1"
fi
export DOCKET_MCP_NODE_MODULES
