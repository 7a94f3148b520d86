// A stdio MCP server for mcp/e2e_test.go that reads every message as the
// TypeScript SDK does (JSON.parse, then its zod schemas: JSONRPCMessageSchema,
// and CallToolRequestSchema for tools/call) and appends what it read to the
// file argv[2], one JSON line per message: {"kind", "method", "id", "name",
// "arguments"}. It answers requests at once, in order: tools/list with the
// tool "t" whose inputSchema is in argv[3], anything else with an empty result.
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";

const nm = process.env.DOCKET_MCP_NODE_MODULES;
const types = await import(path.join(nm, "@modelcontextprotocol/sdk/dist/esm/types.js"));
const [, , viewFile, schemaFile] = process.argv;
const inputSchema = JSON.parse(fs.readFileSync(schemaFile, "utf8"));

const record = (v) => fs.appendFileSync(viewFile, JSON.stringify(v) + "\n");
const send = (v) => process.stdout.write(JSON.stringify(v) + "\n");

const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of rl) {
  let msg;
  try {
    msg = types.JSONRPCMessageSchema.parse(JSON.parse(line));
  } catch (e) {
    record({ kind: "invalid" });
    continue;
  }
  if (!("method" in msg)) {
    record({ kind: "response", id: msg.id });
    continue;
  }
  if (!("id" in msg)) {
    record({ kind: "notification", method: msg.method });
    continue;
  }
  const view = { kind: "request", method: msg.method, id: msg.id };
  if (msg.method === "tools/call") {
    const r = types.CallToolRequestSchema.safeParse(msg);
    if (r.success) {
      view.name = r.data.params.name;
      view.arguments = r.data.params.arguments ?? {};
    } else {
      view.kind = "invalid-call";
    }
  }
  record(view);
  if (msg.method === "tools/list") {
    send({ jsonrpc: "2.0", id: msg.id, result: { tools: [{ name: "t", inputSchema }] } });
  } else if (msg.method === "tools/call") {
    send({ jsonrpc: "2.0", id: msg.id, result: { content: [{ type: "text", text: "ok" }] } });
  } else {
    send({ jsonrpc: "2.0", id: msg.id, result: {} });
  }
}
