#!/usr/bin/env bash
# Installs what is needed, builds ember and runs the main job: Fashion-MNIST training on the
# CPU (a small CNN, 3 epochs), evaluation on the test set, and inference with the saved model.
# Extra arguments go to `mnist train` (e.g. --model mlp --epochs 5).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target mnist
build/examples/mnist train --out runs/mnist "$@"
echo
echo "Classifying the first test images with the saved model:"
build/examples/mnist infer --model-dir runs/mnist test:0 test:1 test:2
