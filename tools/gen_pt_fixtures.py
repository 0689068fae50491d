#!/usr/bin/python3
"""Writes the PyTorch fixtures of tests/record/fixtures/: state dicts saved by torch.save in
the zip format and the legacy one, and PyTorch's outputs on fixed inputs (expected.json), the
oracle that tests/record/pytorch_test.cpp compares ember's loaded modules with. Also a few
hostile files made byte by byte (a pickle naming os.system is written, never loaded).

Needs PyTorch (Debian's python3-torch, hence /usr/bin/python3):

    /usr/bin/python3 tools/gen_pt_fixtures.py
"""
import io
import json
import os
import zipfile

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "record", "fixtures")
expected = {}


def rec(name, t):
    t = t.detach()
    expected[name] = {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
                      "data": t.reshape(-1).double().tolist() if t.dtype != torch.bool
                      else t.reshape(-1).int().tolist()}


def save(obj, name, legacy=False):
    path = os.path.join(OUT, name)
    torch.save(obj, path, _use_new_zipfile_serialization=not legacy)
    return path


class SmallCnn(nn.Module):
    """conv -> batch norm -> relu -> max pool -> conv -> relu -> flatten -> linear."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 8, 3)
        self.fc = nn.Linear(32, 5)

    def forward(self, x):
        x = torch.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        x = torch.relu(self.conv2(x))
        return self.fc(x.flatten(1))


def warm_batch_norm(m, x):
    """A few training steps so that the running statistics are not the defaults."""
    m.train()
    with torch.no_grad():
        for k in range(3):
            m(x * (1 + k) + k)
    m.eval()


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)

    lin = nn.Linear(4, 3)
    x = torch.randn(2, 4)
    rec("linear.x", x)
    rec("linear.y", lin(x))
    save(lin.state_dict(), "linear.pt")
    save(lin.state_dict(), "linear_legacy.pt", legacy=True)
    # f64 weights, to load into f32 parameters
    save({k: v.double() for k, v in lin.state_dict().items()}, "linear_f64.pt")

    conv = nn.Conv2d(2, 3, 3, padding=1)
    x = torch.randn(1, 2, 5, 5)
    rec("conv2d.x", x)
    rec("conv2d.y", conv(x))
    save(conv.state_dict(), "conv2d.pt")

    bn = nn.BatchNorm2d(3)
    x = torch.randn(2, 3, 4, 4)
    warm_batch_norm(bn, x)
    with torch.no_grad():
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.5, 0.5)
    rec("batchnorm2d.x", x)
    rec("batchnorm2d.y", bn(x))
    save(bn.state_dict(), "batchnorm2d.pt")

    lstm = nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True)
    x = torch.randn(2, 5, 3)
    y, (h, c) = lstm(x)
    rec("lstm.x", x)
    rec("lstm.y", y)
    rec("lstm.h", h)
    rec("lstm.c", c)
    save(lstm.state_dict(), "lstm.pt")

    enc = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True)
    enc.eval()
    x = torch.randn(2, 5, 8)
    rec("transformer.x", x)
    with torch.no_grad():
        rec("transformer.y", enc(x))
    save(enc.state_dict(), "transformer.pt")

    cnn = SmallCnn()
    x = torch.randn(2, 1, 8, 8)
    warm_batch_norm(cnn, x)
    rec("cnn.x", x)
    rec("cnn.y", cnn(x))
    # a training checkpoint: the weights under "model", next to other entries
    ckpt = {"epoch": 7, "lr": 0.01, "model": cnn.state_dict(), "note": "small cnn"}
    save(ckpt, "cnn_checkpoint_legacy.pt", legacy=True)
    save(ckpt, "cnn_checkpoint.pt")

    # dtypes, views and shared storage
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4) / 4 - 1
    tensors = {
        "f32": base.clone(),
        "f64": torch.tensor([1.0 / 3.0, -2.5e300, 0.0], dtype=torch.float64),
        "f16": torch.tensor([1.0, -2.0, 65504.0, 1e-3], dtype=torch.float16),
        "bf16": torch.tensor([1.0, -0.15625, 3e38], dtype=torch.bfloat16),
        "i64": torch.tensor([-(2 ** 62), 0, 7], dtype=torch.int64),
        "i32": torch.tensor([[1, -2], [3, -(2 ** 31)]], dtype=torch.int32),
        "i16": torch.tensor([-300, 300], dtype=torch.int16),
        "i8": torch.tensor([-128, 127, 0], dtype=torch.int8),
        "u8": torch.tensor([0, 255, 9], dtype=torch.uint8),
        "bool": torch.tensor([True, False, True]),
        "scalar": torch.tensor(2.5),
        "empty": torch.zeros(0, 3),
        "transposed": base.T,  # a non-contiguous view
        "strided": base[1:, ::2],  # an offset and strides
        "shared_a": base[0],  # two views of one storage
        "shared_b": base[2, 1:],
        "expanded": torch.tensor([[1.5], [2.5]]).expand(2, 3),  # stride 0
    }
    for k, v in tensors.items():
        rec("dtypes." + k, v)
    save(tensors, "dtypes.pt")
    save(tensors, "dtypes_legacy.pt", legacy=True)

    # nested containers: a list and a dict with integer keys, flattened to dotted names
    save({"state_dict": {"layers": [{"w": torch.ones(2)}, {"w": torch.zeros(1)}]},
          "opt": {0: torch.tensor([3.0])}}, "nested.pt")

    # A pickle that would run os.system("echo pwned") when unpickled by Python: written byte
    # by byte, inside an otherwise well-formed zip archive. Never loaded here.
    evil = (b"\x80\x02" + b"cposix\nsystem\n" + b"q\x00" + b"X\x0b\x00\x00\x00echo pwned"
            + b"\x85" + b"R" + b".")
    with open(os.path.join(OUT, "linear.pt"), "rb") as f:
        good = zipfile.ZipFile(io.BytesIO(f.read()))
    with zipfile.ZipFile(os.path.join(OUT, "evil.pt"), "w", zipfile.ZIP_STORED) as z:
        for info in good.infolist():
            data = evil if info.filename.endswith("/data.pkl") else good.read(info.filename)
            z.writestr(info.filename.replace("linear/", "evil/"), data)

    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, separators=(",", ":"))
        f.write("\n")
    sizes = {n: os.path.getsize(os.path.join(OUT, n)) for n in sorted(os.listdir(OUT))}
    print(json.dumps(sizes, indent=1))


if __name__ == "__main__":
    main()
