#!/usr/bin/env bash
# scripts/bench.sh distributed: data-parallel training on this host's CPUs and the all-reduce
# underneath it, in one run.
#  - images/s of the main job's CNN (one epoch of Fashion-MNIST, from the Learner's timing of
#    the training epoch) on 1 process with every core, and on 2 processes under ember-run with
#    half the cores each (the global batch doubles: each rank keeps the batch size);
#  - the all-reduce (sum) bandwidth of ember's process group (Gloo) on 2 ranks beside a raw
#    MPI_Allreduce of the same sizes (Open MPI), both over loopback.
# Writes bench/out/distributed.json and .txt. Environment: BENCH_THREADS (default nproc).
set -euo pipefail
cd "$(dirname "$0")/.."
out=bench/out
mkdir -p "$out"
threads=${BENCH_THREADS:-$(nproc)}
half=$(( threads > 1 ? threads / 2 : 1 ))
run=build/ember-run

images() {  # images/s of the training epoch in a run folder's metrics.jsonl (rank 0's shard x ranks)
  /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1] + "/metrics.jsonl")]
s = [l["seconds"] for l in lines if l["split"] == "train"][0]
print(60000 // int(sys.argv[2]) * int(sys.argv[2]) / s)
PY
}

rm -rf "$out/dist-1" "$out/dist-2"
echo "bench.sh: the CNN, 1 process x $threads threads" >&2
EMBER_NUM_THREADS=$threads build/examples/mnist train --model cnn --epochs 1 --plain --workers 1 \
  --out "$out/dist-1" >"$out/dist-1.log"
echo "bench.sh: the CNN, 2 processes x $half threads (ember-run)" >&2
EMBER_NUM_THREADS=$half "$run" --nproc 2 -- build/examples/mnist train --model cnn --epochs 1 \
  --plain --workers 1 --out "$out/dist-2" >"$out/dist-2.log" 2>&1
one=$(images "$out/dist-1" 1)
two=$(images "$out/dist-2" 2)

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
