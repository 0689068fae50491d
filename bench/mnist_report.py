#!/usr/bin/python3
"""The mnist suite's table: ember's seconds per training epoch (from the run's metrics.jsonl)
and test accuracy beside PyTorch's (bench/peer_torch_mnist.py), per model; writes JSON."""
import argparse
import json
import os
import statistics

ap = argparse.ArgumentParser()
ap.add_argument("--dir", required=True)
ap.add_argument("--out", required=True)
a = ap.parse_args()
rows = []
print("%-6s %14s %14s %8s %12s %12s" % ("model", "ember s/epoch", "torch s/epoch", "speedup",
                                        "ember acc", "torch acc"))
for model in ("mlp", "cnn"):
    lines = [json.loads(l) for l in open(os.path.join(a.dir, "mnist-ember-" + model,
                                                        "metrics.jsonl"))]
    ember_s = statistics.median(l["seconds"] for l in lines if l["split"] == "train")
    ember_acc = [l["accuracy"] for l in lines if l["split"] == "valid"][-1]
    peer = json.load(open(os.path.join(a.dir, "mnist.torch.%s.json" % model)))
    torch_s = statistics.median(e["seconds"] for e in peer["epochs"])
    torch_acc = peer["epochs"][-1]["test_accuracy"]
    rows.append({"model": model, "ember_s_per_epoch": ember_s, "torch_s_per_epoch": torch_s,
                 "speedup": torch_s / ember_s, "ember_test_accuracy": ember_acc,
                 "torch_test_accuracy": torch_acc, "epochs": len(peer["epochs"])})
    print("%-6s %14.2f %14.2f %7.2fx %12.4f %12.4f" % (model, ember_s, torch_s, torch_s / ember_s,
                                                     ember_acc, torch_acc))
json.dump(rows, open(a.out, "w"), indent=1)
