// Times read_file calls through `rein mcp` from the official TypeScript
// SDK client, as an MCP client sees them: from the call to its result,
// the protocol, the transport and the router's whole life included.
//
//   node bench.mjs stdio PATH N -- COMMAND ARGS...   (rein mcp over stdio)
//   node bench.mjs http PATH N SESSIONS URL          (streamable HTTP)
//
// Each session calls read_file on PATH a few times to warm up, then N
// times, one call after another; over HTTP the SESSIONS sessions call at
// once. It prints one JSON line: the calls timed and the p50, p90 and p99
// of their latency in microseconds, and the calls a second over all
// sessions.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [mode, path, n, ...rest] = process.argv.slice(2);
const calls = Number(n);
const warmup = 50;

async function connect() {
  const client = new Client({ name: "rein-ts-bench", version: "1.0.0" });
  if (mode === "stdio") {
    const [command, ...args] = rest.slice(rest.indexOf("--") + 1);
    await client.connect(new StdioClientTransport({ command, args, env: process.env, cwd: process.cwd() }));
  } else if (mode === "http") {
    await client.connect(new StreamableHTTPClientTransport(new URL(rest[1])));
  } else {
    throw new Error(`bench.mjs: the mode is stdio or http, not ${mode}`);
  }
  return client;
}

async function session(client, times) {
  const call = async () => {
    const r = await client.callTool({ name: "read_file", arguments: { path } });
    if (r.isError || r.structuredContent?.status !== "ok") throw new Error(`read_file failed: ${JSON.stringify(r)}`);
  };
  for (let i = 0; i < warmup; i++) await call();
  for (let i = 0; i < calls; i++) {
    const t0 = process.hrtime.bigint();
    await call();
    times.push(Number(process.hrtime.bigint() - t0) / 1000);
  }
}

const sessions = mode === "http" ? Number(rest[0]) : 1;
const clients = await Promise.all(Array.from({ length: sessions }, connect));
const times = [];
const t0 = process.hrtime.bigint();
await Promise.all(clients.map((c) => session(c, times)));
const wall = Number(process.hrtime.bigint() - t0) / 1e9;
await Promise.all(clients.map((c) => c.close()));
times.sort((a, b) => a - b);
const pct = (p) => Math.round(times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))]);
console.log(JSON.stringify({ mode, sessions, calls: times.length, p50_us: pct(50), p90_us: pct(90), p99_us: pct(99),
  calls_per_s: Math.round((sessions * (calls + warmup)) / wall) }));
