#!/usr/bin/env python3
"""Writes the seed files of tests/fuzz/corpus/pickle/ and tests/fuzz/corpus/pytorch/ from the
committed PyTorch fixtures (tests/record/fixtures/, tools/gen_pt_fixtures.py) and from pickles
made byte by byte. Nothing is unpickled here; plain Python data is pickled with the standard
module to get protocols 2 to 5. Run once; the fuzzers add their own finds next to these.

    python3 tests/fuzz/make_pt_seeds.py

Names tell the corpus replay test (corpus_replay_test.cpp) what to expect: `valid-*` must
parse, `reject-*` must raise ember::ValueError, anything else may do either.
"""
import io
import os
import pickle
import random
import struct
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "record", "fixtures")


def fixture(name):
    with open(os.path.join(FIXTURES, name), "rb") as f:
        return f.read()


def text(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def num(v):
    return b"J" + struct.pack("<i", v)


def tup(vs):
    return b"(" + b"".join(num(v) for v in vs) + b"t"


def tensor_pickle(offset, size, stride, numel, storage=b"FloatStorage", persid_len=6):
    """{"w": tensor} as torch.save's legacy format pickles it (persid_len 5: the zip format)."""
    pid = text("storage") + b"ctorch\n" + storage + b"\n" + text("0") + text("cpu") + num(numel)
    if persid_len == 6:
        pid += b"N"
    return (b"\x80\x02}" + text("w") + b"ctorch._utils\n_rebuild_tensor_v2\n((" + pid + b"tQ"
            + num(offset) + tup(size) + tup(stride) + b"\x89ccollections\nOrderedDict\n)Rt"
            + b"Rs.")


def legacy(main, numel, data):
    magic = b"\x80\x02\x8a\x0a" + (0x1950A86A20F9469CFC6C).to_bytes(10, "little") + b"."
    proto = b"\x80\x02M\xe9\x03."
    info = b"\x80\x02}" + text("little_endian") + b"\x88s."
    keys = b"\x80\x02](" + text("0") + b"e."
    return magic + proto + info + main + keys + struct.pack("<Q", numel) + data


def zip_of(entries):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for name, data in entries:
            z.writestr(name, data)
    return out.getvalue()


def split_legacy(b):
    """The five pickles of a legacy file, found by their STOP opcodes via the pickletools
    parser (which reads opcodes without running them)."""
    import pickletools
    parts, at = [], 0
    for _ in range(5):
        end = None
        for op, arg, pos in pickletools.genops(io.BytesIO(b[at:])):
            if op.name == "STOP":
                end = at + pos + 1
                break
        parts.append(b[at:end])
        at = end
    return parts


def write(folder, seeds):
    out = os.path.join(HERE, "corpus", folder)
    os.makedirs(out, exist_ok=True)
    for name, data in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    print(f"{len(seeds)} seeds -> {os.path.normpath(out)}")


def pickle_seeds():
    s = {}
    for name in ["linear.pt", "batchnorm2d.pt", "dtypes.pt", "nested.pt", "transformer.pt"]:
        z = zipfile.ZipFile(io.BytesIO(fixture(name)))
        pkl = [n for n in z.namelist() if n.endswith("/data.pkl")][0]
        s["valid-" + name.replace(".pt", "") + "-data.pkl"] = z.read(pkl)
    for k, part in enumerate(split_legacy(fixture("linear_legacy.pt"))):
        s[f"valid-legacy-part{k}"] = part
    plain = {"a": [1, -2, 2 ** 40, -(2 ** 70), 2.5, "x\u00e9", True, False, None, (1,),
                   (1, 2), (1, 2, 3), (1, 2, 3, 4)], "e": {}, "s": {1, 2}, "f": frozenset([3])}
    for proto in (2, 3, 4, 5):
        if proto >= 3:  # protocol 2 pickles bytes as a call of _codecs.encode
            plain["b"] = b"raw"
        s[f"valid-plain-protocol{proto}"] = pickle.dumps(plain, protocol=proto, fix_imports=False)
    s["valid-self-list"] = b"\x80\x02}" + text("a") + b"]q\x00h\x00as."
    s["valid-long-binput"] = b"\x80\x02]r\x00\x01\x00\x00j\x00\x01\x00\x00a."
    s.update({
        "reject-os-system": b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00ls\x85R.",
        "reject-posix-system": b"\x80\x02cposix\nsystem\n" + text("echo") + b"\x85R.",
        "reject-stack-global-eval": b"\x80\x04\x8c\x08builtins\x8c\x04eval\x93.",
        "reject-builtins-getattr": b"\x80\x02cbuiltins\ngetattr\n.",
        "reject-text-int": b"\x80\x02I12\n.",
        "reject-huge-unicode": b"\x80\x02X\xff\xff\xff\xffabc.",
        "reject-huge-unicode8": b"\x80\x04\x8d" + b"\xff" * 8 + b".",
        "reject-huge-frame": b"\x80\x04\x95" + b"\xff" * 8 + b"N.",
        "reject-memo-missing": b"\x80\x02j\x07\x00\x00\x00.",
        "reject-empty-stop": b"\x80\x02.",
        "reject-open-mark": b"\x80\x02(N.",
        "reject-underflow": b"\x80\x02N(s.",
        "reject-append-tuple": b"\x80\x02)Na.",
        "reject-setitem-list": b"\x80\x02]NNs.",
        "reject-protocol-9": b"\x80\x09N.",
        "reject-truncated": b"\x80\x02]",
        "reject-marks-5000": b"\x80\x02" + b"(" * 5000 + b"N.",
        "reject-reduce-non-global": b"\x80\x02N)R.",
        "reject-build-list": b"\x80\x02]Nb.",
    })
    return s


def pytorch_seeds():
    s = {}
    for name in sorted(os.listdir(FIXTURES)):
        if name.endswith(".pt") and name != "evil.pt":
            s["valid-" + name.replace(".pt", "")] = fixture(name)
    s["reject-evil"] = fixture("evil.pt")
    four = struct.pack("<4f", 0, 1, 2, 3)
    s["valid-hand-view"] = legacy(tensor_pickle(1, [2, 2], [1, 2], 5), 5, struct.pack("<5f", *range(5)))
    s["valid-hand-expand"] = legacy(tensor_pickle(2, [3, 2], [0, 1], 4), 4, four)
    s["valid-hand-zip"] = zip_of([("a/data.pkl", tensor_pickle(0, [2], [1], 4, persid_len=5)),
                                  ("a/data/0", four), ("a/byteorder", b"little")])
    s.update({
        "reject-offset-past": legacy(tensor_pickle(5, [1], [1], 4), 4, four),
        "reject-stride-past": legacy(tensor_pickle(0, [2, 2], [3, 1], 4), 4, four),
        "reject-negative-size": legacy(tensor_pickle(0, [-1], [1], 4), 4, four),
        "reject-rank-mismatch": legacy(tensor_pickle(0, [2, 2], [1], 4), 4, four),
        "reject-huge-dims": legacy(tensor_pickle(0, [2 ** 31 - 1] * 3, [0, 0, 0], 4), 4, four),
        "reject-expand-too-big": legacy(tensor_pickle(0, [2 ** 30, 2 ** 20], [0, 0], 4), 4, four),
        "reject-storage-short": legacy(tensor_pickle(0, [4], [1], 4), 4, four[:8]),
        "reject-storage-count": legacy(tensor_pickle(0, [3], [1], 4), 3, four[:12]),
        "reject-bool-byte": legacy(tensor_pickle(0, [1], [1], 1, b"BoolStorage"), 1, b"\x02"),
        "reject-complex-storage": legacy(tensor_pickle(0, [1], [1], 1, b"ComplexFloatStorage"), 1, four),
        "reject-zip-no-pkl": zip_of([("a/data/0", four)]),
        "reject-zip-no-storage": zip_of([("a/data.pkl", tensor_pickle(0, [2], [1], 4, persid_len=5))]),
        "reject-zip-big-endian": zip_of([("a/data.pkl", tensor_pickle(0, [2], [1], 4, persid_len=5)),
                                         ("a/data/0", four), ("a/byteorder", b"big")]),
    })
    # the deflated archive needs its writer closed to be complete
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("a/data.pkl", b"x" * 64)
    s["reject-zip-deflated"] = out.getvalue()
    lin = fixture("linear.pt")
    s["reject-trunc-zip-half"] = lin[: len(lin) // 2]
    s["reject-trunc-zip-end"] = lin[:-1]
    leg = fixture("linear_legacy.pt")
    s["reject-trunc-legacy-half"] = leg[: len(leg) // 2]
    s["reject-trunc-legacy-end"] = leg[:-1]
    rng = random.Random(7)
    for k in range(6):
        b = bytearray(leg if k % 2 else lin)
        for _ in range(1 + k % 3):
            b[rng.randrange(len(b))] = rng.randrange(256)
        s[f"flip-{k}"] = bytes(b)
    return s


write("pickle", pickle_seeds())
write("pytorch", pytorch_seeds())
