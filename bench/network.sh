#!/usr/bin/env bash
# Downloads 1 GiB from a loopback HTTP server through rein's egress proxy
# (network proxy, both rungs; plain HTTP and a CONNECT tunnel) against the
# same download made directly on the host, in one run, and prints the
# throughput ratios (goal: at least half the direct throughput); then the
# per-connection setup cost: 200 fresh connections through the proxy
# against 200 direct. Needs go, curl, bwrap and python3.
#
#   bench/network.sh            (RUNS=3 by default)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for tool in go curl bwrap python3; do
  command -v "$tool" >/dev/null || { echo "network.sh: $tool is not installed" >&2; exit 1; }
done
work=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill "$server"; rm -rf "$work"' EXIT
(cd "$here/.." && go build -o "$work/rein" ./cmd/rein && go build -o "$work/blobserver" ./bench/cmd/blobserver)
mkdir -p "$work/ws"
"$work/blobserver" > "$work/addr" &
server=$!
for _ in $(seq 50); do [ -s "$work/addr" ] && break; sleep 0.1; done
addr=$(cat "$work/addr")
gib=1073741824
url="http://$addr/blob?size=$gib"
runs=${RUNS:-3}
sandbox=("$work/rein" sandbox --workspace "$work/ws" --network proxy --allow-host "$addr" --timeout 5m)

# Median bytes per second of curl's own measurement over $runs downloads.
speed() {
  for _ in $(seq "$runs"); do "$@" -s -o /dev/null -w '%{speed_download}\n' "$url"; done |
    python3 -c 'import sys,statistics; print(statistics.median(float(l) for l in sys.stdin))'
}
direct=$(speed curl --noproxy '*')
bw_http=$(speed "${sandbox[@]}" --rung bwrap -- curl)
bw_tunnel=$(speed "${sandbox[@]}" --rung bwrap -- curl --proxytunnel)
ll_http=$(speed "${sandbox[@]}" --rung landlock -- curl)
ll_tunnel=$(speed "${sandbox[@]}" --rung landlock -- curl --proxytunnel)
python3 - "$direct" "$bw_http" "$bw_tunnel" "$ll_http" "$ll_tunnel" <<'PY'
import sys
d, *rest = map(float, sys.argv[1:])
names = ["bwrap, plain HTTP", "bwrap, CONNECT tunnel", "landlock, plain HTTP", "landlock, CONNECT tunnel"]
print(f"1 GiB direct: {d/2**20:.0f} MiB/s")
for n, s in zip(names, rest):
    print(f"1 GiB through the proxy ({n}): {s/2**20:.0f} MiB/s; proxy/direct = {s/d:.2f}")
PY

# Per-connection setup: 200 small requests, each on a fresh connection
# (Connection: close), in one curl inside one sandbox, against the same
# on the host; the difference divided by 200 is what the proxy adds.
small="http://$addr/blob?size=1"
urls=()
for _ in $(seq 200); do urls+=("$small"); done
t() { local s e; s=$(date +%s%N); "$@" -s -H 'Connection: close' "${urls[@]}" >/dev/null; e=$(date +%s%N); echo $(( (e - s) / 1000 )); }
d_us=$(t curl --noproxy '*')
p_us=$(t "${sandbox[@]}" --rung bwrap -- curl)
t_us=$(t "${sandbox[@]}" --rung bwrap -- curl --proxytunnel)
python3 - "$d_us" "$p_us" "$t_us" <<'PY'
import sys
d, p, t = map(int, sys.argv[1:])
print(f"200 connections: direct {d/1000:.1f} ms, through the proxy {p/1000:.1f} ms (plain HTTP), {t/1000:.1f} ms (CONNECT); "
      f"added per connection {(p-d)/200:.0f} us (plain), {(t-d)/200:.0f} us (CONNECT), sandbox start included once")
PY
