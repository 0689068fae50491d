#!/usr/bin/env bash
# The x86-64 build's baseline (docs/cpu.md) on emulated CPUs (qemu-user): on a CPU below it
# (Nehalem: no AVX) a program stops at start-up with ember's message and status 70, not an
# illegal instruction; on a CPU at it without AVX-512 (Haswell) the vector math and the GEMM
# pass their tests on the paths such a CPU takes (the 8-bit GEMM declines there). Skips (77) without qemu-x86_64 or when the
# build is not for x86-64-v3.
#   baseline_qemu.sh BUILD_LEVEL CPU_VMATH_TEST CPU_GEMM_TEST
set -u
level=$1 vmath=$2 gemm=$3
if [ "$level" != x86-64-v3 ] || ! command -v qemu-x86_64 >/dev/null; then
  echo "baseline_qemu.sh: skipped (level '$level', qemu-x86_64: $(command -v qemu-x86_64 || echo none))"
  exit 77
fi
out=$(qemu-x86_64 -cpu Nehalem "$vmath" --gtest_list_tests 2>&1)
status=$?
if [ $status -ne 70 ] || ! grep -q "needs an x86-64-v3 CPU" <<<"$out"; then
  echo "on Nehalem: status $status, expected 70 and the baseline message; got:"
  echo "$out" | head -5
  exit 1
fi
echo "Nehalem: refused with status 70: $out"
qemu-x86_64 -cpu Haswell "$vmath" --gtest_brief=1 --gtest_filter='*Exp*' 2>&1 | grep -v 'TCG doesn' ; [ "${PIPESTATUS[0]}" -eq 0 ] || exit 1
qemu-x86_64 -cpu Haswell "$gemm" --gtest_brief=1 --gtest_filter='*F32*:CpuIsaLevels*:CpuGemmInt8*' 2>&1 | grep -v 'TCG doesn' ; [ "${PIPESTATUS[0]}" -eq 0 ] || exit 1
