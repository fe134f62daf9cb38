#!/usr/bin/env bash
# Runs side by side across processes, in one run:
#   1. eight `rein shell --mode auto -- 'sleep 1'` started at once in one
#      workspace (goal: all done within 1.5 s), against eight bare
#      bubblewrap `sleep 1` started at once;
#   2. `rein shell -- 'echo hi'` alone, and while another process's
#      `rein shell -- 'sleep 600'` runs in the same workspace (goal: within
#      50 ms of alone);
#   3. the same call while the other run holds the session, against alone:
#      what joining a shared session costs over beginning one.
# Needs go, bwrap and hyperfine (Debian: bubblewrap hyperfine).
#
#   bench/sidebyside.sh            # ROUNDS=10 rounds of item 1, RUNS=40 of items 2 and 3
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for tool in go bwrap hyperfine python3; do
  command -v "$tool" >/dev/null || { echo "sidebyside.sh: $tool is not installed" >&2; exit 1; }
done
work=$(mktemp -d)
bgpid=
trap '[ -n "$bgpid" ] && kill "$bgpid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
(cd "$here/.." && go build -o "$work/" ./cmd/rein && CGO_ENABLED=0 go build -o "$work/" ./cmd/rein-init)
mkdir -p "$work/ws" && git -C "$work/ws" init -q
export REIN_CACHE_DIR="$work/cache"
rein=("$work/rein" shell --workspace "$work/ws" --mode auto --)
bare=(bwrap --unshare-all --unshare-user --die-with-parent --new-session --cap-drop ALL --as-pid-1
  --proc /proc --dev /dev --tmpfs /tmp --ro-bind /usr /usr --ro-bind /etc /etc
  --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/sbin /sbin
  --bind "$work/ws" "$work/ws" --chdir "$work/ws" /usr/bin/sleep 1)
"${rein[@]}" true # the first run makes the caches and the trace

# 1. Eight at once, ROUNDS times, each round's wall time from the first
# start to the last end.
eight() {
  local start end
  start=$(date +%s.%N)
  for _ in 1 2 3 4 5 6 7 8; do "$@" & done
  wait
  end=$(date +%s.%N)
  python3 -c "print($end - $start)"
}
: >"$work/rein8" && : >"$work/bare8"
for _ in $(seq "${ROUNDS:-10}"); do
  eight "${bare[@]}" >>"$work/bare8"
  eight "${rein[@]}" 'sleep 1' >>"$work/rein8"
done
python3 - "$work/bare8" "$work/rein8" <<'PY'
import statistics, sys
b = [float(x) for x in open(sys.argv[1])]
r = [float(x) for x in open(sys.argv[2])]
print(f"eight at once, {len(r)} rounds: bare bwrap sleep 1 median {statistics.median(b):.3f} s, "
      f"rein shell 'sleep 1' median {statistics.median(r):.3f} s (max {max(r):.3f} s; goal 1.5 s); "
      f"rein/bare = {statistics.median(r)/statistics.median(b):.2f}")
PY

# 2 and 3. A call alone, then with another process's run in the session.
hyperfine -N --warmup 5 --runs "${RUNS:-40}" --export-json "$work/alone.json" \
  -n alone "${rein[*]} 'echo hi'" >/dev/null
"${rein[@]}" 'sleep 600' >/dev/null 2>&1 &
bgpid=$!
for _ in $(seq 100); do
  ls "$REIN_CACHE_DIR"/sessions/*.session >/dev/null 2>&1 && break
  sleep 0.05
done
hyperfine -N --warmup 5 --runs "${RUNS:-40}" --export-json "$work/beside.json" \
  -n beside "${rein[*]} 'echo hi'" >/dev/null
kill "$bgpid"
python3 - "$work/alone.json" "$work/beside.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["results"][0]
b = json.load(open(sys.argv[2]))["results"][0]
d = (b["median"] - a["median"]) * 1000
print(f"rein shell 'echo hi': alone (beginning the session) median {a['median']*1000:.2f} ms, "
      f"beside another process's background run (joining its session) median {b['median']*1000:.2f} ms; "
      f"added {d:.2f} ms (goal: under 50 ms); beside/alone = {b['median']/a['median']:.2f}")
PY
