// Drives `rein mcp` over stdio with the official TypeScript SDK client:
// lists the tools, calls one that runs and one the policy refuses, and
// prints what it saw as one JSON line for the Go test to check.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, env: process.env, cwd: process.cwd() });
const client = new Client({ name: "rein-ts-test", version: "1.0.0" });
await client.connect(transport);
const tools = await client.listTools();
const ok = await client.callTool({ name: "shell", arguments: { line: "echo hello from ts" } });
const denied = await client.callTool({ name: "shell", arguments: { line: "git push origin main" } });
console.log(JSON.stringify({
  tools: tools.tools.map((t) => t.name),
  ok: { isError: ok.isError ?? false, text: ok.content[0].text, status: ok.structuredContent?.status },
  denied: { isError: denied.isError ?? false, rule: denied.structuredContent?.rule, layer: denied.structuredContent?.layer },
}));
await client.close();
