#!/usr/bin/env bash
# `scripts/bench.sh build`: build-time and footprint figures, with ccache off so that no cache
# hides the work. For each configuration (BENCH_BUILD_CONFIGS, default "Release Debug"), in a
# fresh build folder under bench/out/:
#   cold build of the libraries, then of everything (skipped with BENCH_BUILD_COLD=0: the
#     folder is then built once untimed, and kept between runs),
#   the rebuild of the main job after a real edit of its model (a layer width),
#   the compile + link of a small user program (bench/buildtime/user_train.cpp),
#   the stripped sizes of the main job's binary and of a minimal inference binary, linked as
#     any program is and in its lean form for deployment (build_infer_min_lean).
# Each time is recorded as wall seconds and as CPU seconds (user + system, all processes).
# Writes bench/out/build.json (records as in docs/benchmarks.md; the peer is the target) and
# prints a table. Run from the repository root by scripts/bench.sh.
set -euo pipefail
out=bench/out
mkdir -p "$out"
configs=${BENCH_BUILD_CONFIGS:-Release Debug}
cold=${BENCH_BUILD_COLD:-1}
jobs=${BENCH_BUILD_JOBS:-$(nproc)}
export CCACHE_DISABLE=1
model=examples/mnist/mlp.h  # the MLP: a layer width is edited, then the main job rebuilt
records="$out/build.records"
: >"$records"
echo "bench.sh build: load average $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores" >&2

now() { date +%s.%N; }
# record NAME SECONDS TARGET_SECONDS|- [UNIT]
record() {
  echo "$1|$2|$3|${4:-s}" >>"$records"
  printf 'bench.sh build: %-48s %10.2f %s\n' "$1" "$2" "${4:-s}" >&2
}
# timed NAME TARGET command...: runs the command, records its wall time and, as "NAME, CPU",
# the user + system seconds of its processes (what a busy machine changes least).
timed() {
  local name=$1 target=$2
  shift 2
  local t0 cpu
  t0=$(now)
  /usr/bin/time -f "%U %S" -o "$out/time.txt" "$@" >/dev/null
  record "$name" "$(awk -v a="$(now)" -v b="$t0" 'BEGIN { print a - b }')" "$target"
  cpu=$(awk '{ print $1 + $2 }' "$out/time.txt")
  record "$name, CPU" "$cpu" -
}

restore_model() {
  if [ -f "$out/model.h.orig" ]; then cp "$out/model.h.orig" "$model" && rm -f "$out/model.h.orig"; fi
}
trap restore_model EXIT

for cfg in $configs; do
  dir="$out/build-$(echo "$cfg" | tr '[:upper:]' '[:lower:]')"
  if [ "$cold" = 1 ]; then rm -rf "$dir"; fi
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE="$cfg" -DEMBER_BUILD_TESTS=ON \
    -DEMBER_BUILD_BENCH=ON -DEMBER_BUILD_EXAMPLES=ON >/dev/null
  libs=$(cmake --build "$dir" --target help | sed -n 's/^\(ember[a-z_]*\): .*/\1/p' |
    grep -v -e '^ember_curses$' | tr '\n' ' ')
  if [ "$cold" = 1 ]; then
    # shellcheck disable=SC2086
    timed "cold build: libraries ($cfg)" - cmake --build "$dir" -j "$jobs" --target $libs
    timed "cold build: everything ($cfg)" - cmake --build "$dir" -j "$jobs"
  else
    cmake --build "$dir" -j "$jobs" >/dev/null
  fi

  # A real model edit: the hidden width of the MLP.
  cp "$model" "$out/model.h.orig"
  sed -i -e 's/LinearConfig{784, 256}/LinearConfig{784, 255}/' \
    -e 's/LinearConfig{256, 10}/LinearConfig{255, 10}/' "$model"
  cmp -s "$model" "$out/model.h.orig" && { echo "build_bench: the model edit did not apply" >&2; exit 1; }
  timed "rebuild after a model edit ($cfg)" 5 cmake --build "$dir" -j "$jobs" --target mnist
  restore_model
  cmake --build "$dir" -j "$jobs" --target mnist >/dev/null

  touch bench/buildtime/user_train.cpp
  timed "small user program: compile + link ($cfg)" 5 \
    cmake --build "$dir" -j "$jobs" --target build_user_train
  "$dir/bench/build_user_train" >/dev/null || { echo "build_bench: user program failed" >&2; exit 1; }

  # build_infer_min links as any program does (every CPU kernel, the GPU backends);
  # build_infer_min_lean is the same program for deployment (EMBER_CPU_ONLY, its own CPU
  # kernel table: docs/install.md), the binary the 2 MiB target is for.
  for bin in examples/mnist bench/build_infer_min bench/build_infer_min_lean; do
    strip -o "$out/stripped.bin" "$dir/$bin"
    mib=$(awk -v b="$(stat -c %s "$out/stripped.bin")" 'BEGIN { print b / 1048576 }')
    target=-
    # Debug links whole objects (no --gc-sections): the target is a release figure.
    [ "$bin" = bench/build_infer_min_lean ] && [ "$cfg" != Debug ] && target=2
    record "stripped size: $(basename "$bin") ($cfg)" "$mib" "$target" MiB
  done
  rm -f "$out/stripped.bin"
done

/usr/bin/python3 - "$records" "$out/build.json" <<'EOF'
import json, sys
rows = []
for line in open(sys.argv[1]):
    name, value, target, unit = line.rstrip("\n").split("|")
    value = float(value)
    rec = {"name": name, "backend": "build", "unit": unit}
    key = "ember_ms" if unit == "s" else "ember_mib"
    rec[key] = value * 1000 if unit == "s" else value
    if target != "-":
        t = float(target)
        rec.update({"peer": "target", "peer_ms" if unit == "s" else "peer_mib":
                    t * 1000 if unit == "s" else t, "speedup": t / value if value else None})
    rows.append(rec)
json.dump(rows, open(sys.argv[2], "w"), indent=1)
print(f"| {'figure':<48} | {'ember':>10} | {'target':>8} | {'ratio':>6} |")
print(f"|{'-'*50}|{'-'*12}|{'-'*10}|{'-'*8}|")
for r in rows:
    u = r["unit"]
    v = r.get("ember_ms", 0) / 1000 if u == "s" else r["ember_mib"]
    t = r.get("peer_ms", 0) / 1000 if u == "s" else r.get("peer_mib")
    ts = f"{t:.2f} {u}" if "peer" in r else "-"
    ratio = f"{r['speedup']:.2f}" if r.get("speedup") else "-"
    print(f"| {r['name']:<48} | {v:8.2f} {u:<1} | {ts:>8} | {ratio:>6} |")
EOF
rm -f "$records" "$out/time.txt"
echo "bench.sh: wrote $out/build.json" >&2
