#!/usr/bin/env bash
# Fuzzes the safetensors reader with libFuzzer (clang, ASan, UBSan) for N seconds (default
# 60), starting from the kept corpus, and merges the inputs that reach new code into it.
#
#   scripts/fuzz.sh            # 60 s
#   scripts/fuzz.sh 600        # 10 minutes
#
# Builds in build-fuzz/ (override with EMBER_FUZZ_BUILD). A crash leaves its input in
# build-fuzz/crashes/ and fails the script; add the input to the corpus as a regression
# case once it is fixed. Extra arguments after N go to the fuzzer (e.g. -jobs=2).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
shift || true
build=${EMBER_FUZZ_BUILD:-$root/build-fuzz}
corpus=$root/tests/fuzz/corpus/safetensors
cxx=${CXX_FUZZ:-clang++}

command -v "$cxx" >/dev/null || { echo "fuzz.sh: $cxx not found (apt-get install clang)" >&2; exit 1; }
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="$cxx" -DEMBER_FUZZ=ON -DEMBER_BUILD_TESTS=OFF \
  -DEMBER_BUILD_BENCH=OFF -DEMBER_BUILD_EXAMPLES=OFF >/dev/null
nice ninja -C "$build" safetensors_fuzz

fuzzer=$build/tests/fuzz/safetensors_fuzz
found=$build/new-inputs
crashes=$build/crashes
rm -rf "$found"
mkdir -p "$found" "$crashes"
before=$(find "$corpus" -type f | wc -l)
# New inputs go to the first folder; the kept corpus is read, never written, here.
status=0
nice "$fuzzer" "$found" "$corpus" -max_total_time="$seconds" -max_len=4096 \
  -rss_limit_mb=2048 -malloc_limit_mb=256 -timeout=10 -use_value_profile=1 \
  -dict="$root/tests/fuzz/safetensors.dict" -artifact_prefix="$crashes/" \
  -print_final_stats=1 "$@" || status=$?
# Keep only what reaches edges the kept corpus does not (edges, not hit counts: the corpus
# stays small).
"$fuzzer" -merge=1 -use_counters=0 -max_len=4096 "$corpus" "$found" >/dev/null 2>&1 || true
after=$(find "$corpus" -type f | wc -l)
echo "fuzz.sh: corpus $before -> $after files, $(cat "$corpus"/* | wc -c) bytes"
if [ "$status" -ne 0 ]; then
  echo "fuzz.sh: the fuzzer failed (status $status); inputs in $crashes" >&2
fi
exit "$status"
