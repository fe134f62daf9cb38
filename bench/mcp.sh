#!/usr/bin/env bash
# Times read_file of a 4 KiB file through rein mcp from the official
# TypeScript SDK's client, in one run: over stdio, over streamable HTTP
# (one session, and 20 sessions calling at once), against the same call
# through the router in process (trace included) and against a floor
# server of the same Go SDK with nothing of rein (no router, policy,
# redaction or trace). Prints each p50 (p90, p99), its ratio to the
# in-process call, the server's CPU time a call, and the machine's load
# beside them. Needs go and node, with the SDK installed:
#   npm ci --prefix cmd/rein/testdata/tsclient
#
#   bench/mcp.sh                       (CALLS=2000 by default)
#   PROFILES=DIR bench/mcp.sh          (and a CPU profile of each server in DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
load=$(uptime)
profiles=""
if [ -n "${PROFILES:-}" ]; then
  mkdir -p "$PROFILES"
  profiles=$(cd "$PROFILES" && pwd)
fi
REIN_BENCH_CALLS="${CALLS:-2000}" REIN_MCP_CPUPROFILE="$profiles" \
  go test ./cmd/rein -run '^$' -bench 'MCPReadFile4K' -benchtime 1x >"$out"
python3 - "$out" "$load" <<'PY'
import re, sys
line = next(l for l in open(sys.argv[1]) if l.startswith("BenchmarkMCPReadFile4K"))
m = {k: float(v) for v, k in re.findall(r"([\d.]+) ([\w-]+)", line)}
print(f"load: {sys.argv[2].strip()}")
print(f"in process (router and trace): p50 {m['inproc-p50-us']:.0f} µs")
for name, what in (("stdio", "stdio"), ("http", "HTTP, one session"), ("http20", "HTTP, 20 sessions at once")):
    floor = f"; floor p50 {m[name + '-floor-p50-us']:.0f} µs, CPU {m[name + '-floor-cpu-us']:.0f} µs" if name + "-floor-p50-us" in m else ""
    print(f"{what}: p50 {m[name + '-p50-us']:.0f} µs (p90 {m[name + '-p90-us']:.0f}, p99 {m[name + '-p99-us']:.0f}), "
          f"{m[name + '-ratio']:.1f}x in process; server CPU {m[name + '-cpu-us']:.0f} µs a call{floor}")
PY
