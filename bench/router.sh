#!/usr/bin/env bash
# Times a read_file call three ways in one run: the read itself
# (files.ReadFile), the same read through the whole router without a trace,
# and with the SQLite trace; prints the router's overhead and the trace's
# cost per recorded step as differences of medians. Also times one step
# appended to the trace on its own. Needs go.
#
#   bench/router.sh            (COUNT=10 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test ./tool -run '^$' -bench 'ReadFile' -count "${COUNT:-10}" >"$out"
go test ./trace -run '^$' -bench 'AppendStep' -count "${COUNT:-10}" >>"$out"
python3 - "$out" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    m = re.match(r"Benchmark(\w+)-\d+\s+\d+\s+([\d.]+) ns/op", line)
    if m:
        runs.setdefault(m.group(1), []).append(float(m.group(2)) / 1000)
med = {k: statistics.median(v) for k, v in runs.items()}
d, r, t = med["ReadFileDirect"], med["ReadFileRouter"], med["ReadFileRouterTraced"]
print(f"median: read_file direct {d:.1f} µs, through the router {r:.1f} µs, with the trace {t:.1f} µs")
print(f"router overhead {r-d:.1f} µs (goal under 100); trace per recorded step {t-r:.1f} µs (goal under 200)")
print(f"one step appended to the trace alone: {med['AppendStep']:.1f} µs")
PY
