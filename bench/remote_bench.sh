#!/usr/bin/env bash
# The Remote backend's benchmark (scripts/bench.sh remote builds remote_bench and ember-server
# and runs this): remote_bench's table (server in the same process, raw asio on the same
# loopback as the peer of the transfers), then 16 clients x 10,000 ops against an ember-server
# process, whose resident memory is read before, right after and 2 s after the clients leave.
set -euo pipefail
out=${BENCH_OUT:-bench/out}
reps=${BENCH_REPS:-7}
mkdir -p "$out"
build/bench/remote_bench --reps "$reps" --out "$out/remote.json" | tee "$out/remote.txt"

dir=$(mktemp -d)
od -An -N16 -tx1 /dev/urandom | tr -d ' \n' > "$dir/token"
build/tools/ember-server/ember-server --listen 127.0.0.1:0 --port-file "$dir/port" \
  --token-file "$dir/token" --threads 2 > "$dir/log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.1; done
rss() { awk '/VmRSS/ { print $2 / 1024 " MiB" }' "/proc/$pid/status"; }
before=$(rss)
EMBER_REMOTE_TOKEN=$(cat "$dir/token") build/bench/remote_bench \
  --endpoint "127.0.0.1:$(cat "$dir/port")" --load 10000 | tee -a "$out/remote.txt"
after=$(rss)
sleep 2
later=$(rss)
echo "ember-server memory: $before before, $after after the clients left, $later 2 s later" |
  tee -a "$out/remote.txt"
kill -TERM $pid
wait $pid || true
tail -1 "$dir/log" | tee -a "$out/remote.txt"
echo "bench.sh: wrote $out/remote.json and $out/remote.txt" >&2
