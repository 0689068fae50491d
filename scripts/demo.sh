#!/usr/bin/env bash
# Installs what is needed, builds ember and runs the main job.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target tour
build/examples/tour
