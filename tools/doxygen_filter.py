#!/usr/bin/env python3
"""Doxygen input filter for ember/tensor/tensor.h: replaces each `#include` of a tensor_*.inc
file (method families included inside class Tensor) by the file's text, so the reference
lists every method of Tensor. Line counts change; Doxygen's line numbers for tensor.h are
off, nothing else is."""
import pathlib
import re
import sys

path = pathlib.Path(sys.argv[1])
for line in path.read_text().split("\n"):
    m = re.match(r'^\s*#include "(ember/tensor/tensor_\w+\.inc)"', line)
    if m:
        sys.stdout.write((pathlib.Path(m.group(1))).read_text())
    else:
        sys.stdout.write(line + "\n")
