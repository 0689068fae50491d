#!/usr/bin/env bash
# Installs what is needed, configures, builds and runs every test; the release build is then
# installed and used from outside the tree (scripts/check_install.sh).
#   scripts/test.sh              # release build in build/
#   scripts/test.sh --sanitize   # ASan + UBSan build in build-asan/
set -euo pipefail
cd "$(dirname "$0")/.."

preset=release
for arg in "$@"; do
  case "$arg" in
    --sanitize) preset=asan ;;
    *) echo "test.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

scripts/setup.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset"
ctest --preset "$preset"
if [ "$preset" = release ]; then
  scripts/check_install.sh build
fi
