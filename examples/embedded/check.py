#!/usr/bin/env python3
"""Builds the embedded examples for each board, runs them under QEMU and checks their outputs
against the host CPU backend's on the same inputs (the ctest entry `embedded_qemu`).

  examples/embedded/check.py --host-build build --work build/embedded [--boards B ...]

1. Host: trains the main job's MLP and CNN for one epoch (`mnist train`), writes the first
   test images and the host logits of each (`embedded_reference classifier`), trains the sine
   regressor and writes its probes and outputs (`embedded_reference sine`).
2. Converts the records and inputs to flash arrays (tools/micro_weights.py); the MLP also with
   int8 Linear weights, whose dequantized values the host runs for its logits.
3. Per board: configures and builds the freestanding tree (cmake/arm-none-eabi.cmake).
4. Runs every ELF under `qemu-system-arm -icount shift=0` with semihosting and compares: the
   same class for every image, logits, sine and layers outputs within tolerance, the error
   handler's out-of-memory report, no malloc, exception or RTTI support linked, the weights
   in flash. Prints the sizes table (flash, arena and stack high-water, instructions per
   inference) and writes it as JSON.

Exits 77 (skipped) when the cross compiler, QEMU or the Fashion-MNIST data are missing.
"""
import argparse
import json
import os
import re
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import micro_weights  # noqa: E402

BOARDS = {"mps2-an386": "Cortex-M4F", "lm3s6965evb": "Cortex-M3", "mps2-an385": "Cortex-M3"}
RAM_ORIGIN = 0x20000000
N_IMAGES = 8
N_SINE = 16
RTOL, ATOL = 1e-4, 1e-4  # float sums in another order (the host's blocked GEMM, FMA)


class CheckError(Exception):
    pass


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        raise CheckError(f"{' '.join(cmd)} exited {r.returncode}:\n{r.stdout[-3000:]}{r.stderr[-3000:]}")
    return r.stdout


def tensors(path):
    return {name: (shape, values) for name, _, shape, values in micro_weights.read_safetensors(path)}


def convert(src, dst, namespace):
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    run([sys.executable, os.path.join(ROOT, "tools", "micro_weights.py"), src, dst,
         "--namespace", namespace])


def prepare_host(host_build, work):
    mnist = os.path.join(host_build, "examples", "mnist")
    reference = os.path.join(host_build, "examples", "embedded_reference")
    gen = os.path.join(work, "gen")
    expected = {}
    for model in ("mlp", "cnn"):
        out = os.path.join(work, "runs", model)
        shutil.rmtree(out, ignore_errors=True)
        run([mnist, "train", "--model", model, "--epochs", "1", "--plain", "--out", out])
        record = os.path.join(out, "model.safetensors")
        ref = os.path.join(work, "ref", model)
        run([reference, "classifier", record, str(N_IMAGES), ref])
        convert(record, os.path.join(gen, model, "classifier_weights.h"), "classifier_weights")
        convert(os.path.join(ref, "inputs.safetensors"),
                os.path.join(gen, model, "classifier_inputs.h"), "classifier_inputs")
        expected[model] = tensors(os.path.join(ref, "expected.safetensors"))["logits"]
    # The MLP again with int8 Linear weights (a quarter of the flash: it fits lm3s6965evb); the
    # host computes with the same dequantized weights.
    deq = os.path.join(work, "runs", "mlp_q8.safetensors")
    run([sys.executable, os.path.join(ROOT, "tools", "micro_weights.py"),
         os.path.join(work, "runs", "mlp", "model.safetensors"),
         os.path.join(gen, "mlp_q8", "classifier_weights.h"), "--namespace", "classifier_weights",
         "--int8", r"\.weight$", "--dequantized", deq])
    shutil.copy(os.path.join(gen, "mlp", "classifier_inputs.h"), os.path.join(gen, "mlp_q8"))
    ref = os.path.join(work, "ref", "mlp_q8")
    run([reference, "classifier", deq, str(N_IMAGES), ref])
    expected["mlp_q8"] = tensors(os.path.join(ref, "expected.safetensors"))["logits"]
    ref = os.path.join(work, "ref", "sine")
    print(run([reference, "sine", str(N_SINE), ref]).strip())
    convert(os.path.join(ref, "weights.safetensors"), os.path.join(gen, "sine", "sine_weights.h"),
            "sine_weights")
    convert(os.path.join(ref, "inputs.safetensors"), os.path.join(gen, "sine", "sine_inputs.h"),
            "sine_inputs")
    expected["sine"] = tensors(os.path.join(ref, "expected.safetensors"))["y"]
    ref = os.path.join(work, "ref", "layers")
    print(run([reference, "layers", ref]).strip())
    convert(os.path.join(ref, "weights.safetensors"),
            os.path.join(gen, "layers", "layers_weights.h"), "layers_weights")
    convert(os.path.join(ref, "inputs.safetensors"), os.path.join(gen, "layers", "layers_inputs.h"),
            "layers_inputs")
    expected["layers"] = tensors(os.path.join(ref, "expected.safetensors"))
    return gen, expected


def build_board(board, gen, work):
    tree = os.path.join(work, board)
    # --fresh: the toolchain file's flags apply again after an edit (they seed the cache).
    run(["cmake", "--fresh", "-S", ROOT, "-B", tree, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
         f"-DCMAKE_TOOLCHAIN_FILE={ROOT}/cmake/arm-none-eabi.cmake",
         f"-DEMBER_MICRO_BOARD={board}", f"-DEMBER_MICRO_GEN_DIR={gen}"])
    run(["cmake", "--build", tree, "-j2"])
    elfs = {}
    for name in ("classifier_mlp", "classifier_mlp_q8", "classifier_cnn", "sine", "layers"):
        path = os.path.join(tree, "examples", "embedded", name + ".elf")
        if os.path.exists(path):
            elfs[name] = path
    return elfs


def qemu(board, elf):
    r = subprocess.run(["timeout", "300", "qemu-system-arm", "-M", board, "-nographic",
                        "-icount", "shift=0", "-semihosting-config", "enable=on,target=native",
                        "-kernel", elf], capture_output=True, text=True)
    out = r.stdout + r.stderr  # semihosting writes to QEMU's stderr
    if r.returncode != 0 or "done" not in [l.strip() for l in out.splitlines()]:
        raise CheckError(f"{board} {os.path.basename(elf)}: exit {r.returncode}\n{out}")
    return out


def bits_to_floats(words):
    return [struct.unpack("<f", struct.pack("<I", int(w, 16)))[0] for w in words]


def rows(out, label):
    got = {}
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0] == label:
            got[int(parts[1])] = parts[2:]
    return got


def close(a, b):
    return abs(a - b) <= ATOL + RTOL * abs(b)


def check_classifier(tag, out, expected):
    shape, values = expected
    n, k = shape
    logits = {i: bits_to_floats(w) for i, w in rows(out, "logits").items()}
    classes = {i: int(w[0]) for i, w in rows(out, "class").items()}
    if sorted(logits) != list(range(n)):
        raise CheckError(f"{tag}: logits of images {sorted(logits)}, expected 0..{n - 1}")
    worst = 0.0
    for i in range(n):
        host = values[i * k:(i + 1) * k]
        host_class = max(range(k), key=lambda c: host[c])
        if classes.get(i) != host_class:
            raise CheckError(f"{tag}: image {i} is class {classes.get(i)} here, {host_class} on the host")
        for a, b in zip(logits[i], host):
            worst = max(worst, abs(a - b))
            if not close(a, b):
                raise CheckError(f"{tag}: image {i} logit {a} here, {b} on the host")
    return worst


def check_sine(tag, out, expected):
    shape, host = expected
    batch = bits_to_floats(rows(out, "y")[0])
    single = {i: bits_to_floats(w)[0] for i, w in rows(out, "y1").items()}
    if len(batch) != shape[0] or sorted(single) != list(range(shape[0])):
        raise CheckError(f"{tag}: {len(batch)} batch outputs and {len(single)} single ones, expected {shape[0]}")
    worst = 0.0
    for i, b in enumerate(host):
        for a in (batch[i], single[i]):
            worst = max(worst, abs(a - b))
            if not close(a, b):
                raise CheckError(f"{tag}: probe {i} gives {a} here, {b} on the host")
    if not re.search(r"^error: \[full\] out of memory: \d+ bytes wanted", out, re.M):
        raise CheckError(f"{tag}: no out-of-memory report through the error handler:\n{out}")
    if "recovered:" not in out:
        raise CheckError(f"{tag}: the program did not continue after the handler")
    return worst


def check_layers(tag, out, expected):
    worst = 0.0
    for name in ("seq", "conv", "emb"):
        shape, host = expected[name]
        got = bits_to_floats(rows(out, name).get(0, []))
        if len(got) != len(host):
            raise CheckError(f"{tag}: {len(got)} {name} outputs, expected {len(host)}")
        for i, (a, b) in enumerate(zip(got, host)):
            worst = max(worst, abs(a - b))
            if not close(a, b):
                raise CheckError(f"{tag}: {name} output {i} is {a} here, {b} on the host")
    return worst


def check_binary(tag, elf):
    symbols = run(["arm-none-eabi-nm", "-C", elf])
    if re.search(r"\b(malloc|_malloc_r|free)\b", symbols):
        raise CheckError(f"{tag}: malloc or free is linked")
    # No exception machinery and no RTTI: nothing that throws, unwinds or names a type.
    if re.search(r"__cxa_throw|__gxx_personality|_Unwind_RaiseException|typeinfo for", symbols):
        raise CheckError(f"{tag}: exception or RTTI support is linked")
    # objdump -t: address, flags, section, size, name; the weights must be in a flash section.
    weights = [l.split() for l in run(["arm-none-eabi-objdump", "-t", "-C", elf]).splitlines()
               if "_weights::" in l]
    if not weights:
        raise CheckError(f"{tag}: no weight arrays found")
    for w in weights:
        addr, section = int(w[0], 16), w[-3]
        if addr >= RAM_ORIGIN or section not in (".text", ".rodata"):
            raise CheckError(f"{tag}: {' '.join(w)} is not in flash")


def sizes(elf):
    flash = static_ram = arena = 0
    for line in run(["arm-none-eabi-size", "-A", elf]).splitlines()[2:]:
        parts = line.split()
        if len(parts) != 3 or not parts[1].isdigit():
            continue
        name, size, addr = parts[0], int(parts[1]), int(parts[2])
        if name.startswith((".ARM.attributes", ".comment", ".debug", ".stack", ".heap", ".tbss_space")):
            continue
        if addr < RAM_ORIGIN:
            flash += size
        else:
            static_ram += size
            if name == ".data":
                flash += size  # its initial values are copied from flash
    for line in run(["arm-none-eabi-nm", "-S", "-C", elf]).splitlines():
        if "g_builtin" in line:
            arena = int(line.split()[1], 16)
    return flash, static_ram, arena


def report(work, results):
    print("\n| board | model | flash (B) | arena high-water (B) | stack high-water (B) | "
          "other static RAM (B) | peak RAM (B) | instructions / inference |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['board']} ({r['cpu']}) | {r['model']} | {r['flash']} | {r['arena_high_water']} | "
              f"{r['stack_high_water']} | {r['other_static_ram']} | {r['peak_ram']} | {r['instructions']} |")
    with open(os.path.join(work, "embedded.json"), "w") as f:
        json.dump(results, f, indent=2)


def main():
    p = argparse.ArgumentParser(description="Builds and runs the embedded examples under QEMU.")
    p.add_argument("--host-build", required=True, help="the host build tree (mnist, embedded_reference)")
    p.add_argument("--work", required=True, help="a folder for the runs, headers and board builds")
    p.add_argument("--boards", nargs="*", default=list(BOARDS))
    a = p.parse_args()
    missing = [t for t in ("arm-none-eabi-g++", "qemu-system-arm", "cmake", "ninja")
               if shutil.which(t) is None]
    if missing:
        print(f"skipped: {', '.join(missing)} not found (scripts/setup.sh installs them)")
        return 77
    data = os.environ.get("EMBER_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
    if not os.path.isdir(data):
        print(f"skipped: no Fashion-MNIST in {data}")
        return 77
    try:
        os.makedirs(a.work, exist_ok=True)
        gen, expected = prepare_host(os.path.abspath(a.host_build), os.path.abspath(a.work))
        results, checked = [], 0
        for board in a.boards:
            for name, elf in build_board(board, gen, os.path.abspath(a.work)).items():
                tag = f"{board} {name}"
                check_binary(tag, elf)
                out = qemu(board, elf)
                model = name.replace("classifier_", "")
                check = {"sine": check_sine, "layers": check_layers}.get(model, check_classifier)
                worst = check(tag, out, expected[model])
                insns = [int(w[0]) for w in rows(out, "instructions").values()]
                arena_hw = int(re.search(r"^arena \d+ high_water (\d+)", out, re.M).group(1))
                stack_hw = int(re.search(r"^stack_high_water (\d+)", out, re.M).group(1))
                flash, static_ram, arena = sizes(elf)
                other = static_ram - arena
                results.append({"board": board, "cpu": BOARDS.get(board, "?"), "model": model,
                                "flash": flash, "arena_high_water": arena_hw,
                                "stack_high_water": stack_hw, "other_static_ram": other,
                                "peak_ram": arena_hw + stack_hw + other,
                                "instructions": max(insns), "max_abs_diff": worst})
                print(f"ok: {tag}: matches the host (max |diff| {worst:.3g}), "
                      f"{max(insns)} instructions per inference")
                checked += 1
        if checked == 0:
            raise CheckError("no example was built")
        report(a.work, results)
        print(f"\n{checked} passed, 0 failed")
        return 0
    except CheckError as e:
        print(f"FAILED: {e}")
        return 1


if __name__ == "__main__":
    sys.exit(main())
