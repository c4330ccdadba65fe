// Drives graphsvc's MCP tools with the official TypeScript SDK client, as a team's agent would wire it.
//
//   node drive.mjs http URL [TOKEN]      streamable HTTP (Authorization: Bearer TOKEN when given)
//   node drive.mjs stdio COMMAND ARG...  a server spawned over stdio (environment passed through)
//
// Prints one JSON object: the negotiated protocol version, the tool list and each call's result.
// Every call goes through Client.callTool, which validates structuredContent against the tool's
// outputSchema and throws when it does not match: a mismatch ends the run with exit 1.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, target, ...rest] = process.argv.slice(2);
let transport;
if (mode === "http") {
  const headers = rest[0] ? { Authorization: `Bearer ${rest[0]}` } : {};
  transport = new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
} else if (mode === "stdio") {
  transport = new StdioClientTransport({ command: target, args: rest, env: process.env, stderr: "inherit" });
} else {
  console.error("usage: node drive.mjs http URL [TOKEN] | stdio COMMAND ARG...");
  process.exit(2);
}

const client = new Client({ name: "graphsvc-ts-sdk-check", version: "1.0.0" });
await client.connect(transport);
// After initialize the HTTP transport asks for a server-to-client stream (GET); give it the time to
// hear the answer, so a server that mishandles it shows here.
await new Promise((resolve) => setTimeout(resolve, 300));

const results = {};
async function call(label, name, args) {
  const result = await client.callTool({ name, arguments: args });
  results[label] = { isError: Boolean(result.isError), structuredContent: result.structuredContent,
                     text: result.content?.[0]?.text };
  return result.structuredContent;
}

const listing = await client.listTools();
const single = await call("ingest_single", "memory_ingest", {
  items: [{ project_id: "ts/sdk", kind: "constraint", content: "Never log card numbers" }],
});
const first = await call("ingest_batch", "memory_ingest", {
  items: [
    { project_id: "ts/sdk", kind: "task", content: "Design the refund API" },
    { project_id: "ts/sdk", kind: "decision", content: "Refunds go through the ledger" },
  ],
});
await call("ingest_blocked", "memory_ingest", {
  items: [{ project_id: "ts/sdk", kind: "task", content: "Implement refunds", blocked_by: [first.ids[0]] }],
});
await call("bootstrap", "memory_bootstrap", { project_prefix: "ts", terms: ["refund", "ledger"], token_budget: 2000 });
await call("get", "memory_get", { ids: [...single.ids, ...first.ids] });
await call("list", "memory_list", { project_id: "ts/sdk", limit: 2 });
await call("alias", "memory_alias", { term: "refund", aliases: ["chargeback"], project_prefix: "ts" });
await call("aliases", "memory_aliases", { project_id: "ts/sdk" });
await call("retrieve", "memory_retrieve", { project_prefix: "ts", terms: ["chargeback"], limit: 5 });
const session = await call("session_start", "memory_session_start", { agent: "ts-agent", project_id: "ts/sdk" });
await call("session_finish", "memory_session_finish", { session_id: session.session_id, handoff: "Refund API designed" });
await call("digest", "memory_digest", { project_prefix: "ts" });
const claim = await call("claim", "memory_claim", { agent: "ts-agent", project_prefix: "ts", lease_s: 60 });
await call("release", "memory_release", { agent: "ts-agent", task_id: claim.claimed.id });
await call("error", "memory_bootstrap", { project_prefix: "ts/" });

console.log(JSON.stringify({
  protocolVersion: transport.protocolVersion ?? null,
  server: client.getServerVersion(),
  tools: listing.tools.map((tool) => ({ name: tool.name, hasOutputSchema: Boolean(tool.outputSchema) })),
  results,
}));
await client.close();
