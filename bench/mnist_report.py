#!/usr/bin/python3
"""The mnist suite's table: ember's seconds per training epoch (from each run's metrics.jsonl)
and test accuracy beside PyTorch's (bench/peer_torch_mnist.py), per model, over the seeds run;
writes JSON. Seconds are the median over every epoch of every seed; accuracies are after the
last epoch, as the mean (and the spread, min to max) over seeds; "loader" is the share of
ember's training time spent waiting for the next batch (metrics.jsonl's data_seconds)."""
import argparse
import json
import os
import statistics

ap = argparse.ArgumentParser()
ap.add_argument("--dir", required=True)
ap.add_argument("--seeds", required=True, help="comma-separated seeds that were run")
ap.add_argument("--models", default="mlp,cnn")
ap.add_argument("--out", required=True)
a = ap.parse_args()
seeds = [int(s) for s in a.seeds.split(",")]


def acc_text(accs):
    if len(accs) == 1:
        return "%.4f" % accs[0]
    return "%.4f (%.4f-%.4f)" % (statistics.mean(accs), min(accs), max(accs))


rows = []
print("%d seed(s): %s" % (len(seeds), a.seeds))
print("%-6s %14s %14s %8s %24s %24s %8s" % ("model", "ember s/epoch", "torch s/epoch", "speedup",
                                             "ember acc", "torch acc", "loader"))
for model in a.models.split(","):
    ember_s, ember_acc, torch_s, torch_acc, waits = [], [], [], [], []
    for seed in seeds:
        path = os.path.join(a.dir, "mnist-ember-%s-%d" % (model, seed), "metrics.jsonl")
        lines = [json.loads(l) for l in open(path)]
        ember_s += [l["seconds"] for l in lines if l["split"] == "train"]
        waits += [(l["data_seconds"], l["seconds"]) for l in lines
                  if l["split"] == "train" and "data_seconds" in l]
        ember_acc.append([l["accuracy"] for l in lines if l["split"] == "valid"][-1])
        peer = json.load(open(os.path.join(a.dir, "mnist.torch.%s.%d.json" % (model, seed))))
        torch_s += [e["seconds"] for e in peer["epochs"]]
        torch_acc.append(peer["epochs"][-1]["test_accuracy"])
    es, ts = statistics.median(ember_s), statistics.median(torch_s)
    loader = sum(w for w, _ in waits) / sum(t for _, t in waits) if waits else float("nan")
    rows.append({"model": model, "seeds": seeds, "ember_s_per_epoch": es, "torch_s_per_epoch": ts,
                 "speedup": ts / es, "ember_test_accuracy": ember_acc,
                 "torch_test_accuracy": torch_acc,
                 "ember_mean_accuracy": statistics.mean(ember_acc),
                 "torch_mean_accuracy": statistics.mean(torch_acc),
                 "ember_loader_wait_share": loader,
                 "epochs": len(peer["epochs"])})
    print("%-6s %14.2f %14.2f %7.2fx %24s %24s %7.2f%%" % (model, es, ts, ts / es,
                                                        acc_text(ember_acc), acc_text(torch_acc),
                                                        100 * loader))
json.dump(rows, open(a.out, "w"), indent=1)
