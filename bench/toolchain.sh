#!/usr/bin/env bash
# A project's own toolchain inside the sandbox against the same command
# outside it, with warm caches, in one run: `go test ./shell/` (cached, and
# with -count=1, which runs the tests again) and `go build ./cmd/rein` in
# a copy of rein's own module, network off inside (the modules come from
# the host's download cache, read-only). Prints the ratios (goal: at most
# 1.15). Needs go, bwrap and hyperfine (Debian: bubblewrap hyperfine).
#
#   bench/toolchain.sh            # RUNS=10 by default
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
for tool in go bwrap hyperfine git; do
  command -v "$tool" >/dev/null || { echo "toolchain.sh: $tool is not installed" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$here/.." && go build -o "$work/rein" ./cmd/rein && go mod download)
# The tracked files only: no .git, so neither side stamps VCS data.
mkdir -p "$work/src"
git -C "$here/.." archive HEAD | tar -x -C "$work/src"
export REIN_CACHE_DIR="$work/state"
cd "$work/src"
inside=("$work/rein" sandbox --timeout 10m --)
# Warm both sides' caches: the host's own, and the workspace's in the sandbox.
for cmd in "go test ./shell/" "go build -o /dev/null ./cmd/rein"; do
  $cmd >/dev/null
  "${inside[@]}" $cmd >/dev/null
done
hyperfine -N --warmup 2 --runs "${RUNS:-10}" --export-json "$work/out.json" \
  -n test-outside "go test ./shell/" \
  -n test-inside "${inside[*]} go test ./shell/" \
  -n test1-outside "go test -count=1 ./shell/" \
  -n test1-inside "${inside[*]} go test -count=1 ./shell/" \
  -n build-outside "go build -o /dev/null ./cmd/rein" \
  -n build-inside "${inside[*]} go build -o /dev/null ./cmd/rein"
python3 - "$work/out.json" <<'PY'
import json, sys
r = {x["command"]: x["median"] for x in json.load(open(sys.argv[1]))["results"]}
for name, what in [("test", "go test ./shell/ (cached)"), ("test1", "go test -count=1 ./shell/"), ("build", "go build ./cmd/rein")]:
    o, i = r[name + "-outside"], r[name + "-inside"]
    print(f"{what}: outside {o*1000:.0f} ms, in the sandbox {i*1000:.0f} ms; inside/outside = {i/o:.2f}")
PY
