#!/usr/bin/env python3
"""Runs ember's ONNX runtime on the ONNX backend node tests and writes the results down.

    tools/onnx_conformance.py [--tool build/tools/ember-onnx/ember-onnx] [--tests DIR]
                              [--update] [--check]

Writes the operator table of docs/onnx.md (between its `ops:begin` / `ops:end` markers):
every operator the runtime implements or the suite uses, and per operator how many of the
tests that use it pass. --update also rewrites tests/onnx/node_expected_pass.txt (the tests
the onnx_node_suite ctest requires to pass). --check exits 1 when docs/onnx.md is not what
this run would write.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "docs", "onnx.md")
EXPECTED = os.path.join(ROOT, "tests", "onnx", "node_expected_pass.txt")
SUBSET = os.path.join(ROOT, "tests", "onnx", "codegen_subset.txt")
# The last full generated-code pass (scripts/onnx_codegen.sh): "name PASS|FAIL|SKIP" lines.
CODEGEN = os.path.join(ROOT, "tests", "onnx", "codegen_results.txt")
# Operators of subgraphs and sequences, which run on the runtime path only.
RUNTIME_ONLY = {"If", "Loop", "Scan", "SequenceMap", "SequenceEmpty", "SequenceConstruct",
                "SequenceInsert", "SequenceAt", "SequenceErase", "SequenceLength",
                "SplitToSequence", "ConcatFromSequence", "Optional", "OptionalHasElement",
                "OptionalGetElement"}
BEGIN, END = "<!-- ops:begin -->", "<!-- ops:end -->"


def run(tool, tests):
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        subprocess.run([tool, "test", tests, "--report", report], stdout=subprocess.DEVNULL,
                       check=False)
        with open(report) as f:
            results = json.load(f)
    ops = subprocess.run([tool, "ops"], capture_output=True, text=True, check=True).stdout.split()
    return results, ops


def load_codegen():
    if not os.path.exists(CODEGEN):
        return {}
    out = {}
    for line in open(CODEGEN):
        if line.strip() and not line.startswith("#"):
            name, status = line.split()
            out[name] = status
    return out


def table(results, supported):
    per_op = defaultdict(lambda: [0, 0])
    gen = load_codegen()
    per_op_gen = defaultdict(int)
    for r in results:
        for op in r["ops"]:
            per_op[op][1] += 1
            if r["status"] == "PASS":
                per_op[op][0] += 1
            if gen.get(r["name"]) == "PASS":
                per_op_gen[op] += 1
    names = sorted(set(per_op) | {o.split(".")[-1] if o.startswith("ai.onnx.preview") else o
                                  for o in supported}, key=str.lower)
    counts = {s: sum(1 for r in results if r["status"] == s) for s in ("PASS", "FAIL", "SKIP")}
    lines = [BEGIN,
             f"On the {len(results)} tests of the ONNX backend node suite (libonnx-testdata 1.12), "
             f"CPU: **{counts['PASS']} passed, {counts['FAIL']} failed, {counts['SKIP']} skipped** "
             "(skipped: the model uses something ember does not run; the reasons are printed by "
             "`ember-onnx test`). Runtime implementations: "
             f"{len(supported)} operators.",
             "",
             ]
    if gen:
        g = sum(1 for v in gen.values() if v == "PASS")
        lines.append(f"Generated code (`scripts/onnx_codegen.sh`, every node test): **{g} passed**, "
                     f"{sum(1 for v in gen.values() if v == 'FAIL')} failed, "
                     f"{sum(1 for v in gen.values() if v == 'SKIP')} not generated "
                     "(subgraphs, sequences, functions, or not supported by the runtime).")
        lines.append("")
    lines += ["| operator | runtime | node tests passed (runtime) | (generated code) |",
              "|---|---|---|---|"]
    short = {o.split(".")[-1] for o in supported}
    for n in names:
        ok = "yes" if n in short else "no"
        p, t = per_op.get(n, (0, 0))
        gp = f"{per_op_gen.get(n, 0)} / {t}" if t and gen else "—"
        lines.append(f"| {n} | {ok} | {f'{p} / {t}' if t else '—'} | {gp} |")
    lines.append(END)
    return "\n".join(lines)


def write_subset(results):
    """One passing node test per operator (plain before _expanded), for CI's codegen build."""
    passing = sorted((r for r in results if r["status"] == "PASS"),
                     key=lambda r: ("_expanded" in r["name"], r["name"]))
    chosen = {}
    for r in passing:
        if RUNTIME_ONLY & set(r["ops"]):
            continue
        for op in r["ops"]:
            chosen.setdefault(op, r["name"])
    with open(SUBSET, "w") as f:
        f.write("# One ONNX node test per operator whose generated code CI compiles and runs\n"
                "# (onnx_codegen_test). Written by tools/onnx_conformance.py --update.\n")
        for name in sorted(set(chosen.values())):
            f.write(name + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", default=os.path.join(ROOT, "build", "tools", "ember-onnx", "ember-onnx"))
    ap.add_argument("--tests", default="/usr/share/libonnx-testdata/data/node")
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--codegen-report", help="onnx_codegen_all_test's report: store it")
    ap.add_argument("--codegen-skipped", help="import-suite's log: its SKIP lines")
    a = ap.parse_args()
    if a.codegen_report:
        status = {}
        for line in open(a.codegen_report):
            name, st = line.split()
            status[name] = st
        if a.codegen_skipped:
            for line in open(a.codegen_skipped):
                if line.startswith("SKIP "):
                    status[line[5:].split(":")[0]] = "SKIP"
        with open(CODEGEN, "w") as f:
            f.write("# The generated-code pass over the node tests (scripts/onnx_codegen.sh).\n")
            for name in sorted(status):
                if name.startswith("test_"):
                    f.write(f"{name} {status[name]}\n")
    results, supported = run(a.tool, a.tests)
    text = open(DOC).read()
    if BEGIN not in text or END not in text:
        sys.exit(f"{DOC} lacks the {BEGIN} / {END} markers")
    new = text[:text.index(BEGIN)] + table(results, supported) + text[text.index(END) + len(END):]
    if a.check:
        if new != text:
            print("docs/onnx.md is not current: run tools/onnx_conformance.py", file=sys.stderr)
            return 1
        return 0
    with open(DOC, "w") as f:
        f.write(new)
    if a.update:
        write_subset(results)
        with open(EXPECTED) as f:
            header = [line for line in f if line.startswith("#")]
        with open(EXPECTED, "w") as f:
            f.writelines(header)
            for r in sorted(results, key=lambda r: r["name"]):
                if r["status"] == "PASS":
                    f.write(r["name"] + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
