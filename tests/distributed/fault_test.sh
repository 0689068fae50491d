#!/usr/bin/env bash
# A rank killed mid-run: the others must exit with an error naming it, within the group's
# timeout (EMBER_DIST_TIMEOUT), and ember-run must report it and fail.
#   fault_test.sh EMBER_RUN FAULT_CHECK         3 ranks, Gloo on the host
#   fault_test.sh EMBER_RUN FAULT_CHECK nccl    2 ranks on 2 GPUs, NCCL (exit 77 with fewer GPUs)
set -u
run=$1 check=$2 mode=${3:-}
out=$(mktemp)
if [ "$mode" = nccl ]; then
  start=$(date +%s%N)
  EMBER_DIST_TIMEOUT=5 FAULT_RANK=1 timeout 60 "$run" --nproc 2 --grace 30 -- "$check" nccl \
    >"$out" 2>&1
  status=$?
  elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
  cat "$out"
  if grep -q "skipped" "$out"; then rm -f "$out"; exit 77; fi
  echo "fault_test: NCCL: ember-run exited $status after ${elapsed} ms"
  fail=0
  [ $status -ne 0 ] && [ $status -ne 124 ] || { echo "fault_test: expected a failure status"; fail=1; }
  grep -q "rank 1 (pid [0-9]*) was killed by signal 9" "$out" ||
    { echo "fault_test: ember-run did not name the killed rank"; fail=1; }
  grep -q "^rank 0: \[all_reduce\] rank 0 of 2: lost rank 1" "$out" ||
    { echo "fault_test: rank 0 did not report losing rank 1"; fail=1; }
  [ "$elapsed" -lt 20000 ] || { echo "fault_test: took ${elapsed} ms"; fail=1; }
  rm -f "$out"
  exit $fail
fi
start=$(date +%s%N)
EMBER_DIST_TIMEOUT=5 FAULT_RANK=1 timeout 60 "$run" --nproc 3 --grace 30 -- "$check" >"$out" 2>&1
status=$?
elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
cat "$out"
echo "fault_test: ember-run exited $status after ${elapsed} ms"
fail=0
[ $status -ne 0 ] && [ $status -ne 124 ] || { echo "fault_test: expected a failure status" ; fail=1; }
grep -q "rank 1 (pid [0-9]*) was killed by signal 9" "$out" || { echo "fault_test: ember-run did not name the killed rank"; fail=1; }
for r in 0 2; do
  grep -q "^rank $r: \[all_reduce\] rank $r of 3: lost rank 1" "$out" ||
    { echo "fault_test: rank $r did not report losing rank 1"; fail=1; }
done
# The survivors end on their own within the timeout (plus start-up), long before the grace.
[ "$elapsed" -lt 20000 ] || { echo "fault_test: took ${elapsed} ms"; fail=1; }
grep -q "stopped in" "$out" && ! grep -q "finished without noticing" "$out" || fail=1
# A rank that stops answering (SIGSTOP): the others time out after EMBER_DIST_TIMEOUT (5 s) and
# ember-run ends the stopped one after the grace period.
start=$(date +%s%N)
EMBER_DIST_TIMEOUT=5 FAULT_RANK=2 FAULT_MODE=stop timeout 60 "$run" --nproc 3 --grace 1 -- \
  "$check" >"$out" 2>&1
status=$?
elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
cat "$out"
echo "fault_test: a stopped rank: ember-run exited $status after ${elapsed} ms"
[ $status -ne 0 ] && [ $status -ne 124 ] || { echo "fault_test: expected a failure status"; fail=1; }
# Both survivors fail; the first to time out says so (the other may see it gone by then).
for r in 0 1; do
  grep -q "^rank $r: \[all_reduce\] rank $r of 3: " "$out" ||
    { echo "fault_test: rank $r did not fail"; fail=1; }
done
grep -q "a peer did not answer within 5000 ms" "$out" || { echo "fault_test: no time-out"; fail=1; }
[ "$elapsed" -ge 4500 ] && [ "$elapsed" -lt 20000 ] || { echo "fault_test: took ${elapsed} ms"; fail=1; }
rm -f "$out"
exit $fail
