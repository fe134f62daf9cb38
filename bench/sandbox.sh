#!/usr/bin/env bash
# Times `rein sandbox -- true` against bare bubblewrap running /bin/true
# with the same namespaces and a comparable view, `rein sandbox --rung
# landlock -- true` against a bare /bin/true, explicit limits against
# none, and 1 GiB of output against a
# bare pipe, in one run, and prints the ratios. Needs go, bwrap and hyperfine (Debian: bubblewrap hyperfine).
#
#   bench/sandbox.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for tool in go bwrap hyperfine; do
  command -v "$tool" >/dev/null || { echo "sandbox.sh: $tool is not installed" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# rein-init beside rein: the CLI's sandboxes start it as their init
# (sandbox.UseInit) instead of rein's whole binary; rein-solo is rein alone,
# its own init.
(cd "$here/.." && go build -o "$work/" ./cmd/rein && CGO_ENABLED=0 go build -o "$work/" ./cmd/rein-init &&
  go build -o "$work/floor" ./bench/cmd/floor)
mkdir "$work/solo" && cp "$work/rein" "$work/solo/rein"
mkdir -p "$work/ws"
bare=(bwrap --unshare-all --unshare-user --die-with-parent --new-session --cap-drop ALL --as-pid-1
  --proc /proc --dev /dev --tmpfs /tmp --ro-bind /usr /usr --ro-bind /etc /etc
  --symlink usr/bin /bin --symlink usr/lib /lib --symlink usr/lib64 /lib64 --symlink usr/sbin /sbin
  --bind "$work/ws" "$work/ws" --chdir "$work/ws" /usr/bin/true)
# The floor: a Go program that does nothing but start bubblewrap, whose
# command is a Go program that does nothing (bound in at /floor), which
# is the least a Go CLI with a re-executed Go init can cost; and what one
# start of rein's own binary costs over the smallest Go program (every
# start maps and initialises the whole binary, and a run starts it twice).
floorcmd=("${bare[@]:0:${#bare[@]}-1}")
floorcmd+=(--ro-bind "$work/floor" /floor /floor)
hyperfine -N --warmup 5 --runs "${RUNS:-50}" --export-json "$work/out.json" \
  -n bare-bwrap "${bare[*]}" \
  -n go-floor "$work/floor ${floorcmd[*]}" \
  -n go-start "$work/floor" \
  -n rein-start "$work/rein help" \
  -n rein-sandbox "$work/rein sandbox --workspace $work/ws -- true" \
  -n rein-solo "$work/solo/rein sandbox --workspace $work/ws -- true"
python3 - "$work/out.json" <<'PY'
import json, sys
r = {x["command"]: x["median"] for x in json.load(open(sys.argv[1]))["results"]}
b, f, s = r["bare-bwrap"], r["go-floor"], r["rein-sandbox"]
extra = r["rein-start"] - r["go-start"]
print(f"median: bare bwrap {b*1000:.2f} ms, rein sandbox {s*1000:.2f} ms; rein/bare = {s/b:.2f}")
print(f"without rein-init (rein's binary as the init): {r['rein-solo']*1000:.2f} ms; /bare = {r['rein-solo']/b:.2f}")
print(f"floor of a Go CLI with a Go init: {f*1000:.2f} ms; floor/bare = {f/b:.2f}")
print(f"a start of rein's binary costs {extra*1000:.2f} ms more than the smallest Go program's; "
      f"the floor with rein's binary in both places: {(f+2*extra)*1000:.2f} ms, /bare = {(f+2*extra)/b:.2f}")
PY

# The landlock rung against a bare spawn of /bin/true: the added median
# wall time (goal: under 3 ms).
hyperfine -N --warmup 5 --runs "${RUNS:-50}" --export-json "$work/ll.json" \
  -n bare-true "/usr/bin/true" \
  -n rein-landlock "$work/rein sandbox --rung landlock --workspace $work/ws -- true"
python3 - "$work/ll.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
b, s = r["bare-true"]["median"], r["rein-landlock"]["median"]
print(f"median: bare /bin/true {b*1000:.2f} ms, rein sandbox --rung landlock {s*1000:.2f} ms; added {(s-b)*1000:.2f} ms")
PY

# The cost of explicit limits (cgroup memory and pids, rlimits) on top of
# a run with only the default ones.
hyperfine -N --warmup 5 --runs "${RUNS:-50}" --export-json "$work/lim.json" \
  -n rein-sandbox "$work/rein sandbox --workspace $work/ws -- true" \
  -n rein-solo "$work/solo/rein sandbox --workspace $work/ws -- true" \
  -n rein-limits "$work/rein sandbox --workspace $work/ws --memory 1GiB --processes 512 --cpu-seconds 60 --open-files 1024 --file-size 1GiB -- true"
python3 - "$work/lim.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
b, s = r["rein-sandbox"]["median"], r["rein-limits"]["median"]
print(f"median: rein sandbox {b*1000:.2f} ms, with five explicit limits {s*1000:.2f} ms; added {(s-b)*1000:.2f} ms")
PY

# Throughput: 1 GiB from inside the sandbox against the same bytes through a
# bare pipe, and rein's peak memory while it streams them.
gib=1073741824
hyperfine -N --warmup 1 --runs "${TRUNS:-5}" --export-json "$work/tp.json" \
  -n bare-pipe "sh -c 'head -c $gib /dev/zero | cat > /dev/null'" \
  -n rein-sandbox "sh -c '$work/rein sandbox --workspace $work/ws -- head -c $gib /dev/zero > /dev/null'"
rss=$( { /usr/bin/time -f %M "$work/rein" sandbox --workspace "$work/ws" -- head -c $gib /dev/zero > /dev/null; } 2>&1 | tail -1)
python3 - "$work/tp.json" "$rss" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
b, s = r["bare-pipe"]["median"], r["rein-sandbox"]["median"]
gib = 1 << 30
print(f"1 GiB: bare pipe {gib/b/2**20:.0f} MiB/s, rein sandbox {gib/s/2**20:.0f} MiB/s; rein/bare throughput = {b/s:.2f}; rein peak RSS {int(sys.argv[2])/1024:.1f} MiB")
PY
