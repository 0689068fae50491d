#!/usr/bin/python3
"""Pairs the onnx suite's two sides (bench/onnx_bench.cpp's records and
tools/onnx_models/ort_run.js's results, one JSON object per line each) into
bench/out/onnx.json and prints the table.

    onnx_report.py --ember E.jsonl --peer P.jsonl --threads 2 --out bench/out/onnx.json

A record is {"name": "MODEL/bB", "backend": "cpu", "ember_ms", "peer": "onnxruntime",
"peer_ms", "speedup", "threads"} with speedup = peer_ms / ember_ms (above 1: ember is faster).
"""
import argparse
import json
import sys


def read_lines(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ember", required=True)
    ap.add_argument("--peer", required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    peer = {r["name"]: r for r in read_lines(args.peer)}
    records = []
    for e in read_lines(args.ember):
        p = peer.get(e["name"])
        if p is None:
            print(f"onnx_report: no ONNX Runtime result for {e['name']}", file=sys.stderr)
            continue
        records.append({
            "name": e["name"], "backend": e["backend"], "ember_ms": e["ember_ms"],
            "peer": "onnxruntime", "peer_ms": p["median_ms"],
            "speedup": round(p["median_ms"] / e["ember_ms"], 4), "threads": args.threads,
            "runs": e["runs"], "ember_min_ms": e["min_ms"], "peer_min_ms": p["min_ms"],
        })
    with open(args.out, "w") as f:
        json.dump(records, f, indent=1)
        f.write("\n")
    print(f"onnx suite: ember's ONNX runtime (CPU) vs ONNX Runtime (CPU), {args.threads} threads, "
          "median of each side's runs in ms")
    print(f"{'model/batch':<20} {'ember ms':>10} {'ORT ms':>10} {'speedup':>8}")
    for r in records:
        print(f"{r['name']:<20} {r['ember_ms']:>10.3f} {r['peer_ms']:>10.3f} {r['speedup']:>8.2f}")
    return 0 if records else 1


if __name__ == "__main__":
    sys.exit(main())
