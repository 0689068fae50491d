#!/usr/bin/env python3
"""Writes the seed files of tests/fuzz/corpus/safetensors/ by hand from the safetensors
specification (no safetensors library): small valid files of every dtype, truncated and
corrupted variants, and headers that lie. Run once; the fuzzer adds its own finds (named by
their SHA-1) next to these.

    python3 tests/fuzz/make_seeds.py

Names tell the corpus replay test (corpus_replay_test.cpp) what to expect: `valid-*` must
parse, `reject-*` must raise ember::ValueError, anything else may do either.
"""
import json
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "safetensors")


def file_of(tensors, metadata=None, pad=True, raw_header=None):
    """tensors: [(name, dtype, shape, bytes)] laid out in order."""
    header, blobs, offset = {}, [], 0
    for name, dtype, shape, blob in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    if metadata is not None:
        header["__metadata__"] = metadata
    text = raw_header if raw_header is not None else json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def raw(header_text, data=b""):
    return struct.pack("<Q", len(header_text)) + header_text + data


seeds = {
    "valid-f32": file_of([("w", "F32", [2, 3], struct.pack("<6f", 0.5, -1.0, 2.0, 3.5, -0.0, 1e-3))]),
    "valid-f64-scalar": file_of([("s", "F64", [], struct.pack("<d", 1.0 / 3.0))]),
    "valid-i64": file_of([("steps", "I64", [3], struct.pack("<3q", -1, 2 ** 62, 7))]),
    "valid-i32": file_of([("i", "I32", [2, 2], struct.pack("<4i", 1, -2, 3, -4))]),
    "valid-i16": file_of([("h", "I16", [3], struct.pack("<3h", -300, 0, 300))]),
    "valid-i8": file_of([("b", "I8", [4], struct.pack("<4b", -128, -1, 0, 127))]),
    "valid-u8-empty": file_of([("e", "U8", [0, 5], b"")]),
    "valid-bool": file_of([("m", "BOOL", [4], bytes([1, 0, 0, 1]))]),
    "valid-f16": file_of([("h", "F16", [2], struct.pack("<2H", 0x3C00, 0xC000))]),
    "valid-bf16": file_of([("b", "BF16", [3], struct.pack("<3H", 0x3F80, 0xC000, 0x7F80))]),
    "valid-multi-metadata": file_of(
        [("a.weight", "F32", [2, 2], struct.pack("<4f", 1, 2, 3, 4)),
         ("a.bias", "F16", [2], struct.pack("<2H", 0x3C00, 0x0000)),
         ("steps", "I64", [], struct.pack("<q", 12))],
        metadata={"format": "pt", "ember_version": "0.1.0"}),
    "valid-empty-header": raw(b"{}      "),
    "valid-unpadded": file_of([("x", "U8", [3], b"abc")], pad=False),
    "valid-unicode-name": file_of([("w\u00e9ight.\u4e2d", "I8", [1], b"\x05")]),
}
with open(os.path.join(HERE, "..", "record", "fixture.safetensors"), "rb") as f:
    seeds["valid-fixture"] = f.read()

multi = seeds["valid-multi-metadata"]
hl = struct.unpack("<Q", multi[:8])[0]
seeds["trunc-4-bytes"] = multi[:4]
seeds["trunc-mid-header"] = multi[: 8 + hl // 2]
seeds["trunc-mid-data"] = multi[: 8 + hl + 5]

U8 = lambda shape, offs: {"dtype": "U8", "shape": shape, "data_offsets": offs}
lies = {
    "reject-header-len-huge": struct.pack("<Q", 2 ** 63 - 1) + b"{}",
    "reject-header-len-past-end": struct.pack("<Q", 100) + b"{}",
    "reject-not-json": raw(b"{not json"),
    "reject-not-object": raw(b"[1, 2, 3]"),
    "reject-bad-dtype": raw(json.dumps({"a": {"dtype": "F8", "shape": [1], "data_offsets": [0, 1]}}).encode(), b"\0"),
    "reject-shape-mismatch": raw(json.dumps({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}).encode(), b"\0" * 4),
    "reject-offsets-outside": raw(json.dumps({"a": U8([4], [0, 4000])}).encode(), b"\0" * 4),
    "reject-offsets-reversed": raw(json.dumps({"a": U8([0], [3, 1])}).encode(), b"\0" * 3),
    "reject-overlap": raw(json.dumps({"a": U8([2], [0, 2]), "b": U8([2], [1, 3])}).encode(), b"\0" * 3),
    "reject-gap": raw(json.dumps({"a": U8([1], [0, 1]), "b": U8([1], [2, 3])}).encode(), b"\0" * 3),
    "reject-stray-bytes": raw(json.dumps({"a": U8([1], [0, 1])}).encode(), b"\0" * 5),
    "reject-negative-dim": raw(json.dumps({"a": U8([-1], [0, 1])}).encode(), b"\0"),
    "reject-float-dim": raw(json.dumps({"a": U8([1.0], [0, 1])}).encode(), b"\0"),
    "reject-huge-dims": raw(json.dumps({"a": U8([2 ** 32] * 3, [0, 1])}).encode(), b"\0"),
    "reject-missing-fields": raw(json.dumps({"a": {"dtype": "U8"}}).encode()),
    "reject-offsets-not-pair": raw(json.dumps({"a": U8([1], [0, 1, 2])}).encode(), b"\0"),
    "reject-metadata-not-string": raw(json.dumps({"__metadata__": {"k": 1}}).encode()),
    "reject-metadata-not-object": raw(json.dumps({"__metadata__": [1]}).encode()),
    "reject-tensor-not-object": raw(json.dumps({"a": 3}).encode()),
    "reject-deep-nesting": raw(b"{\"a\": " + b"[" * 1500 + b"]" * 1500 + b"}"),
    "reject-invalid-utf8": raw(b"{\"\xff\xfe\": {}}"),
    "reject-offset-too-large": raw(b"{\"a\": {\"dtype\": \"U8\", \"shape\": [1], \"data_offsets\": [0, 18446744073709551616]}}", b"\0"),
}
seeds.update(lies)

# Regressions: bugs the fuzzer and these seeds found in the reader.
seeds.update({
    # a BOOL byte other than 0 or 1 was accepted, and converting it is undefined behaviour
    "reject-bool-byte-2": file_of([("m", "BOOL", [4], bytes([1, 0, 2, 1]))]),
    # a zero-size tensor's dims were only bounded by the file, so [100] * 10 + [0] overflowed
    # int64 when its element count was computed
    "reject-empty-overflowing-dims": file_of([("a", "U8", [100] * 10 + [0], b""),
                                              ("b", "U8", [100], b"\0" * 100)]),
    "reject-rank-65": file_of([("a", "U8", [1] * 65, b"\0")]),
    # zero-size tensors in a file with no data were rejected ("dim 5 is larger than the file")
    "valid-empty-huge-dim": file_of([("e", "F32", [0, 2 ** 40], b""), ("f", "I8", [3, 0], b"")]),
})

rng = random.Random(7)
for k in range(6):
    b = bytearray(multi)
    for _ in range(1 + k % 3):
        b[rng.randrange(len(b))] = rng.randrange(256)
    seeds[f"flip-{k}"] = bytes(b)

os.makedirs(OUT, exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)
print(f"{len(seeds)} seeds -> {os.path.normpath(OUT)}")
