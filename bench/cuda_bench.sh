#!/usr/bin/env bash
# Runs ember's CUDA benchmark (cuda_bench) and, where PyTorch sees a GPU, the PyTorch peer
# (peer_torch_cuda.py) in the same run, then prints the table of figures and ratios,
# also against the stored H200 anchor (peer_torch_cuda_h200.json), and writes OUT/cuda.json.
# Called by scripts/bench.sh cuda, and as bundle/bench.sh in the GPU bundle.
#   EMBER_CUDA_BENCH=path/to/cuda_bench BENCH_OUT=dir cuda_bench.sh [cuda_bench args...]
# Environment: BENCH_REPS (default 30), PYTHON (default python3).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${EMBER_CUDA_BENCH:-$here/cuda_bench}
out=${BENCH_OUT:-$here/out}
py=${PYTHON:-python3}
reps=${BENCH_REPS:-30}
mkdir -p "$out"
echo "== ember ($bin)" >&2
"$bin" --reps "$reps" --json "$out/cuda.ember.json" "$@" || exit $?
rm -f "$out/cuda.torch.json"
filter=()
for ((i = 1; i <= $#; i++)); do
  if [ "${!i}" = --filter ]; then j=$((i + 1)); filter=(--filter "${!j}"); fi
done
if "$py" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "== PyTorch ($here/peer_torch_cuda.py)" >&2
  "$py" "$here/peer_torch_cuda.py" --reps "$reps" "${filter[@]}" --out "$out/cuda.torch.json" >&2 ||
    echo "cuda_bench.sh: the PyTorch peer failed; ratios against the stored anchor only" >&2
else
  echo "cuda_bench.sh: no PyTorch with a GPU for $py: ratios against the stored anchor only" >&2
fi
"$py" "$here/cuda_report.py" --ember "$out/cuda.ember.json" --peer "$out/cuda.torch.json" \
  --anchor "$here/peer_torch_cuda_h200.json" --out "$out/cuda.json" | tee "$out/cuda.txt"
echo "cuda_bench.sh: wrote $out/cuda.json (raw: cuda.ember.json, cuda.torch.json)" >&2
