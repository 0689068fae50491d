#!/usr/bin/env bash
# Installs the Debian packages ember's build, tests and examples need. Idempotent and
# non-interactive; runs apt-get update at most once, and only when something is missing.
#   scripts/setup.sh            # build + tests + examples
#   scripts/setup.sh --bench    # also what the benchmarks compare against (PyTorch)
#   scripts/setup.sh --docs     # also Doxygen, for the API reference (scripts/docs.sh)
set -euo pipefail

packages=(build-essential cmake ninja-build ccache pkg-config lld
          libgtest-dev libgmock-dev libbenchmark-dev libopenblas-dev nlohmann-json3-dev
          dataset-fashion-mnist python3 python3-numpy
          libsqlite3-dev libstb-dev zlib1g-dev python3-sklearn
          libncurses-dev tmux
          libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
          libvulkan-dev mesa-vulkan-drivers libshaderc-dev glslang-dev spirv-tools libasio-dev
          gcc-arm-none-eabi picolibc-arm-none-eabi libstdc++-arm-none-eabi-picolibc qemu-system-arm qemu-user
          libgloo-dev)
for arg in "$@"; do
  case "$arg" in
    --bench) packages+=(python3-torch libdnnl-dev libopenmpi-dev openmpi-bin) ;;
    --goldens) packages+=(python3-torch) ;;
    --docs) packages+=(doxygen) ;;
    *) echo "setup.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "setup.sh: installing ${missing[*]}"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
