#!/usr/bin/env bash
# Installs a build of ember into BUILD/install, then builds and runs tests/consumer, a project
# outside the tree that uses the installed package through find_package and pkg-config.
#   scripts/check_install.sh          # the release build in build/
#   scripts/check_install.sh BUILD    # another build folder
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
prefix="$PWD/$build/install"
rm -rf "$prefix"  # a header no longer installed must not linger from an earlier run
cmake --install "$build" --prefix "$prefix" >/dev/null
cmake -S tests/consumer -B "$build/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$build/consumer"
ctest --test-dir "$build/consumer" --output-on-failure
