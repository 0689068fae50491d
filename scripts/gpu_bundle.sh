#!/usr/bin/env bash
# Builds the GPU test bundle on this machine (no GPU needed) for a GPU machine with the CUDA
# 13 libraries (docs/cuda.md): a baseline-ISA build (no -march=native), GoogleTest and
# libstdc++ linked statically, NVRTC and the driver loaded at run time, cuBLAS & co found
# through -rpath /usr/local/cuda/lib64.
#   scripts/gpu_bundle.sh            # -> build-gpu/bundle/ and build-gpu/ember-gpu-bundle.tar.xz
# On the GPU machine:  tar xJf ember-gpu-bundle.tar.xz && bundle/run.sh
# and, separately (not run by run.sh), the CUDA benchmark against PyTorch:  bundle/bench.sh
# and the fusion benchmark:  bundle/bench_fusion.sh
# and the kernels on the Vulkan driver beside CUDA:  bundle/vulkan.sh
# and the main job on the GPU beside PyTorch's:  EMBER_MNIST_DIR=... bundle/mnist.sh [epochs]
# and data-parallel training on the machine's GPUs:  EMBER_MNIST_DIR=... bundle/distributed.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=${EMBER_GPU_BUILD:-build-gpu}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DEMBER_NATIVE=OFF \
  -DEMBER_BUILD_BENCH=ON -DEMBER_BUILD_EXAMPLES=ON -DEMBER_CUDA=ON -DEMBER_STATIC_GTEST=ON \
  -DCMAKE_EXE_LINKER_FLAGS="-Wl,-rpath,/usr/local/cuda/lib64 -static-libstdc++ -static-libgcc" \
  >/dev/null
# The GPU suites, the suite that loops over available_devices() (the op goldens run on every
# cuda:N there), and the device-aware suites (tests/support/suite.h), which run.sh runs on
# cuda:0, with where each binary is built.
declare -A dirs=([kernel_gpu_test]=tests/kernel [cuda_kernels_test]=tests/cuda
  [cuda_backend_test]=tests/cuda [cuda_graph_test]=tests/cuda [cuda_memory_test]=tests/cuda
  [ops_test]=tests)
device_tests=(grad_test layer_test loss_test seq_test optim_test train_test)
for t in "${device_tests[@]}"; do dirs[$t]=tests; done
gpu_tests=(kernel_gpu_test cuda_kernels_test cuda_backend_test cuda_graph_test cuda_memory_test
  ops_test)
tests=("${gpu_tests[@]}" "${device_tests[@]}")
targets=$(cmake --build "$build" --target help)  # (grep -q on the pipe would cut it short)
onnx_tool=$(grep -q "^ember-onnx:" <<<"$targets" && echo ember-onnx || true)
server=$(grep -q "^ember-server:" <<<"$targets" && echo ember-server || true)
cmake --build "$build" --target "${tests[@]}" cuda_bench fusion_bench mnist $onnx_tool $server \
  -j "${JOBS:-2}"
bundle="$build/bundle"
rm -rf "$bundle"
mkdir -p "$bundle/data"
# The suites' goldens: they read them from $EMBER_TEST_DATA (tests/support/suite.h).
cp tests/ops/goldens.json tests/nn/layer_goldens.json tests/nn/loss_goldens.json \
  tests/nn/seq_goldens.json tests/optim/optim_goldens.json tests/train/metric_goldens.json \
  "$bundle/data/"
for t in "${tests[@]}"; do
  cp "$build/${dirs[$t]}/$t" "$bundle/"
  # The bundle must not need the -dev libraries the GPU machine lacks.
  if ldd "$bundle/$t" | grep -E "libgtest|libstdc\+\+|libcuda|not found"; then
    echo "gpu_bundle.sh: $t links a library the GPU machine may lack" >&2
    exit 1
  fi
done
# The benchmark: bundle/bench.sh runs cuda_bench, the PyTorch peer where python3 has CUDA
# PyTorch, and prints the ratios (bench/cuda_bench.sh); bundle/out/ gets the JSON.
cp "$build/bench/cuda_bench" bench/peer_torch_cuda.py bench/cuda_report.py \
  bench/peer_torch_cuda_h200.json "$bundle/"
cp bench/cuda_bench.sh "$bundle/bench.sh"
# The fusion benchmark: bundle/bench_fusion.sh (bench/fusion_bench.sh), fused and unfused
# beside PyTorch eager and torch.compile.
cp "$build/bench/fusion_bench" bench/peer_torch_fusion.py bench/fusion_report.py "$bundle/"
cp bench/fusion_bench.sh "$bundle/bench_fusion.sh"
for b in cuda_bench fusion_bench; do
  if ldd "$bundle/$b" | grep -E "libstdc\+\+|libcuda|not found"; then
    echo "gpu_bundle.sh: $b links a library the GPU machine may lack" >&2
    exit 1
  fi
done
# The main job (its terminal and Gloo libraries travel with it, and the libstdc++ Gloo was
# built against) and the PyTorch peer of it.
mkdir -p "$bundle/lib"
cp "$build/examples/mnist" bench/peer_torch_mnist.py "$bundle/"
for l in $(ldd "$bundle/mnist" |
  awk '/libncursesw|libtinfo|libgloo|libhiredis|libibverbs|libnl-|libstdc\+\+|libgcc_s/ {print $3}'); do
  cp "$l" "$bundle/lib/"
done
if ldd "$bundle/mnist" | grep -E "libcuda|not found"; then
  echo "gpu_bundle.sh: mnist links a library the GPU machine may lack" >&2
  exit 1
fi
# The ONNX runtime's tool and the node suite, run on cuda:0 by onnx.sh (protobuf and the ONNX
# schema library travel with it).
if [ -n "$onnx_tool" ]; then
  cp "$build/tools/ember-onnx/ember-onnx" "$bundle/"
  for l in $(ldd "$bundle/ember-onnx" | awk '/libonnx|libprotobuf/ {print $3}'); do cp "$l" "$bundle/lib/"; done
  mkdir -p "$bundle/onnx"
  cp -r /usr/share/libonnx-testdata/data/node "$bundle/onnx/node"
  cp -r tests/onnx/models "$bundle/onnx/models"
  cp tests/onnx/node_expected_pass.txt "$bundle/onnx/"
  cat >"$bundle/onnx.sh" <<'ONNX'
#!/usr/bin/env bash
# The ONNX node suite and the real models on cuda:0 (and the CPU for comparison).
cd "$(dirname "$0")"
export LD_LIBRARY_PATH="$PWD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
for dev in cuda:0 cpu; do
  echo "== ember-onnx test onnx/node --backend $dev"
  ./ember-onnx test onnx/node --backend "$dev" > "out/onnx-node-$dev.txt" 2>&1
  tail -1 "out/onnx-node-$dev.txt"
  ./ember-onnx test onnx/models --backend "$dev" | tail -5
done
ONNX
  chmod +x "$bundle/onnx.sh"
fi
cat >"$bundle/mnist.sh" <<'MNIST'
#!/usr/bin/env bash
# The main job on cuda:0 and on the CPU, and PyTorch's same models on the GPU: seconds per
# epoch and test accuracy.  EMBER_MNIST_DIR=<Fashion-MNIST IDX files> mnist.sh [epochs] [model]
set -u
cd "$(dirname "$0")"
export LD_LIBRARY_PATH="$PWD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
epochs=${1:-3}
model=${2:-mlp}
mkdir -p out
status=0
for backend in cuda cpu; do
  echo "== ember mnist --model $model --backend $backend"
  ./mnist train --model "$model" --backend "$backend" --epochs "$epochs" --plain \
    --out "out/mnist-$model-$backend" || status=$?
done
echo "== PyTorch on the GPU"
python3 peer_torch_mnist.py --model "$model" --epochs "$epochs" --device cuda \
  --data "$EMBER_MNIST_DIR" --out "out/mnist.torch.$model.cuda.json" || status=$?
exit $status
MNIST
chmod +x "$bundle/mnist.sh"
# The Remote backend with a server on cuda:0 (remote.sh): the op goldens and the device-aware
# suites through it, then the main job's CNN through it and on cuda:0 directly.
if [ -n "$server" ]; then
  cp "$build/tools/ember-server/ember-server" tests/remote/with_server.sh "$bundle/"
  if ldd "$bundle/ember-server" | grep -E "libstdc\+\+|libcuda|not found"; then
    echo "gpu_bundle.sh: ember-server links a library the GPU machine may lack" >&2
    exit 1
  fi
  cat >"$bundle/remote.sh" <<'REMOTE'
#!/usr/bin/env bash
# The suites through remote:127.0.0.1:PORT against an ember-server on cuda:0 (with_server.sh),
# then, where EMBER_MNIST_DIR is set, the main job's CNN for one epoch through it and on cuda:0.
# The exit status is the first failure's.
cd "$(dirname "$0")"
export EMBER_TEST_DATA="$PWD/data" EMBER_SERVER_BACKEND=${EMBER_SERVER_BACKEND:-cuda:0}
export LD_LIBRARY_PATH="$PWD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
status=0
note() { if [ "$1" -ne 0 ] && [ $status -eq 0 ]; then status=$1; fi; }
echo "== ops_test through remote (server on $EMBER_SERVER_BACKEND)"
./with_server.sh ./ember-server ./ops_test --gtest_filter='Ops/*' --gtest_brief=1 | tail -4
note "${PIPESTATUS[0]}"
for t in DEVICE_TESTS; do
  echo "== $t through remote (server on $EMBER_SERVER_BACKEND)"
  ./with_server.sh ./ember-server ./$t --gtest_brief=1 | tail -4
  note "${PIPESTATUS[0]}"
done
if [ -n "${EMBER_MNIST_DIR:-}" ]; then
  mkdir -p out
  echo "== mnist CNN, 1 epoch, through remote"
  ./with_server.sh ./ember-server sh -c './mnist train --model cnn --epochs 1 --plain \
    --backend "$EMBER_TEST_DEVICE" --out out/mnist-remote' | grep -iE "test acc|accuracy|s/epoch|error"
  note "${PIPESTATUS[0]}"
  echo "== mnist CNN, 1 epoch, on cuda:0"
  ./mnist train --model cnn --epochs 1 --plain --backend cuda:0 --out out/mnist-cuda |
    grep -iE "test acc|accuracy|s/epoch|error"
  note "${PIPESTATUS[0]}"
fi
exit $status
REMOTE
  sed -i "s/DEVICE_TESTS/${device_tests[*]}/" "$bundle/remote.sh"
  chmod +x "$bundle/remote.sh"
fi
cat >"$bundle/run.sh" <<'RUN'
#!/usr/bin/env bash
# Runs every GPU test binary of the bundle, the device-aware suites on cuda:0 (EMBER_TEST_DEVICE
# overrides); the exit status is the first failure's.
set -u
cd "$(dirname "$0")"
status=0
export EMBER_TEST_DATA="$PWD/data"
export LD_LIBRARY_PATH="$PWD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
device=${EMBER_TEST_DEVICE:-cuda:0}
for t in GPU_TESTS DEVICE_TESTS; do
  echo "== $t"
  case " DEVICE_TESTS " in
    *" $t "*) EMBER_TEST_DEVICE=$device ./"$t" "$@" ;;
    *) ./"$t" "$@" ;;
  esac
  rc=$?
  if [ $rc -ne 0 ] && [ $status -eq 0 ]; then status=$rc; fi
done
exit $status
RUN
sed -i "s/GPU_TESTS/${gpu_tests[*]}/; s/DEVICE_TESTS/${device_tests[*]}/g" "$bundle/run.sh"
chmod +x "$bundle/run.sh"
# The Vulkan kernel suite and vulkan_bench (beside cuda_bench's figures of the same names):
# bundle/vulkan.sh, where the machine has a Vulkan loader and driver (docs/vulkan.md).
if grep -q "^vulkan_bench:" <<<"$targets"; then
  cmake --build "$build" --target vulkan_kernels_test kernel_vulkan_test vulkan_backend_test \
    vulkan_bench -j "${JOBS:-2}"
  cp "$build/tests/vulkan/vulkan_kernels_test" "$build/tests/kernel/kernel_vulkan_test" \
    "$build/tests/vulkan/vulkan_backend_test" "$build/bench/vulkan_bench" "$bundle/"
  for b in vulkan_kernels_test kernel_vulkan_test vulkan_backend_test vulkan_bench; do
    if ldd "$bundle/$b" | grep -E "libgtest|libstdc\+\+|not found"; then
      echo "gpu_bundle.sh: $b links a library the GPU machine may lack" >&2
      exit 1
    fi
  done
  cat >"$bundle/vulkan.sh" <<'VULKAN'
#!/usr/bin/env bash
# The Vulkan backend on the machine's Vulkan driver: the kernel suites, the backend's test, the op
# goldens on vulkan:0 and the device-aware suites on vulkan:0, then vulkan_bench three times and
# cuda_bench's figures of the same names (docs/vulkan.md). Needs the Vulkan loader (libvulkan1);
# VK_DRIVER_FILES points at NVIDIA's ICD where the loader does not find it by itself (the ICD is
# libGLX_nvidia.so.0, which needs the GL vendor libraries, libglvnd). The exit status is the
# first failure's.
cd "$(dirname "$0")"
export EMBER_TEST_DATA="$PWD/data"
export LD_LIBRARY_PATH="$PWD/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if ! ./vulkan_kernels_test --gtest_filter='VulkanRun.DeviceIsDescribed' 2>&1 | grep -q "\[vulkan\]"; then
  icd=$(find /usr/share/vulkan /etc/vulkan /usr/local/nvidia -name 'nvidia_icd*.json' 2>/dev/null | head -1)
  export VK_DRIVER_FILES=${VK_DRIVER_FILES:-$icd}
fi
status=0
note() { if [ "$1" -ne 0 ] && [ $status -eq 0 ]; then status=$1; fi; }
for t in vulkan_kernels_test kernel_vulkan_test vulkan_backend_test; do
  echo "== $t"; ./$t; note $?
done
# The op goldens and the device-aware suites at once (their kernels compile on every core),
# each into logs/<suite>.log, then each one's summary.
mkdir -p logs
declare -A pid
# (Autotuning off: timings taken side by side would be kept in the tuner's file.)
EMBER_AUTOTUNE=0 ./ops_test --gtest_filter='*vulkan*' >logs/ops_test.log 2>&1 &
pid[ops_test]=$!
for t in DEVICE_TESTS; do
  EMBER_AUTOTUNE=0 EMBER_TEST_DEVICE=vulkan:0 ./$t >"logs/$t.log" 2>&1 &
  pid[$t]=$!
done
for t in ops_test DEVICE_TESTS; do
  wait "${pid[$t]}"; rc=$?; note $rc
  echo "== $t on vulkan:0 (exit $rc)"; grep -E "^\[  (PASSED|FAILED) |tests? ran" "logs/$t.log"
done
[ "${1:-}" = "--tests-only" ] && exit $status
for r in 1 2 3; do ./vulkan_bench --reps 30; done
for f in add_64M copy_GBps softmax_8192 sum_256M matmul_4096_fp32 matmul_4096_fp16; do
  ./cuda_bench --filter $f --reps 30
done
exit $status
VULKAN
  sed -i "s/DEVICE_TESTS/${device_tests[*]}/" "$bundle/vulkan.sh"
  chmod +x "$bundle/vulkan.sh"
fi
# Data-parallel training on the machine's GPUs (bundle/distributed.sh, docs/distributed.md): the
# checks behind ctest's distributed_*cuda* and *nccl* entries, then bench.sh distributed's GPU
# mode. bundle/distributed/ keeps the source tree's layout, so the bench script runs as is.
if grep -q "^dp_check:" <<<"$targets"; then
  cmake --build "$build" --target dp_check fault_check nccl_check ember-run dist_allreduce_bench \
    dist_train_bench -j "${JOBS:-2}"
  d="$bundle/distributed"
  mkdir -p "$d/build/examples" "$d/build/bench" "$d/bench" "$d/tests"
  cp "$build/ember-run" "$d/build/"
  cp "$build/examples/mnist" "$d/build/examples/"
  cp "$build/bench/dist_allreduce_bench" "$build/bench/dist_train_bench" "$d/build/bench/"
  cp "$build/tests/distributed/dp_check" "$build/tests/distributed/fault_check" \
    "$build/tests/distributed/nccl_check" tests/distributed/fault_test.sh "$d/tests/"
  cp bench/distributed_bench.sh bench/peer_torch_ddp.py bench/peer_torch_mnist.py "$d/bench/"
  for b in tests/dp_check tests/fault_check tests/nccl_check build/ember-run build/examples/mnist \
    build/bench/dist_allreduce_bench build/bench/dist_train_bench; do
    for l in $(ldd "$d/$b" | awk '/libgloo|libhiredis|libibverbs|libnl-|libstdc\+\+|libgcc_s/ {print $3}'); do
      cp -n "$l" "$bundle/lib/"
    done
    if LD_LIBRARY_PATH="$bundle/lib" ldd "$d/$b" | grep -E "libcuda|libnccl|not found"; then
      echo "gpu_bundle.sh: $b links a library the GPU machine may lack" >&2
      exit 1
    fi
  done
  cat >"$bundle/distributed.sh" <<'DIST'
#!/usr/bin/env bash
# Data-parallel training on this machine's GPUs, one rank a GPU under ember-run: NCCL on one
# rank, the CNN and the transformer on 2 ranks against one process on the summed batch, a rank
# killed mid-run (2 GPUs or more), then bench.sh distributed's GPU mode (out in
# distributed/bench/out/distributed_gpu.txt), unless the first argument is --tests-only.
# EMBER_MNIST_DIR: the Fashion-MNIST IDX files; EMBER_NCCL: libnccl.so.2 where the loader does not
# find it by name (PyTorch's wheel brings one, found below). The exit status is the first
# failure's (77, a check skipped for want of GPUs, is not one).
cd "$(dirname "$0")/distributed"
export LD_LIBRARY_PATH="$PWD/../lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
if [ -z "${EMBER_NCCL:-}" ]; then
  EMBER_NCCL=$(python3 -c 'import os, nvidia.nccl as n; print(os.path.join(list(n.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null)
  [ -f "$EMBER_NCCL" ] && export EMBER_NCCL || unset EMBER_NCCL
fi
status=0
check() {
  echo "== $*"; "$@"; rc=$?
  if [ $rc -ne 0 ] && [ $rc -ne 77 ] && [ $status -eq 0 ]; then status=$rc; fi
}
check build/ember-run --nproc 1 -- tests/nccl_check
check build/ember-run --nproc 1 -- tests/dp_check cuda nccl
check build/ember-run --nproc 1 -- tests/dp_check cuda nccl transformer
check build/ember-run --nproc 2 -- tests/dp_check cuda nccl transformer
check build/ember-run --nproc 2 -- tests/dp_check cuda
check build/ember-run --nproc 2 -- tests/dp_check cuda cnn
check build/ember-run --nproc 2 -- tests/dp_check cuda transformer
check tests/fault_test.sh build/ember-run tests/fault_check nccl
[ "${1:-}" = "--tests-only" ] && exit $status
if [ -z "${EMBER_MNIST_DIR:-}" ] && [ ! -d /usr/share/datasets/fashion-mnist ]; then
  echo "distributed.sh: no Fashion-MNIST for the benchmark: set EMBER_MNIST_DIR" >&2
  exit 2
fi
BENCH_DIST=gpu bench/distributed_bench.sh; rc=$?
[ $rc -ne 0 ] && [ $status -eq 0 ] && status=$rc
exit $status
DIST
  chmod +x "$bundle/distributed.sh"
fi
# xz: a third smaller than gzip for these binaries (EMBER_GPU_TAR=0: the bundle folder only)
if [ "${EMBER_GPU_TAR:-1}" != 0 ]; then
  tar cJf "$build/ember-gpu-bundle.tar.xz" -C "$build" bundle
  du -sh "$build/ember-gpu-bundle.tar.xz"
fi
du -sh "$bundle"
