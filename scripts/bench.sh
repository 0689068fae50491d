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
#   scripts/bench.sh fusion    # Fusion<Cuda> fused and unfused vs PyTorch eager and torch.compile
#                              # (same run): the 6-op chain, MLP and CNN training steps, JIT
#                              # warm-up with a cold and a warm kernel cache, memory over 10,000
#                              # steps (needs a GPU; BENCH_REPS, BENCH_MEMORY_STEPS, PYTHON)
#   scripts/bench.sh onnx      # real models (tools/onnx_models/) on ember's ONNX runtime vs ONNX
#                              # Runtime (npm onnxruntime-node, CPU) on the same inputs, batch 1 and
#                              # 32 (BENCH_BATCHES; BENCH_RUNS per model and batch, default 50;
#                              # ORT_NODE_DIR: where onnxruntime-node is, default build/ort,
#                              # installed there when missing)
#   scripts/bench.sh distributed  # data-parallel training: on GPUs (where nvidia-smi lists
#                              # some) the main job's CNN on 1, 2, 4 ... GPUs through NCCL beside
#                              # PyTorch DDP, and NCCL all-reduce beside torch.distributed's; on
#                              # CPUs the CNN on 1 and 2 processes and the process group's
#                              # all-reduce beside a raw MPI all-reduce (same run; BENCH_DIST=
#                              # cpu|gpu|all, BENCH_GPUS, PYTHON)
#   scripts/bench.sh remote    # the Remote backend on loopback: small-op latency (batched and
#                              # one round trip per op) against the local CPU, uploads and
#                              # downloads of 1 and 64 MiB against raw asio in the same run, and
#                              # 16 clients x 10,000 ops against an ember-server process with its
#                              # memory before and after (BENCH_REPS, default 7)
#   scripts/bench.sh build     # build times (cold, after a model edit, a small user program) and
#                              # stripped binary sizes, Release and Debug, ccache off
#                              # (BENCH_BUILD_CONFIGS, BENCH_BUILD_COLD=0 to skip cold builds)
# Environment: BENCH_THREADS (default: nproc), BENCH_REPS (repetitions, default 7, shared among
# BENCH_ROUNDS rounds of ember and its peers in turn, default 3), BENCH_PAIRED_ROUNDS (cpu:
# rounds of the paired rows against oneDNN, default 9),
# BENCH_MIN_TIME (seconds per repetition, default 0.2), BENCH_EMBER_BLAS (default OFF).
set -euo pipefail
cd "$(dirname "$0")/.."

suites="cpu autodiff mnist onnx cuda fusion distributed remote build"
if [ $# -ne 1 ]; then
  echo "usage: scripts/bench.sh SUITE   (suites: $suites)" >&2
  exit 2
fi
suite=$1
case "$suite" in
  cpu | autodiff | mnist | onnx) ;;
  build) scripts/setup.sh; exec bench/build_bench.sh ;;
  distributed)
    scripts/setup.sh --bench
    cmake --preset release >/dev/null
    cmake --build --preset release --target mnist ember-run dist_allreduce_bench
    exec bench/distributed_bench.sh ;;
  remote)
    scripts/setup.sh
    cmake --preset release >/dev/null
    cmake --build --preset release --target remote_bench ember-server
    BENCH_OUT=bench/out exec bench/remote_bench.sh ;;
  cuda)
    cmake --preset release -DEMBER_CUDA=ON >/dev/null
    cmake --build --preset release --target cuda_bench
    EMBER_CUDA_BENCH=build/bench/cuda_bench BENCH_OUT=bench/out exec bench/cuda_bench.sh ;;
  fusion)
    cmake --preset release -DEMBER_CUDA=ON >/dev/null
    cmake --build --preset release --target fusion_bench
    EMBER_FUSION_BENCH=build/bench/fusion_bench BENCH_OUT=bench/out exec bench/fusion_bench.sh ;;
  *) echo "bench.sh: unknown suite '$suite' (suites: $suites)" >&2; exit 2 ;;
esac

scripts/setup.sh --bench
# ember as shipped: its own GEMM (a build dir configured before that default changed may still
# cache EMBER_BLAS=ON). BENCH_EMBER_BLAS=ON measures ember's matmul through OpenBLAS instead.
cmake --preset release -DEMBER_BLAS="${BENCH_EMBER_BLAS:-OFF}" >/dev/null
if [ "$suite" = mnist ]; then
  cmake --build --preset release --target mnist
elif [ "$suite" = onnx ]; then
  cmake --build --preset release --target onnx_bench
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

if [ "$suite" = onnx ]; then
  if ! command -v npm >/dev/null || ! /usr/bin/python3 -c "import onnx" 2>/dev/null; then
    echo "bench.sh: the onnx suite needs node, npm and python3-onnx" \
      "(apt-get install nodejs npm python3-onnx)" >&2
    exit 1
  fi
  # The models, their bench inputs and ONNX Runtime's outputs, made afresh in build/.
  ort_dir=${ORT_NODE_DIR:-build/ort}
  if [ ! -d "$ort_dir/node_modules/onnxruntime-node" ]; then
    mkdir -p "$ort_dir"
    (cd "$ort_dir" && ONNXRUNTIME_NODE_INSTALL=skip npm install --ignore-scripts --no-audit \
      --no-fund onnxruntime-node >/dev/null)
  fi
  batches=${BENCH_BATCHES:-1,32}
  bench_runs=${BENCH_RUNS:-50}
  models=build/onnx_models
  ORT_NODE_DIR=$ort_dir BENCH_BATCHES=$batches tools/onnx_models/regen.sh "$models" 2>&1 |
    grep -v -i warn >&2 || true
  names=$(cd "$models" && ls -d */ | tr -d / | paste -sd, -)
  echo "bench.sh: ember (build/bench/onnx_bench), $threads threads, $bench_runs runs" >&2
  run build/bench/onnx_bench --models "$models" --names "$names" --batches "$batches" \
    --runs "$bench_runs" --warmup 5 >"$out/onnx.ember.jsonl"
  echo "bench.sh: ONNX Runtime (tools/onnx_models/ort_run.js), $threads threads" >&2
  : >"$out/onnx.ort.jsonl"
  for name in ${names//,/ }; do
    for b in ${batches//,/ }; do
      run node tools/onnx_models/ort_run.js --ort "$ort_dir" --model "$models/$name/model.onnx" \
        --inputs "$models/$name/bench_b$b" --name "$name/b$b" --runs "$bench_runs" --warmup 5 \
        --threads "$threads" >>"$out/onnx.ort.jsonl"
    done
  done
  /usr/bin/python3 bench/onnx_report.py --ember "$out/onnx.ember.jsonl" --peer "$out/onnx.ort.jsonl" \
    --threads "$threads" --out "$out/onnx.json" | tee "$out/onnx.txt"
  echo "bench.sh: wrote $out/onnx.json (raw: $out/onnx.ember.jsonl, $out/onnx.ort.jsonl)" >&2
  exit 0
fi

# BENCH_ROUNDS rounds of ember (with its native peers) and PyTorch in turn, the repetitions
# shared among them, so that a slow stretch of a shared machine falls on both sides.
rounds=${BENCH_ROUNDS:-3}
per_round=$(((reps + rounds - 1) / rounds))
rm -f "$out/$suite".ember.*.json "$out/$suite".torch.*.json
merge_args=()
for round in $(seq "$rounds"); do
  echo "bench.sh: round $round of $rounds: ember (build/bench/${suite}_bench), $threads threads," \
    "$per_round repetitions" >&2
  run "build/bench/${suite}_bench" --benchmark_repetitions="$per_round" \
    --benchmark_min_time="$min_time" --benchmark_format=json >"$out/$suite.ember.$round.json"
  echo "bench.sh: round $round of $rounds: PyTorch (bench/peer_torch_$suite.py)" >&2
  run /usr/bin/python3 "bench/peer_torch_$suite.py" --threads "$threads" --reps "$per_round" \
    --min-time "$min_time" --out "$out/$suite.torch.$round.json"
  merge_args+=(--ember "$out/$suite.ember.$round.json" --peer "$out/$suite.torch.$round.json")
done
/usr/bin/python3 bench/merge_bench.py "${merge_args[@]}" --reps "$((per_round * rounds))" \
  --out "$out/$suite.json" | tee "$out/$suite.txt"
echo "bench.sh: wrote $out/$suite.json (raw: $out/$suite.ember.N.json, $out/$suite.torch.N.json" \
  "for rounds N = 1..$rounds)" >&2
if [ "$suite" = cpu ]; then
  # ember, oneDNN (in the same process) and PyTorch (in a child process) in turn
  # (docs/benchmarks.md, "Paired rows")
  echo "bench.sh: paired rows: ember, oneDNN and PyTorch in turn" >&2
  run build/bench/cpu_bench --paired="${BENCH_PAIRED_ROUNDS:-9}" \
    --paired_torch=bench/peer_torch_cpu.py --paired_out="$out/cpu.paired.json" |
    tee "$out/cpu.paired.txt"
fi
