#!/usr/bin/python3
"""Merges Google Benchmark JSON reports of ember (plus its native peers) with peer reports
(bench/peer_torch_cpu.py) into bench/out/SUITE.json, and prints the table.

    merge_bench.py --ember E1.json [--ember E2.json ...] --peer T1.json [--peer T2.json ...] \
        --out bench/out/cpu.json

Several reports of one side are rounds of the same suite (bench.sh runs ember and the peers in
turn, BENCH_ROUNDS times, so that a slow stretch of a shared machine falls on both): a figure
is the median of all its samples over the rounds, and "fastest" the ratio of the two sides'
fastest samples, the figure least disturbed by other work.

Google Benchmark names are "<who>/<op>/<size>[/real_time]" where who is an ember backend
("cpu", "dispatch") or a native peer ("openblas", "onednn", "onednn_blocked", "copy"); peer reports name
results "<op>/<size>". Each ember row is paired with every peer result of the same op.

A record is {"name", "backend", "ember_ms", "peer", "peer_ms", "speedup", "speedup_fastest"}
with speedup = peer_ms / ember_ms (above 1: ember is faster), plus the figure the benchmark's
work counter calls for: gflops/peer_gflops ("flop"), gbps/peer_gbps ("bytes": read +
written), us_per_op/peer_us_per_op ("ops"); and the thread count. For a "copy" peer both sides
move the same bytes, so speedup is ember's fraction of the copy bandwidth.
"""
import argparse
import json
import sys

EMBER_BACKENDS = ("cpu", "dispatch", "autodiff_cpu", "autodiff_dispatch")
NATIVE_PEERS = ("openblas", "onednn", "onednn_blocked", "copy")
TO_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
WORK_COUNTERS = ("flop", "bytes", "ops")


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def gbench_samples(reports):
    """{name: entry} over one or more reports (rounds): entry["samples"] holds every
    repetition's time in ms (a report with only aggregates gives its median as one sample),
    entry["ms"] their median and entry["min_ms"] the fastest (None where a report had only the
    median: its fastest repetition is not known)."""
    rows, failed = {}, set()
    for report in reports:
        singles, medians = {}, {}
        for b in report["benchmarks"]:
            name = b.get("run_name", b["name"]).removesuffix("/real_time")
            if b.get("error_occurred"):
                if name not in failed:  # once, not once per repetition
                    print(f"merge_bench: {name} failed: {b.get('error_message')}", file=sys.stderr)
                failed.add(name)
                continue
            ms = b["real_time"] * TO_MS[b["time_unit"]]
            if b.get("run_type") == "aggregate":
                if b.get("aggregate_name") == "median":
                    medians[name] = (b, ms)
            else:
                singles.setdefault(name, (b, []))[1].append(ms)
        for name in dict.fromkeys([*singles, *medians]):  # in the report's order
            b, samples = singles[name] if name in singles else (medians[name][0], [medians[name][1]])
            entry = rows.setdefault(name, dict(b, samples=[], aggregate_only=False))
            entry["samples"].extend(samples)
            entry["aggregate_only"] |= name not in singles
    for entry in rows.values():
        entry["ms"] = median(entry["samples"])
        entry["min_ms"] = None if entry["aggregate_only"] else min(entry["samples"])
    return rows


def sig(x, digits=6):
    return None if x is None else float(f"{x:.{digits}g}")


def figures(work_kind, work, ember_ms, peer_ms):
    def rate(ms):  # GFLOP/s or GB/s (1e9), or microseconds per op
        return ms * 1e3 / work if work_kind == "ops" else work / (ms * 1e-3) / 1e9

    key = {"flop": "gflops", "bytes": "gbps", "ops": "us_per_op"}[work_kind]
    out = {key: sig(rate(ember_ms), 4)}
    if peer_ms is not None:
        out["peer_" + key] = sig(rate(peer_ms), 4)
    return out


def build_records(ember_reports, peer_reports):
    rows = gbench_samples(ember_reports)
    threads = int(ember_reports[0].get("context", {}).get("ember_threads", 0)) or None
    # (peer, op) -> every sample over the rounds, in ms
    peer_samples = {}
    for rep in peer_reports:
        for r in rep["results"]:
            peer_samples.setdefault((rep["peer"], r["name"]), []).extend(
                r.get("samples_ms") or [r["ms"]])
    peers_by_op = {}
    for (peer, op), samples in peer_samples.items():
        peers_by_op.setdefault(op, []).append((peer, median(samples), min(samples)))
    for name, entry in rows.items():
        who, _, op = name.partition("/")
        if who in NATIVE_PEERS:
            peers_by_op.setdefault(op, []).append((who, entry["ms"], entry["min_ms"]))

    records = []
    for name, entry in rows.items():
        backend, _, op = name.partition("/")
        if backend not in EMBER_BACKENDS:
            continue
        kind = next((k for k in WORK_COUNTERS if k in entry), None)
        for peer, peer_ms, peer_min in peers_by_op.get(op, [(None, None, None)]):
            rec = {"name": op, "backend": backend, "ember_ms": sig(entry["ms"]), "peer": peer,
                   "peer_ms": sig(peer_ms),
                   "speedup": None if peer_ms is None else sig(peer_ms / entry["ms"], 3),
                   "speedup_fastest": None if peer_min is None or entry["min_ms"] is None
                                      else sig(peer_min / entry["min_ms"], 3)}
            if kind:
                rec.update(figures(kind, entry[kind], entry["ms"], peer_ms))
            rec["threads"] = threads
            records.append(rec)
    return records


def fmt_time(ms):
    if ms is None:
        return "-"
    if ms < 1e-2:
        return f"{ms * 1e3:.2f} us"
    return f"{ms:.2f} ms" if ms < 100 else f"{ms:.1f} ms"


def fmt_rate(rec, prefix):
    for key, unit in (("gflops", "GFLOP/s"), ("gbps", "GB/s"), ("us_per_op", "us/op")):
        v = rec.get(prefix + key)
        if v is not None:
            return f"{v:.3g} {unit}" if key == "us_per_op" else f"{v:.1f} {unit}"
    return "-"


def print_table(records, ember_reports, peer_reports, reps):
    ctx = ember_reports[0].get("context", {})
    rounds = len(ember_reports)
    print(f"ember suite: {ctx.get('ember_threads', '?')} threads "
          f"(EMBER_NUM_THREADS = OPENBLAS_NUM_THREADS = OMP_NUM_THREADS = torch.set_num_threads); "
          f"medians of {reps} repetitions" +
          (f" over {rounds} rounds of ember and its peers in turn" if rounds > 1 else ""))
    caches = ", ".join(f"L{c['level']} {c['size'] // 1024} KiB" for c in ctx.get("caches", [])
                       if c.get("type") != "Instruction")
    load = ", ".join(f"{x:.2f}" for x in ctx.get("load_avg", []))
    print(f"machine: {ctx.get('num_cpus', '?')} CPUs @ {ctx.get('mhz_per_cpu', '?')} MHz; "
          f"{caches}; load average at start {load or '?'}")
    print(f"ember matmul: {ctx.get('ember_matmul', '?')}")
    peers = [f"OpenBLAS core {ctx['openblas_core']}, {ctx.get('openblas_threads', '?')} threads"
             ] if "openblas_core" in ctx else []
    named = {r["peer"]: r for r in peer_reports}  # one line a peer, not one a round
    peers += [f"{r['peer']} {r['version']} ({r['threads']} threads)" for r in named.values()]
    print("peers: " + "; ".join(peers))
    head = ("name", "backend", "peer", "ember", "peer", "speedup", "fastest", "ember rate",
            "peer rate")
    lines = [(r["name"], r["backend"], r["peer"] or "-", fmt_time(r["ember_ms"]),
              fmt_time(r["peer_ms"]), "-" if r["speedup"] is None else f"{r['speedup']:.2f}x",
              "-" if r["speedup_fastest"] is None else f"{r['speedup_fastest']:.2f}x",
              fmt_rate(r, ""), fmt_rate(r, "peer_")) for r in records]
    widths = [max(len(str(x[i])) for x in [head] + lines) for i in range(len(head))]
    left = (0, 1, 2)
    for row in [head] + lines:
        print("  ".join(str(c).ljust(w) if i in left else str(c).rjust(w)
                        for i, (c, w) in enumerate(zip(row, widths))))
    print("speedup = peer time / ember time, medians (above 1: ember is faster); fastest = the "
          "same for each side's\nfastest sample. For peer 'copy' it is ember's fraction of "
          "memcpy bandwidth for the same bytes moved\n(read + written).")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ember", action="append", required=True,
                   help="Google Benchmark JSON (ember + native peers), one a round")
    p.add_argument("--peer", action="append", default=[], help="peer JSON (peer_*.py), one a round")
    p.add_argument("--out", required=True)
    p.add_argument("--reps", default="?", help="repetitions, for the table header")
    args = p.parse_args()
    ember_reports = []
    for path in args.ember:
        with open(path) as f:
            ember_reports.append(json.load(f))
    peer_reports = []
    for path in args.peer:
        with open(path) as f:
            peer_reports.append(json.load(f))
    records = build_records(ember_reports, peer_reports)
    with open(args.out, "w") as f:
        json.dump(records, f, indent=1)
        f.write("\n")
    print_table(records, ember_reports, peer_reports, args.reps)


if __name__ == "__main__":
    main()
