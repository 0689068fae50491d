#!/usr/bin/env bash
# Compares two builds of one benchmark binary on the rows a filter picks, alternating the two run
# by run, so that a slow stretch of a shared machine falls on both; prints each build's median
# and lowest time per row and the ratio of the medians. See docs/benchmarks.md.
#   scripts/bench_ab.sh OLD_BINARY NEW_BINARY FILTER [ROUNDS]
#   # e.g. a build of main copied aside, against the working tree's:
#   cp build/bench/cpu_bench /tmp/cpu_bench_main   # (on main)
#   scripts/bench_ab.sh /tmp/cpu_bench_main build/bench/cpu_bench '^cpu/matmul/train' 10
# FILTER is a Google Benchmark --benchmark_filter regular expression; ROUNDS (default 8) runs
# of each binary, each run one --benchmark_min_time of BENCH_MIN_TIME seconds (default 1).
# The thread count is the binaries' default (EMBER_NUM_THREADS is passed through).
set -euo pipefail

if [[ $# -lt 3 || $# -gt 4 ]]; then
  echo "usage: scripts/bench_ab.sh OLD_BINARY NEW_BINARY FILTER [ROUNDS]" >&2
  exit 2
fi
old=$1 new=$2 filter=$3 rounds=${4:-8}
for b in "$old" "$new"; do
  if [[ ! -x $b ]]; then
    echo "bench_ab.sh: $b is not an executable benchmark binary" >&2
    exit 2
  fi
done
if ! [[ $rounds =~ ^[1-9][0-9]*$ ]]; then
  echo "bench_ab.sh: ROUNDS must be a positive count, not '$rounds'" >&2
  exit 2
fi
min_time=${BENCH_MIN_TIME:-1}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

for ((r = 0; r < rounds; r++)); do
  for side in old new; do
    bin=$old
    [[ $side == new ]] && bin=$new
    # one line per row: the side, the row's name and its real time in ms
    "$bin" --benchmark_filter="$filter" --benchmark_min_time="$min_time" \
      --benchmark_format=csv --benchmark_time_unit=ms 2>/dev/null |
      awk -F, -v side="$side" 'NR > 1 && $1 !~ /_(mean|median|stddev|cv)"?$/ {
        gsub(/"/, "", $1); print side, $1, $3 }' >>"$out"
  done
done

if [[ ! -s $out ]]; then
  echo "bench_ab.sh: no row of either binary matches '$filter'" >&2
  exit 1
fi
python3 - "$out" "$rounds" <<'EOF'
import statistics
import sys

times = {}
with open(sys.argv[1]) as f:
    for line in f:
        side, name, ms = line.split()
        times.setdefault(name, {}).setdefault(side, []).append(float(ms))
print(f"{'row':50} {'old ms':>10} {'new ms':>10} {'new / old':>10}   lowest old / new   ({sys.argv[2]} rounds)")
for name, sides in times.items():
    if len(sides) < 2:
        print(f"{name:50} only in the {'old' if 'old' in sides else 'new'} binary")
        continue
    o, n = statistics.median(sides["old"]), statistics.median(sides["new"])
    print(f"{name:50} {o:10.4f} {n:10.4f} {n / o:9.3f}x   {min(sides['old']):.4f} / {min(sides['new']):.4f}")
EOF
