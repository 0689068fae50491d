#!/usr/bin/env python3
"""Writes tests/train/metric_goldens.json: scikit-learn's values for ember's training metrics.

Run with Debian's python3-sklearn:  /usr/bin/python3 tools/gen_metric_goldens.py
"""
import json
import os

import numpy as np
from sklearn import metrics as M

rng = np.random.default_rng(0)
cases = []


def softmax(z):
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def multiclass(name, n, c, batch):
    logits = rng.normal(size=(n, c)).astype(np.float32)
    y = rng.integers(0, c, size=n)
    # make it better than chance so the scores are not all near the same value
    logits[np.arange(n), y] += rng.uniform(0, 1.5, size=n).astype(np.float32)
    probs = softmax(logits.astype(np.float64)).astype(np.float32)
    pred = logits.argmax(1)
    labels = np.arange(c)
    case = {
        "name": name, "num_classes": c, "batch": batch,
        "scores": probs.reshape(-1).tolist(), "targets": y.tolist(),
        "accuracy": M.accuracy_score(y, pred),
        "precision": M.precision_score(y, pred, average="macro", zero_division=0),
        "recall": M.recall_score(y, pred, average="macro", zero_division=0),
        "f1": M.f1_score(y, pred, average="macro", zero_division=0),
        "f2": M.fbeta_score(y, pred, beta=2, average="macro", zero_division=0),
        "precision_micro": M.precision_score(y, pred, average="micro"),
        "f1_micro": M.f1_score(y, pred, average="micro"),
        "confusion": M.confusion_matrix(y, pred, labels=labels).reshape(-1).tolist(),
    }
    if c > 2:
        case["top2_accuracy"] = M.top_k_accuracy_score(y, probs, k=2, labels=labels)
    if c == 2:
        case["auroc"] = M.roc_auc_score(y, probs[:, 1])
    else:
        case["auroc"] = M.roc_auc_score(y, probs, multi_class="ovr", average="macro")
    cases.append(case)


multiclass("binary", 97, 2, 16)
multiclass("ten_classes", 300, 10, 64)
multiclass("three_classes_small_batches", 41, 3, 5)

# Multi-label: logits, 0/1 targets, threshold 0.5 on sigmoid.
n, c = 80, 4
logits = rng.normal(size=(n, c)).astype(np.float32)
y = (rng.uniform(size=(n, c)) < 0.4).astype(np.int64)
logits += (y * 1.0).astype(np.float32)
pred = (logits > 0).astype(np.int64)
cases.append({
    "name": "multi_label", "num_classes": c, "batch": 16, "multi_label": True,
    "scores": logits.reshape(-1).tolist(), "targets": y.reshape(-1).tolist(),
    "precision": M.precision_score(y, pred, average="macro", zero_division=0),
    "recall": M.recall_score(y, pred, average="macro", zero_division=0),
    "f1": M.f1_score(y, pred, average="macro", zero_division=0),
    "f1_micro": M.f1_score(y, pred, average="micro", zero_division=0),
})

path = os.path.join(os.path.dirname(__file__), "..", "tests", "train", "metric_goldens.json")
os.makedirs(os.path.dirname(path), exist_ok=True)
with open(path, "w") as f:
    json.dump({"cases": cases}, f)
print("wrote", len(cases), "cases")
