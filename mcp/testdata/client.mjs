// A real MCP client (the TypeScript SDK's Client over its stdio transport)
// for mcp/e2e_test.go. It spawns each server through `docket mcp`, makes
// the calls of the plan given as JSON in argv[2], and prints one JSON line
// per call: {"server", "tool", "isError", "text"} or {"error"}.
import path from "node:path";

const nm = process.env.DOCKET_MCP_NODE_MODULES;
const sdk = path.join(nm, "@modelcontextprotocol/sdk/dist/esm/client");
const { Client } = await import(path.join(sdk, "index.js"));
const { StdioClientTransport } = await import(path.join(sdk, "stdio.js"));

const plan = JSON.parse(process.argv[2]);
for (const server of plan) {
  const transport = new StdioClientTransport({ command: server.command[0], args: server.command.slice(1), stderr: "inherit" });
  const client = new Client({ name: "docket-e2e", version: "1.0.0" });
  await client.connect(transport);
  const tools = await client.listTools();
  console.log(JSON.stringify({ server: server.name, tools: tools.tools.map((t) => t.name) }));
  for (const call of server.calls) {
    try {
      const res = await client.callTool({ name: call.tool, arguments: call.arguments });
      const text = (res.content || []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
      console.log(JSON.stringify({ server: server.name, tool: call.tool, isError: !!res.isError, text, meta: res._meta || null }));
    } catch (e) {
      console.log(JSON.stringify({ server: server.name, tool: call.tool, error: String(e && e.message || e) }));
    }
  }
  await client.close();
}
