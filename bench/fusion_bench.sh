#!/usr/bin/env bash
# Runs fusion_bench twice (an empty kernel cache, then the one it filled: the JIT warm-up cold
# and warm) and, where PyTorch sees a GPU, bench/peer_torch_fusion.py in the same run;
# prints the table (bench/fusion_report.py) and writes OUT/fusion.json.
# Called by scripts/bench.sh fusion, and as bundle/bench_fusion.sh in the GPU bundle.
#   EMBER_FUSION_BENCH=path/to/fusion_bench BENCH_OUT=dir fusion_bench.sh
# Environment: BENCH_REPS (default 30), BENCH_MEMORY_STEPS (default 10000), PYTHON.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${EMBER_FUSION_BENCH:-$here/fusion_bench}
out=${BENCH_OUT:-$here/out}
py=${PYTHON:-python3}
reps=${BENCH_REPS:-30}
mkdir -p "$out"
cache=$(mktemp -d)
echo "== ember, empty kernel cache ($bin)" >&2
EMBER_KERNEL_CACHE=$cache "$bin" --reps "$reps" --memory-steps "${BENCH_MEMORY_STEPS:-10000}" \
  --json "$out/fusion.ember.json" || exit $?
echo "== ember, warm kernel cache" >&2
EMBER_KERNEL_CACHE=$cache "$bin" --reps 5 --memory-steps 0 --filter _b \
  --json "$out/fusion.ember_warm.json" || exit $?
echo "== ember, warm kernel cache: a process's one-time costs" >&2
EMBER_KERNEL_CACHE=$cache "$bin" --init-probe >&2 || true
rm -rf "$cache" "$out/fusion.torch.json"
if "$py" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "== PyTorch ($here/peer_torch_fusion.py)" >&2
  "$py" "$here/peer_torch_fusion.py" --reps "$reps" --out "$out/fusion.torch.json" >&2 ||
    echo "fusion_bench.sh: the PyTorch peer failed" >&2
fi
"$py" "$here/fusion_report.py" --ember "$out/fusion.ember.json" \
  --ember-warm "$out/fusion.ember_warm.json" --peer "$out/fusion.torch.json" \
  --out "$out/fusion.json" | tee "$out/fusion.txt"
