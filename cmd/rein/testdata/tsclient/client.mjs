// Drives `rein mcp` over stdio with the official TypeScript SDK client:
// lists the tools, calls one that runs and one the policy refuses, starts
// a background line and polls its handle, reads a long result's rest
// with read_result, and prints what it saw as one JSON line for the Go
// test to check. The SDK validates each result's structured content
// against the tool's declared output schema.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, env: process.env, cwd: process.cwd() });
const client = new Client({ name: "rein-ts-test", version: "1.0.0" });
await client.connect(transport);
const tools = await client.listTools();
const ok = await client.callTool({ name: "shell", arguments: { line: "echo hello from ts" } });
const denied = await client.callTool({ name: "shell", arguments: { line: "git push origin main" } });
const started = await client.callTool({ name: "shell_start", arguments: { line: "echo from the background" } });
const handle = /poll it with shell_poll \{"handle": "([^"]+)"\}/.exec(started.structuredContent?.text ?? "")?.[1];
let polled = null;
for (let i = 0; i < 50 && handle; i++) {
  polled = await client.callTool({ name: "shell_poll", arguments: { handle } });
  if (/from the background/.test(polled.structuredContent?.text ?? "") && !/still runs/.test(polled.structuredContent?.text ?? "")) break;
  await new Promise((r) => setTimeout(r, 100));
}
const long = await client.callTool({ name: "read_file", arguments: { path: "long.txt" } });
const page = long.structuredContent?.result_id
  ? await client.callTool({ name: "read_result", arguments: { id: long.structuredContent.result_id, offset: long.structuredContent.chars - 40 } })
  : null;
console.log(JSON.stringify({
  tools: tools.tools.map((t) => t.name),
  schemas: tools.tools.filter((t) => t.outputSchema?.required?.includes("text")).length,
  ok: { isError: ok.isError ?? false, text: ok.content[0].text, status: ok.structuredContent?.status, structuredText: ok.structuredContent?.text },
  denied: { isError: denied.isError ?? false, rule: denied.structuredContent?.rule, layer: denied.structuredContent?.layer, structuredText: denied.structuredContent?.text },
  handle: handle ?? "",
  polled: polled?.structuredContent?.text ?? "",
  long: { elided: long.structuredContent?.elided_chars ?? 0, text: long.structuredContent?.text ?? "" },
  page: page?.structuredContent?.text ?? "",
}));
await client.close();
