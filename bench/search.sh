#!/usr/bin/env bash
# Times rein's search_files against ripgrep on the same query over a
# generated tree of 100,000 files of about 5 KB (about 500 MB), as whole
# processes, in one run: wall times, the ratio rein/rg and the peak RSS of
# each.
#
#   bench/search.sh [CACHE_DIR]
#
# The tree is written once under CACHE_DIR (default $TMPDIR, else /tmp)
# and reused. PATTERN, FILES, RUNS override the query, the number of files
# and the timed runs of each. Needs go and rg (Debian: ripgrep); uses
# hyperfine when it is installed, /usr/bin/time otherwise.
#
# Both searchers do the same work: every file but those the .gitignore
# ignores, hidden files included, binary files skipped, no links followed,
# and no ignore file other than .gitignore (ripgrep's global, parent,
# .ignore and git-exclude sources are turned off). The match counts are
# compared before anything is timed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${1:-${TMPDIR:-/tmp}}/rein-search-bench
pattern=${PATTERN:-'[A-Z]\w*Timeout'}
files=${FILES:-100000}
runs=${RUNS:-10}
tree=$cache/tree-$files

for tool in go rg; do
  command -v "$tool" >/dev/null || { echo "search.sh: $tool is not installed" >&2; exit 1; }
done

mkdir -p "$cache/bin"
(cd "$here/.." && go build -o "$cache/bin/gentree" ./bench/cmd/gentree &&
  go build -o "$cache/bin/searchfiles" ./bench/cmd/searchfiles)

if [ ! -f "$tree.done" ]; then
  rm -rf "$tree"
  echo "writing $files files to $tree (once)..." >&2
  "$cache/bin/gentree" -files "$files" "$tree"
  touch "$tree.done"
fi

rg_cmd=(rg --no-config --count --hidden --no-require-git --no-ignore-global
  --no-ignore-parent --no-ignore-exclude --no-ignore-dot -- "$pattern" "$tree")
rein_cmd=("$cache/bin/searchfiles" "$tree" "$pattern")

# rg exits 1 when nothing matches.
rg_matches=$({ "${rg_cmd[@]}" || [ $? -eq 1 ]; } | awk -F: '{n += $NF} END {print n + 0}')
rein_out=$("${rein_cmd[@]}")
rein_matches=$(awk '{print $2}' <<<"$rein_out")
echo "tree: $tree ($(du -sh --apparent-size "$tree" | cut -f1) in $files files)"
echo "pattern: $pattern"
echo "rg matching lines: $rg_matches; rein: $rein_out"
if [ "$rg_matches" != "$rein_matches" ]; then
  echo "search.sh: the match counts differ, so the two do not do the same work" >&2
  exit 1
fi

q() { printf '%q ' "$@"; }

# peak RSS (KiB) of one run, and its wall time, by /usr/bin/time.
measure() {
  local out
  out=$({ /usr/bin/time -f '%e %M' "$@" >/dev/null || true; } 2>&1 | tail -1)
  echo "$out"
}

if command -v hyperfine >/dev/null; then
  csv=$(mktemp)
  hyperfine --warmup 2 --runs "$runs" --ignore-failure --export-csv "$csv" \
    -n rg "$(q "${rg_cmd[@]}")" -n rein "$(q "${rein_cmd[@]}")"
  rg_wall=$(awk -F, '$1 == "rg" {print $2}' "$csv")
  rein_wall=$(awk -F, '$1 == "rein" {print $2}' "$csv")
  rm -f "$csv"
else
  sum() { awk '{s += $1} END {printf "%.3f", s / NR}'; }
  "${rg_cmd[@]}" >/dev/null || true
  "${rein_cmd[@]}" >/dev/null
  rg_wall=$(for _ in $(seq "$runs"); do measure "${rg_cmd[@]}"; done | sum)
  rein_wall=$(for _ in $(seq "$runs"); do measure "${rein_cmd[@]}"; done | sum)
fi

rg_rss=$(measure "${rg_cmd[@]}" | awk '{print $2}')
rein_rss=$(measure "${rein_cmd[@]}" | awk '{print $2}')
awk -v rg="$rg_wall" -v rein="$rein_wall" -v rgm="$rg_rss" -v reinm="$rein_rss" 'BEGIN {
  printf "mean wall: rg %.3f s, rein %.3f s; rein/rg = %.2f\n", rg, rein, rein / rg
  printf "max RSS:   rg %.1f MiB, rein %.1f MiB\n", rgm / 1024, reinm / 1024
}'
