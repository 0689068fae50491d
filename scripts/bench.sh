#!/usr/bin/env bash
# Builds a benchmark suite, runs it and its peers in the same run with the same thread count,
# prints a table of medians and ratios and writes it as JSON to bench/out/SUITE.json.
# See docs/benchmarks.md.
#   scripts/bench.sh cpu       # ember's CPU ops vs PyTorch (CPU), raw OpenBLAS and memcpy
#   scripts/bench.sh autodiff  # MLP forward + backward on Autodiff<Cpu> vs PyTorch autograd
#   scripts/bench.sh mnist     # the main job (Fashion-MNIST MLP and CNN) vs the same in PyTorch:
#                              # seconds per epoch and test accuracy (BENCH_EPOCHS, default 3;
#                              # BENCH_SEEDS, comma-separated, default 42; BENCH_MODELS,
#                              # default mlp,cnn)
#   scripts/bench.sh cuda      # ember's CUDA backend vs PyTorch on the GPU (same run) and the
#                              # stored H200 anchor: copy, matmul f32/tf32/bf16, softmax, sum,
#                              # add, a 6-op chain, per-op overhead (needs a GPU; BENCH_REPS
#                              # default 30, PYTHON: the interpreter with CUDA PyTorch)
#   scripts/bench.sh build     # build times (cold, after a model edit, a small user program) and
#                              # stripped binary sizes, Release and Debug, ccache off
#                              # (BENCH_BUILD_CONFIGS, BENCH_BUILD_COLD=0 to skip cold builds)
# Environment: BENCH_THREADS (default: nproc), BENCH_REPS (repetitions, default 7),
# BENCH_MIN_TIME (seconds per repetition, default 0.2), BENCH_EMBER_BLAS (default OFF).
set -euo pipefail
cd "$(dirname "$0")/.."

suites="cpu autodiff mnist cuda build"
if [ $# -ne 1 ]; then
  echo "usage: scripts/bench.sh SUITE   (suites: $suites)" >&2
  exit 2
fi
suite=$1
case "$suite" in
  cpu | autodiff | mnist) ;;
  build) scripts/setup.sh; exec bench/build_bench.sh ;;
  cuda)
    cmake --preset release -DEMBER_CUDA=ON >/dev/null
    cmake --build --preset release --target cuda_bench
    EMBER_CUDA_BENCH=build/bench/cuda_bench BENCH_OUT=bench/out exec bench/cuda_bench.sh ;;
  *) echo "bench.sh: unknown suite '$suite' (suites: $suites)" >&2; exit 2 ;;
esac

scripts/setup.sh --bench
# ember as shipped: its own GEMM (a build dir configured before that default changed may still
# cache EMBER_BLAS=ON). BENCH_EMBER_BLAS=ON measures ember's matmul through OpenBLAS instead.
cmake --preset release -DEMBER_BLAS="${BENCH_EMBER_BLAS:-OFF}" >/dev/null
if [ "$suite" = mnist ]; then
  cmake --build --preset release --target mnist
else
  cmake --build --preset release --target "${suite}_bench"
fi

threads=${BENCH_THREADS:-$(nproc)}
reps=${BENCH_REPS:-7}
min_time=${BENCH_MIN_TIME:-0.2}
out=bench/out
mkdir -p "$out"

load=$(cut -d' ' -f1 /proc/loadavg)
if awk "BEGIN { exit !($load > 0.5) }"; then
  echo "bench.sh: warning: load average $load; other work on the machine skews the figures" >&2
fi

# One thread count for ember's pool, OpenBLAS (the raw peer, PyTorch's BLAS) and OpenMP
# (PyTorch, oneDNN). OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE, which some environments set,
# make OpenBLAS pick slower kernels: they are dropped for the benchmark runs only.
run() {
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE EMBER_NUM_THREADS="$threads" \
    OPENBLAS_NUM_THREADS="$threads" OMP_NUM_THREADS="$threads" "$@"
}

if [ "$suite" = mnist ]; then
  epochs=${BENCH_EPOCHS:-3}
  seeds=${BENCH_SEEDS:-42}
  models=${BENCH_MODELS:-mlp,cnn}
  for seed in ${seeds//,/ }; do
    for model in ${models//,/ }; do
      echo "bench.sh: ember mnist $model, $epochs epochs, seed $seed, $threads threads" >&2
      rm -rf "$out/mnist-ember-$model-$seed"
      run build/examples/mnist train --model "$model" --epochs "$epochs" --plain --workers 1 \
        --seed "$seed" --out "$out/mnist-ember-$model-$seed" >"$out/mnist-ember-$model-$seed.log"
      echo "bench.sh: PyTorch mnist $model, seed $seed" >&2
      run /usr/bin/python3 bench/peer_torch_mnist.py --model "$model" --epochs "$epochs" \
        --threads "$threads" --seed "$seed" --out "$out/mnist.torch.$model.$seed.json" >/dev/null
    done
  done
  /usr/bin/python3 bench/mnist_report.py --dir "$out" --seeds "$seeds" --models "$models" \
    --out "$out/mnist.json" |
    tee "$out/mnist.txt"
  exit 0
fi

echo "bench.sh: ember (build/bench/${suite}_bench), $threads threads, $reps repetitions" >&2
run "build/bench/${suite}_bench" --benchmark_repetitions="$reps" --benchmark_min_time="$min_time" \
  --benchmark_report_aggregates_only=true --benchmark_format=json >"$out/$suite.ember.json"
echo "bench.sh: PyTorch (bench/peer_torch_$suite.py)" >&2
run /usr/bin/python3 "bench/peer_torch_$suite.py" --threads "$threads" --reps "$reps" \
  --min-time "$min_time" --out "$out/$suite.torch.json"
/usr/bin/python3 bench/merge_bench.py --ember "$out/$suite.ember.json" \
  --peer "$out/$suite.torch.json" --reps "$reps" --out "$out/$suite.json" | tee "$out/$suite.txt"
echo "bench.sh: wrote $out/$suite.json (raw: $out/$suite.ember.json, $out/$suite.torch.json)" >&2
