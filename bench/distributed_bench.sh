#!/usr/bin/env bash
# scripts/bench.sh distributed: data-parallel training and the all-reduce underneath it, in one
# run: on this host's GPUs where it has NVIDIA GPUs (below, "On GPUs"), on its CPUs otherwise
# (BENCH_DIST=cpu, gpu or all chooses).
#
# On CPUs:
#  - images/s of the main job's CNN (one epoch of Fashion-MNIST, from the Learner's timing of
#    the training epoch) on 1 process with every core, and on 2 processes under ember-run with
#    half the cores each (the global batch doubles: each rank keeps the batch size);
#  - tokens/s of a transformer layer (bench/dist_train_bench.cpp, d 256, f32) likewise;
#  - the all-reduce (sum) bandwidth of ember's process group (Gloo) on 2 ranks beside a raw
#    MPI_Allreduce of the same sizes (Open MPI), both over loopback.
# Writes bench/out/distributed.json and .txt. Environment: BENCH_THREADS (default nproc).
#
# On GPUs (bench/out/distributed_gpu.json and .txt): the main job's CNN for one epoch and a
# transformer encoder layer for 20 steps (bench/dist_train_bench.cpp: d 768, bf16, 8 x 512 tokens a
# rank) on 1, 2, 4 ... GPUs (powers of two up to BENCH_GPUS, default all), one rank a GPU under
# ember-run, gradients averaged through NCCL (and on 1 GPU with EMBER_GRAD_SYNC=nccl, the CNN's
# cost of that path alone), beside PyTorch DistributedDataParallel on the same GPUs
# (bench/peer_torch_ddp.py; PYTHON, default python3); then NCCL all-reduce of 1, 16 and 64 MiB on
# the most of them, through ember's NcclGroup and through torch.distributed (NCCL's own kernels
# under both).
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out
mkdir -p "$out"
threads=${BENCH_THREADS:-$(nproc)}
half=$(( threads > 1 ? threads / 2 : 1 ))
run=build/ember-run
gpus=${BENCH_GPUS:-$( (nvidia-smi -L 2>/dev/null || true) | grep -c '^GPU' || true)}
mode=${BENCH_DIST:-$([ "${gpus:-0}" -gt 0 ] && echo gpu || echo cpu)}

images() {  # images/s of the training epoch in a run folder's metrics.jsonl (rank 0's shard x ranks)
  /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1] + "/metrics.jsonl")]
s = [l["seconds"] for l in lines if l["split"] == "train"][0]
print(60000 // int(sys.argv[2]) * int(sys.argv[2]) / s)
PY
}


gpu_bench() {
  local py=${PYTHON:-python3} counts="" n=1 last=1 rate sizes
  while [ "$n" -le "$gpus" ]; do counts="$counts $n"; last=$n; n=$((n * 2)); done
  echo "bench.sh: GPUs: $gpus; the CNN's kernels compiled once (a warm-up epoch)" >&2
  rm -rf "$out/dist-gpu-warm"
  "$run" --nproc 1 -- build/examples/mnist train --model cnn --epochs 1 --plain --backend cuda \
    --out "$out/dist-gpu-warm" >"$out/dist-gpu-warm.log" 2>&1
  : >"$out/dist-gpu.ember.jsonl"
  : >"$out/dist-gpu.torch.jsonl"
  for n in $counts; do
    echo "bench.sh: the CNN on $n GPU(s): ember, then PyTorch DDP" >&2
    rm -rf "$out/dist-gpu-$n"
    "$run" --nproc "$n" -- build/examples/mnist train --model cnn --epochs 1 --plain \
      --backend cuda --out "$out/dist-gpu-$n" >"$out/dist-gpu-$n.log" 2>&1
    rate=$(images "$out/dist-gpu-$n" "$n")
    echo "{\"name\": \"cnn_fmnist_images_per_s\", \"gpus\": $n, \"value\": $rate}" \
      >>"$out/dist-gpu.ember.jsonl"
    "$run" --nproc "$n" -- build/bench/dist_train_bench >>"$out/dist-gpu.ember.jsonl" \
      2>"$out/dist-gpu-$n.transformer.log" || echo "bench.sh: the transformer failed on $n GPU(s)" >&2
    sizes=$([ "$n" -eq "$last" ] && echo 1,16,64 || echo "")
    "$py" bench/peer_torch_ddp.py --gpus "$n" --sizes-mib "$sizes" >>"$out/dist-gpu.torch.jsonl" \
      2>"$out/dist-gpu-$n.torch.log" || echo "bench.sh: the DDP peer failed on $n GPU(s)" >&2
  done
  echo "bench.sh: the CNN on 1 GPU with its gradients through NCCL (EMBER_GRAD_SYNC=nccl)" >&2
  rm -rf "$out/dist-gpu-1-nccl"
  EMBER_GRAD_SYNC=nccl "$run" --nproc 1 -- build/examples/mnist train --model cnn --epochs 1 \
    --plain --backend cuda --out "$out/dist-gpu-1-nccl" >"$out/dist-gpu-1-nccl.log" 2>&1
  local forced
  forced=$(images "$out/dist-gpu-1-nccl" 1)
  echo "bench.sh: NCCL all-reduce on $last GPU(s), ember" >&2
  "$run" --nproc "$last" -- build/bench/dist_allreduce_bench --nccl >>"$out/dist-gpu.ember.jsonl"
  /usr/bin/python3 - "$out" "$forced" <<'PY' | tee "$out/distributed_gpu.txt"
import json, sys
out, forced = sys.argv[1], float(sys.argv[2])
rows = lambda p: [json.loads(l) for l in open(p) if l.strip()]
e, t = rows(out + "/dist-gpu.ember.jsonl"), rows(out + "/dist-gpu.torch.jsonl")
# ember's and DDP's figure `name` per GPU count (the ranks' count under `key`)
per_gpus = lambda rs, name, key: {r[key]: r["value"] for r in rs if r["name"] == name}
ar = lambda rs: {r["name"]: r for r in rs if r["name"].startswith("allreduce")}
ea, ta = ar(e), ar(t)
nan = float("nan")
records = []
print(f"{'figure':34s} {'ember':>10s} {'PyTorch':>10s} {'ratio':>7s} {'ember eff.':>10s} {'torch eff.':>10s}")
for label, name, key in (("CNN images/s", "cnn_fmnist_images_per_s", "gpus"),
                         ("transformer tokens/s", "transformer_tokens_per_s", "ranks")):
    mine, peer = per_gpus(e, name, key), per_gpus(t, name, key)
    for n in sorted(mine):
        a, b = mine[n], peer.get(n, nan)
        fe, ft = a / (n * mine.get(1, nan)), b / (n * peer.get(1, nan))
        print(f"{label + ', %d GPU(s)' % n:34s} {a:10.0f} {b:10.0f} {a / b:7.2f} {fe:10.2f} {ft:10.2f}")
        records.append({"name": name + "_%dgpu" % n, "gpus": n, "ember": a, "peer": "pytorch_ddp",
                        "peer_value": b, "speedup": a / b, "scaling_efficiency": fe,
                        "peer_scaling_efficiency": ft})
ei = per_gpus(e, "cnn_fmnist_images_per_s", "gpus")
print(f"{'CNN images/s, 1 GPU, NCCL path':34s} {forced:10.0f} {'':10s} {forced / ei[1]:7.2f}  (of 1 GPU)")
records.append({"name": "cnn_fmnist_images_per_s_1gpu_nccl_forced", "ember": forced})
for name, r in ea.items():
    p = ta.get(name)
    print(f"{name + ' GB/s (%d GPUs)' % r['ranks']:34s} {r['GBps']:10.1f} "
          f"{p['GBps'] if p else nan:10.1f} {(p['ms'] / r['ms']) if p else nan:7.2f}")
    records.append({"name": name, "ranks": r["ranks"], "ember_ms": r["ms"], "ember_GBps": r["GBps"],
                    "peer": "torch.distributed (NCCL)", "peer_ms": p["ms"] if p else None,
                    "peer_GBps": p["GBps"] if p else None})
json.dump(records, open(out + "/distributed_gpu.json", "w"), indent=1)
PY
}

cpu_bench() {
rm -rf "$out/dist-1" "$out/dist-2"
echo "bench.sh: the CNN, 1 process x $threads threads" >&2
EMBER_NUM_THREADS=$threads build/examples/mnist train --model cnn --epochs 1 --plain --workers 1 \
  --out "$out/dist-1" >"$out/dist-1.log"
echo "bench.sh: the CNN, 2 processes x $half threads (ember-run)" >&2
EMBER_NUM_THREADS=$half "$run" --nproc 2 -- build/examples/mnist train --model cnn --epochs 1 \
  --plain --workers 1 --out "$out/dist-2" >"$out/dist-2.log" 2>&1
one=$(images "$out/dist-1" 1)
two=$(images "$out/dist-2" 2)
echo "bench.sh: a transformer layer (d 256, f32, 8 x 128 tokens a rank), 1 process, then 2" >&2
small=(--device cpu --dtype f32 --d 256 --heads 4 --ff 1024 --batch 8 --seq 128 --steps 20
  --warmup 3)
EMBER_NUM_THREADS=$threads "$run" --nproc 1 -- build/bench/dist_train_bench "${small[@]}" \
  >"$out/dist.transformer.jsonl" || echo "bench.sh: the transformer failed on 1 process" >&2
EMBER_NUM_THREADS=$half "$run" --nproc 2 -- build/bench/dist_train_bench "${small[@]}" \
  >>"$out/dist.transformer.jsonl" || echo "bench.sh: the transformer failed on 2 processes" >&2

echo "bench.sh: all-reduce, ember (Gloo) and MPI, 2 ranks" >&2
EMBER_NUM_THREADS=1 "$run" --nproc 2 -- build/bench/dist_allreduce_bench >"$out/dist.ember.jsonl"
: >"$out/dist.mpi.jsonl"
: >"$out/dist.mpi_tcp.jsonl"
if command -v mpicc >/dev/null && command -v mpirun >/dev/null; then
  mpicc -O2 bench/peer_mpi_allreduce.c -o build/peer_mpi_allreduce
  mpirun --oversubscribe --allow-run-as-root -np 2 build/peer_mpi_allreduce 1,16,64 20 \
    >"$out/dist.mpi.jsonl" 2>/dev/null || echo "bench.sh: the MPI peer failed" >&2
  # The same over TCP only (Gloo's transport): Open MPI's shared-memory path left out.
  mpirun --oversubscribe --allow-run-as-root --mca btl tcp,self -np 2 \
    build/peer_mpi_allreduce 1,16,64 20 >"$out/dist.mpi_tcp.jsonl" 2>/dev/null ||
    echo "bench.sh: the MPI peer over TCP failed" >&2
else
  echo "bench.sh: no Open MPI (scripts/setup.sh --bench installs it): no MPI column" >&2
fi
/usr/bin/python3 - "$out" "$one" "$two" <<'PY' | tee "$out/distributed.txt"
import json, sys
out, one, two = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
load = lambda p: {r["name"]: r for r in map(json.loads, open(p)) if r}
e, m = load(out + "/dist.ember.jsonl"), load(out + "/dist.mpi.jsonl")
mt = load(out + "/dist.mpi_tcp.jsonl")
records = [{"name": "cnn_fmnist_images_per_s_1proc", "backend": "cpu", "value": one},
           {"name": "cnn_fmnist_images_per_s_2proc", "backend": "cpu+gloo", "value": two,
            "scaling": two / one}]
print(f"{'figure':32s} {'ember':>10s} {'MPI':>10s} {'ratio':>7s} {'MPI tcp':>10s} {'ratio':>7s}")
print(f"{'CNN images/s, 1 process':32s} {one:10.0f}")
print(f"{'CNN images/s, 2 processes':32s} {two:10.0f} {'':10s} {two / one:7.2f}  (of 1 process)")
tr = {r["ranks"]: r["value"] for r in map(json.loads, open(out + "/dist.transformer.jsonl")) if r}
for n in sorted(tr):
    of_one = tr[n] / tr.get(1, float("nan"))
    print(f"{'transformer tokens/s, %d proc.' % n:32s} {tr[n]:10.0f} {'':10s} "
          f"{of_one:7.2f}  (of 1 process)")
    records.append({"name": "transformer_tokens_per_s_%dproc" % n, "backend": "cpu", "value": tr[n],
                    "scaling": of_one})
for name, r in e.items():
    p, pt = m.get(name), mt.get(name)
    ratio = r["ms"] and p and p["ms"] / r["ms"]
    rt = r["ms"] and pt and pt["ms"] / r["ms"]
    nan = float("nan")
    print(f"{name + ' GB/s':32s} {r['GBps']:10.2f} {p['GBps'] if p else nan:10.2f} "
          f"{ratio or nan:7.2f} {pt['GBps'] if pt else nan:10.2f} {rt or nan:7.2f}")
    records.append({"name": name, "backend": "cpu+gloo", "ember_ms": r["ms"], "peer": "MPI_Allreduce",
                    "peer_ms": p["ms"] if p else None, "speedup": ratio or None,
                    "ember_GBps": r["GBps"], "peer_GBps": p["GBps"] if p else None,
                    "mpi_tcp_ms": pt["ms"] if pt else None})
json.dump(records, open(out + "/distributed.json", "w"), indent=1)
PY
}

case "$mode" in
  cpu) cpu_bench ;;
  gpu) gpu_bench ;;
  all) cpu_bench; gpu_bench ;;
  *) echo "bench.sh: BENCH_DIST is cpu, gpu or all" >&2; exit 2 ;;
esac
