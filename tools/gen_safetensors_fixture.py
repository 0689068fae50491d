#!/usr/bin/env python3
"""Writes tests/record/fixture.safetensors by hand from the safetensors specification (no
safetensors library): an independent file for ember's reader to load.

    python3 tools/gen_safetensors_fixture.py
"""
import json
import os
import struct

tensors = [  # name, dtype, shape, struct format, values
    ("embed.weight", "F32", [2, 3], "<6f", [0.5, -1.25, 3.0, 1e-3, -0.0, 65504.0]),
    ("layer.0.bias", "F64", [3], "<3d", [1.0 / 3.0, -2.5, 1e300]),
    ("steps", "I64", [], "<q", [-(2 ** 62)]),
    ("mask", "BOOL", [4], "<4B", [1, 0, 0, 1]),
    ("half", "F16", [2], "<2H", [0x3C00, 0xC000]),  # 1.0, -2.0
    ("empty", "F32", [0, 4], "", []),
]
header, blobs, offset = {}, [], 0
for name, dtype, shape, fmt, values in tensors:
    blob = struct.pack(fmt, *values) if fmt else b""
    header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
    blobs.append(blob)
    offset += len(blob)
header["__metadata__"] = {"format": "pt", "note": "written by hand"}
text = json.dumps(header).encode()
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "record",
                    "fixture.safetensors")
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
print("wrote", os.path.normpath(path))
