"""The table of scripts/bench.sh fusion: ember fused and unfused beside PyTorch eager and
torch.compile from the same run, the JIT warm-up with a cold and a warm kernel cache, and the
memory figures; writes the records of docs/benchmarks.md to --out."""
import argparse, json, os

ap = argparse.ArgumentParser()
ap.add_argument("--ember", required=True)       # fusion_bench's JSON, empty kernel cache
ap.add_argument("--ember-warm", default="")     # the same with the cache the first run filled
ap.add_argument("--peer", default="")
ap.add_argument("--out", required=True)
a = ap.parse_args()


def load_list(p):
    return {r["name"]: r["value"] for r in json.load(open(p))} if p and os.path.exists(p) else {}


e = load_list(a.ember)
w = load_list(a.ember_warm)
t = json.load(open(a.peer)) if a.peer and os.path.exists(a.peer) else {}
records = []


def fmt(v, d=3):
    return "-" if v is None else f"{v:.{d}f}"


print(f"{'figure (ms)':38s} {'fused':>9s} {'no graph':>9s} {'unfused':>9s} {'host':>9s} "
      f"{'eager':>9s} {'compiled':>9s} {'vs eager':>9s} {'vs comp.':>9s}")
rows = [("chain6_64M", "chain6_64M_fused_ms", "chain6_64M_unfused_ms", "chain6_64M_eager_ms",
         "chain6_64M_compiled_ms")]
trainers = ("mlp784_256_10_b64", "mlp784_256_10_b1024", "cnn_fmnist_b256",
            "transformer_layer768_b8_s512_bf16")
for m in trainers:
    rows.append((m + "_step", f"{m}_step_fused_ms", f"{m}_step_unfused_ms", f"{m}_step_eager_ms",
                 f"{m}_step_compiled_ms"))
for name, f, u, pe, pc in rows:
    fv, uv, ev, cv = e.get(f), e.get(u), t.get(pe), t.get(pc)
    ng = e.get(f.replace("_fused_ms", "_fused_nographs_ms"))
    host = e.get(f.replace("_step_fused_ms", "_host_fused_ms")) if "_step_" in f else None
    se = ev / fv if fv and ev else None
    sc = cv / fv if fv and cv else None
    print(f"{name:38s} {fmt(fv):>9s} {fmt(ng):>9s} {fmt(uv):>9s} {fmt(host):>9s} {fmt(ev):>9s} "
          f"{fmt(cv):>9s} {fmt(se, 2):>9s} {fmt(sc, 2):>9s}")
    for peer, pv in (("torch eager", ev), ("torch.compile", cv)):
        if fv:
            records.append({"name": name, "backend": "cuda+fusion", "ember_ms": fv, "peer": peer,
                            "peer_ms": pv, "speedup": (pv / fv) if pv else None,
                            "ember_unfused_ms": uv, "ember_no_graphs_ms": ng,
                            "ember_host_ms": host})
print()
# cold/warm: the first step's extra time over a steady one (empty / filled kernel cache);
# +next: what steps 2 to 20 take beyond 19 steady ones (deferred tuning, graph captures).
print(f"{'JIT warm-up (s)':38s} {'cold':>9s} {'+next':>9s} {'warm':>9s} {'+next':>9s} "
      f"{'unfused':>9s} {'eager':>9s} {'compile':>9s}")
for m in trainers:
    k = f"{m}_warmup_fused_s"
    s = f"{m}_settle_fused_s"
    vals = (e.get(k), e.get(s), w.get(k), w.get(s), e.get(f"{m}_warmup_unfused_s"),
            t.get(f"{m}_warmup_eager_s"), t.get(f"{m}_warmup_compiled_s"))
    print(f"{m:38s} " + " ".join(f"{fmt(v, 3):>9s}" for v in vals))
    records.append({"name": m + "_warmup_s", "backend": "cuda+fusion", "cold_cache_s": vals[0],
                    "cold_cache_next_steps_s": vals[1], "warm_cache_s": vals[2],
                    "warm_cache_next_steps_s": vals[3], "torch_compile_s": vals[6]})
# Paid before the steps above: cuBLASLt's and cuDNN's loading (no kernel cache removes it).
lib = (e.get("init_libraries_s"), w.get("init_libraries_s"))
print(f"{'(before them: cuBLASLt, cuDNN loading)':38s} {fmt(lib[0], 3):>9s} {'':>9s} "
      f"{fmt(lib[1], 3):>9s}")
records.append({"name": "init_libraries_s", "backend": "cuda", "cold_cache_s": lib[0],
                "warm_cache_s": lib[1]})
print()
for k, v in e.items():
    if "memory" in k or k.startswith("kernels_") or k.endswith("GBps") or "per_call" in k:
        print(f"{k:52s} {v:12.3f}")
        records.append({"name": k, "backend": "cuda+fusion", "value": v})
json.dump(records, open(a.out, "w"), indent=1)
