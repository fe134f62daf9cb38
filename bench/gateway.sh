#!/usr/bin/env bash
# What rein launch's model gateway adds to a streamed model call, against
# a direct TLS connection to the same scripted provider, in one run: the
# time to the first byte of a small answer (goal: under 1 ms added) and the
# throughput of a 10 MB stream flushed event by event. Needs go.
#
#   bench/gateway.sh            (COUNT=50 calls of each kind by default)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(go test ./launch/gateway -run '^$' -bench '^BenchmarkGateway$' -benchtime "${COUNT:-50}x" -count 1) ||
  { echo "$out" >&2; exit 1; }
echo "$out" | awk '/^BenchmarkGateway/ { for (i = 3; i < NF; i += 2) printf "%-24s %s\n", $(i+1), $i }'
