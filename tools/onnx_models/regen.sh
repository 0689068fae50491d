#!/usr/bin/env bash
# Makes the real-model fixtures: exports the models from PyTorch and stores ONNX Runtime's
# outputs beside them (the references of tests/onnx/real_models_test.cpp).
#   tools/onnx_models/regen.sh [OUT]          # OUT: default tests/onnx/models
# Environment:
#   ORT_NODE_DIR      the folder where onnxruntime-node is installed
#                     (ONNXRUNTIME_NODE_INSTALL=skip npm install --ignore-scripts onnxruntime-node)
#   EMBER_CHECKPOINT  ember_cnn's weights: a model.safetensors of
#                     `build/examples/mnist train --model cnn --epochs 1 --seed 42` (the committed
#                     fixture's); default runs/mnist/model.safetensors; random weights if absent
#   BENCH_BATCHES     also write bench inputs of these batch sizes (e.g. 1,32)
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-tests/onnx/models}
ckpt=${EMBER_CHECKPOINT:-runs/mnist/model.safetensors}
if [ ! -f "$ckpt" ]; then
  echo "regen.sh: $ckpt not found: ember_cnn gets random weights" >&2
  ckpt=
fi
/usr/bin/python3 tools/onnx_models/make_models.py --out "$out" --ember-checkpoint "$ckpt" \
  --bench-batches "${BENCH_BATCHES:-}"
for dir in "$out"/*/; do
  [ -f "$dir/model.onnx" ] || continue
  node tools/onnx_models/ort_run.js --model "$dir/model.onnx" --inputs "$dir/test_data_set_0" \
    --write-outputs "$dir/test_data_set_0" ${ORT_NODE_DIR:+--ort "$ORT_NODE_DIR"} >/dev/null
done
echo "regen.sh: wrote $out ($(du -sh "$out" | cut -f1))" >&2
