#!/usr/bin/env python3
"""Pairs bench/cuda_bench.cpp's report with the PyTorch peer's (bench/peer_torch_cuda.py,
timed in the same run) and with a stored anchor (bench/peer_torch_cuda_h200.json: one
H200 run of the project's anchor script), prints the table and writes bench/out/cuda.json.

    cuda_report.py --ember E.json [--peer T.json] [--anchor A.json] --out cuda.json

A record is {"name", "backend": "cuda", "ember_ms", "peer", "peer_ms", "speedup"} with
speedup = peer_ms / ember_ms (above 1: ember is faster), plus the figure in its unit:
tflops / gbps / us_per_op (and peer_...). The anchor holds figures, not times: its rows
carry the anchor's figure and the ratio of the figures, oriented so that above 1 is ember
ahead. Standard library only (runs on a bare GPU machine).
"""
import argparse
import json
import os

KEYS = {"TFLOP/s": "tflops", "GB/s": "gbps", "us/op": "us_per_op", "ms": None}


def better_when_higher(unit):
    return unit in ("TFLOP/s", "GB/s")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ember", required=True)
    p.add_argument("--peer")
    p.add_argument("--anchor")
    p.add_argument("--out", required=True)
    a = p.parse_args()
    ember = json.load(open(a.ember))
    peer, peer_gpu = {}, None
    if a.peer and os.path.exists(a.peer):
        rep = json.load(open(a.peer))
        peer = {r["name"]: r for r in rep["results"]}
        peer_gpu = f"torch {rep.get('torch')} on {rep.get('gpu')}"
    anchor = json.load(open(a.anchor)) if a.anchor and os.path.exists(a.anchor) else {}

    print(f"ember on {ember.get('gpu')}; peer: {peer_gpu or 'not run'}; "
          f"anchor: {('torch ' + anchor.get('torch', '?') + ' on ' + anchor.get('gpu', '?')) if anchor else 'none'}")
    head = f"{'name':42s} {'ember':>18s} {'torch (now)':>18s} {'speedup':>8s} {'anchor':>12s} {'vs anchor':>9s}"
    print(head)
    print("-" * len(head))
    records = []
    for r in ember["results"]:
        unit, key = r["unit"], KEYS.get(r["unit"])
        rec = {"name": r["name"], "backend": "cuda", "ember_ms": r["ms"], "peer": None,
               "peer_ms": None, "speedup": None}
        if key:
            rec[key] = r["value"]
        pr = peer.get(r["name"])
        if pr:
            rec.update(peer="torch", peer_ms=pr["ms"], speedup=round(pr["ms"] / r["ms"], 3))
            if key:
                rec["peer_" + key] = pr["value"]
        av = anchor.get(r["name"])
        if av is not None:
            rec["anchor"] = av
            # The anchor stores the figure: a rate (higher is better) or a time in ms / us.
            rec["vs_anchor"] = round(r["value"] / av if better_when_higher(unit) else av / r["value"], 3)
        records.append(rec)

        def fig(v, u):
            return f"{v:10.3f} {u:>7s}"
        line = f"{r['name']:42s} {fig(r['value'], unit)} "
        line += f"{fig(pr['value'], unit) if pr else '':>18s} "
        line += f"{(str(rec['speedup']) + 'x') if pr else '':>8s} "
        line += f"{av if av is not None else '':>12} "
        line += f"{(str(rec['vs_anchor']) + 'x') if av is not None else '':>9s}"
        print(line)
    print("speedup = torch time / ember time, vs anchor = ember's figure against the stored "
          "anchor's (above 1: ember ahead)")
    if any(r["name"].startswith("conv2d_") for r in ember["results"]):
        print("conv2d: ember and the peer convolve without bias; the anchor's nn.Conv2d adds "
              "one (a further pass over the output, not in the flop count)")
    with open(a.out, "w") as f:
        json.dump(records, f, indent=1)


if __name__ == "__main__":
    main()
