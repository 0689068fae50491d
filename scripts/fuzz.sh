#!/usr/bin/env bash
# Fuzzes a file reader with libFuzzer (clang, ASan, UBSan) for N seconds (default 60),
# starting from its kept corpus (tests/fuzz/corpus/TARGET), and merges the inputs that reach
# new code into it. TARGET is safetensors (the default), pickle, pytorch, onnx (the ONNX
# importer and runtime; needs libonnx-dev) or remote (the Remote server's message handling:
# a client's byte stream through a session; its corpus is tests/remote/corpus; needs
# libasio-dev).
#
#   scripts/fuzz.sh                # the safetensors reader, 60 s
#   scripts/fuzz.sh 600            # the safetensors reader, 10 minutes
#   scripts/fuzz.sh pytorch 600    # the PyTorch file reader (zip and legacy), 10 minutes
#   scripts/fuzz.sh onnx 300       # ONNX models: parsed, checked, run on zero inputs
#   scripts/fuzz.sh remote 300     # the Remote server's frames, decoder and sessions
#
# Builds in build-fuzz/ (override with EMBER_FUZZ_BUILD). A crash leaves its input in
# build-fuzz/crashes/ and fails the script; add the input to the corpus as a regression
# case once it is fixed. Extra arguments after N go to the fuzzer (e.g. -jobs=2).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
target=safetensors
case "${1:-}" in
  safetensors|pickle|pytorch|onnx|remote) target=$1; shift ;;
  ''|[0-9]*) ;;
  *) echo "fuzz.sh: unknown target '$1' (safetensors, pickle, pytorch, onnx or remote)" >&2; exit 2 ;;
esac
seconds=${1:-60}
shift || true
build=${EMBER_FUZZ_BUILD:-$root/build-fuzz}
corpus=$root/tests/fuzz/corpus/$target
[ "$target" = remote ] && corpus=$root/tests/remote/corpus
cxx=${CXX_FUZZ:-clang++}
# Inputs up to the size of the largest kept seed (whole .pt files for the pytorch reader).
case $target in
  pytorch) max_len=8192 ;;
  *) max_len=4096 ;;
esac
dict=()
[ -f "$root/tests/fuzz/$target.dict" ] && dict=(-dict="$root/tests/fuzz/$target.dict")

command -v "$cxx" >/dev/null || { echo "fuzz.sh: $cxx not found (apt-get install clang)" >&2; exit 1; }
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="$cxx" -DEMBER_FUZZ=ON -DEMBER_BUILD_TESTS=OFF \
  -DEMBER_BUILD_BENCH=OFF -DEMBER_BUILD_EXAMPLES=OFF >/dev/null
nice ninja -C "$build" "${target}_fuzz"

fuzzer=$build/tests/fuzz/${target}_fuzz
found=$build/new-inputs
crashes=$build/crashes
rm -rf "$found"
mkdir -p "$found" "$crashes"
before=$(find "$corpus" -type f | wc -l)
# New inputs go to the first folder; the kept corpus is read, never written, here.
status=0
nice "$fuzzer" "$found" "$corpus" -max_total_time="$seconds" -max_len=$max_len \
  -rss_limit_mb=2048 -malloc_limit_mb=256 -timeout=10 -use_value_profile=1 \
  "${dict[@]}" -artifact_prefix="$crashes/" -print_final_stats=1 "$@" || status=$?
# Keep only what reaches edges the kept corpus does not (edges, not hit counts: the corpus
# stays small).
"$fuzzer" -merge=1 -use_counters=0 -max_len=$max_len "$corpus" "$found" >/dev/null 2>&1 || true
after=$(find "$corpus" -type f | wc -l)
echo "fuzz.sh: $target corpus $before -> $after files, $(cat "$corpus"/* | wc -c) bytes"
if [ "$status" -ne 0 ]; then
  echo "fuzz.sh: the fuzzer failed (status $status); inputs in $crashes" >&2
fi
exit "$status"
