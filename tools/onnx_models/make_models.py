#!/usr/bin/python3
"""Exports the real-model fixtures of ember's ONNX runtime from PyTorch (fixed seeds).

Each model goes to OUT/NAME/ in the layout of the ONNX backend tests:

  OUT/NAME/model.onnx                      dynamic batch axis "N"
  OUT/NAME/test_data_set_0/input_K.pb      one input (TensorProto), a batch of 2
  OUT/NAME/bench_bB/input_K.pb             with --bench-batches: inputs of batch B

The reference outputs (output_K.pb) are written by ONNX Runtime (tools/onnx_models/ort_run.js),
not by this script; tools/onnx_models/regen.sh runs both.

Models:
  mnist_cnn     an MNIST-style CNN: (conv 3x3, relu, max pool) x 2, linear
  transformer   an embedding and nn.TransformerEncoder (2 layers, d_model 64, 4 heads)
  detector      depthwise-separable conv blocks (BatchNorm, ReLU6, hardswish), a head with
                sigmoid boxes and softmax class scores
  ember_cnn     examples/mnist's CNN, with the weights of an ember-trained checkpoint
                (--ember-checkpoint, a model.safetensors of `mnist train --model cnn`) or,
                without one, random weights
  quant_mlp     an MLP 784 -> 512 -> 256 -> 10 in the form of dynamic int8 quantization
                (ONNX Runtime's quantize_dynamic): per layer DynamicQuantizeLinear of the
                activations, MatMulInteger with int8 weights, the product scaled back to f32;
                built with onnx.helper (random weights, quantized per tensor)
  quant_cnn     a CNN in the same form: (DynamicQuantizeLinear, ConvInteger 3x3 with int8
                weights, scaled back, bias, relu) 1 -> 32 -> 64 -> 128 channels with max pools
                between, global average pool, a quantized linear layer 128 -> 10; the second
                conv's weight zero point given (0), the others left out

Run with Debian's interpreter (torch 1.13, onnx 1.12):
  /usr/bin/python3 tools/onnx_models/make_models.py --out build/onnx_models
"""
import argparse
import json
import struct
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from torch import nn


class MnistCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(32 * 7 * 7, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


def gelu(x):
    return nn.functional.gelu(x)


class Transformer(nn.Module):
    def __init__(self, vocab=100, seq=16, d_model=64, heads=4, layers=2, ff=128, classes=5):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.randn(1, seq, d_model) * 0.1)
        # A plain function as activation keeps PyTorch off its fused inference path
        # (aten::_transformer_encoder_layer_fwd), which torch.onnx cannot export.
        layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=ff, dropout=0.0,
                                           activation=gelu, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d_model, classes)

    def forward(self, tokens):
        x = self.encoder(self.embed(tokens) + self.pos)
        return self.head(x.mean(dim=1))


def separable(cin, cout, stride, act):
    return nn.Sequential(
        nn.Conv2d(cin, cin, 3, stride, 1, groups=cin, bias=False), nn.BatchNorm2d(cin), act(),
        nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), act())


class Detector(nn.Module):
    def __init__(self, anchors=3, classes=4):
        super().__init__()
        self.anchors, self.classes = anchors, classes
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16),
                                  nn.ReLU6())
        self.blocks = nn.Sequential(separable(16, 32, 2, nn.ReLU6), separable(32, 48, 2,
                                    nn.Hardswish), separable(48, 64, 1, nn.Hardswish))
        self.head = nn.Conv2d(64, anchors * (4 + classes), 1)

    def forward(self, x):
        y = self.head(self.blocks(self.stem(x)))       # [N, A * (4 + C), H, W]
        n, _, h, w = y.shape
        y = y.reshape(n, self.anchors, 4 + self.classes, h * w).permute(0, 3, 1, 2)
        y = y.reshape(n, h * w * self.anchors, 4 + self.classes)
        boxes = torch.sigmoid(y[..., :4])
        scores = torch.softmax(y[..., 4:], dim=-1)
        return boxes, scores


class EmberCnn(nn.Module):
    """examples/mnist/cnn.h: conv 1->8, pool, conv 8->16, pool, linear 400->10 (no padding)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3)
        self.conv2 = nn.Conv2d(8, 16, 3)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(400, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        return self.fc(x.reshape(x.shape[0], 400))


def read_safetensors(path):
    """The tensors of a .safetensors file: u64 header length, JSON header, raw data."""
    raw = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    kinds = {"F32": np.float32, "F64": np.float64, "F16": np.float16}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        arr = np.frombuffer(data[begin:end], dtype=kinds[info["dtype"]])
        out[name] = torch.from_numpy(arr.astype(np.float32).reshape(info["shape"]))
    return out


def load_ember_cnn(model, path):
    t = read_safetensors(path)
    with torch.no_grad():
        for conv in ("conv1", "conv2"):
            getattr(model, conv).weight.copy_(t[conv + ".weight"])
            getattr(model, conv).bias.copy_(t[conv + ".bias"])
        # ember's Linear stores its weight as [in, out]; PyTorch's as [out, in].
        model.fc.weight.copy_(t["fc.weight"].t())
        model.fc.bias.copy_(t["fc.bias"])


def randomize_batch_norms(model, gen):
    # Fresh BatchNorms are the identity; give them statistics so that the folding is tested.
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            c = m.num_features
            m.running_mean.copy_(torch.randn(c, generator=gen) * 0.2)
            m.running_var.copy_(torch.rand(c, generator=gen) + 0.5)
            m.weight.data.copy_(torch.rand(c, generator=gen) + 0.5)
            m.bias.data.copy_(torch.randn(c, generator=gen) * 0.2)


def make_input(name, batch, gen):
    if name == "transformer":
        return torch.randint(0, 100, (batch, 16), generator=gen, dtype=torch.int64)
    if name == "detector":
        return torch.rand(batch, 3, 64, 64, generator=gen)
    return torch.rand(batch, 1, 28, 28, generator=gen)


# name -> (opset, output names). Each uses the lowest opset with a single ONNX op for its
# layers: LayerNormalization (17), HardSwish (14).
MODELS = {
    "mnist_cnn": (13, ["logits"]),
    "transformer": (17, ["logits"]),
    "detector": (14, ["boxes", "scores"]),
    "ember_cnn": (13, ["logits"]),
    "quant_mlp": (13, ["logits"]),
    "quant_cnn": (13, ["logits"]),
}


def quantized_weight(rng, shape, fan_in, name):
    """Random weights quantized to int8 per tensor: the initializers `name` and `name`_scale."""
    w = rng.normal(0, 1 / np.sqrt(fan_in), shape).astype(np.float32)
    scale = np.float32(np.abs(w).max() / 127)
    wq = np.clip(np.round(w / scale), -127, 127).astype(np.int8)
    return [numpy_helper.from_array(wq, name),
            numpy_helper.from_array(np.array(scale, np.float32), f"{name}_scale")]


def save_quantized(nodes, name, inits, path):
    """The graph of a quantized fixture (input [N, 1, 28, 28], logits [N, 10]), checked, to `path`."""
    from onnx import TensorProto, helper
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", 1, 28, 28])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def quant_mlp_model(path):
    """The quant_mlp graph (see the module doc), written to `path`."""
    from onnx import TensorProto, helper
    rng = np.random.default_rng(4)
    sizes = [784, 512, 256, 10]
    nodes = [helper.make_node("Flatten", ["input"], ["x0"], axis=1)]
    inits = []
    for i, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
        inits += quantized_weight(rng, (n_in, n_out), n_in, f"w{i}")
        inits.append(numpy_helper.from_array(rng.normal(0, 0.1, n_out).astype(np.float32), f"b{i}"))
        x, out = f"x{i}", ("logits" if i == len(sizes) - 2 else f"x{i + 1}")
        nodes += [
            helper.make_node("DynamicQuantizeLinear", [x], [f"q{i}", f"q{i}_scale", f"q{i}_zp"]),
            helper.make_node("MatMulInteger", [f"q{i}", f"w{i}", f"q{i}_zp"], [f"p{i}"]),
            helper.make_node("Cast", [f"p{i}"], [f"pf{i}"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"q{i}_scale", f"w{i}_scale"], [f"s{i}"]),
            helper.make_node("Mul", [f"pf{i}", f"s{i}"], [f"y{i}"]),
            helper.make_node("Add", [f"y{i}", f"b{i}"], [out if out == "logits" else f"z{i}"]),
        ]
        if out != "logits":
            nodes.append(helper.make_node("Relu", [f"z{i}"], [out]))
    save_quantized(nodes, "quant_mlp", inits, path)


def quant_cnn_model(path):
    """The quant_cnn graph (see the module doc), written to `path`."""
    from onnx import TensorProto, helper
    rng = np.random.default_rng(5)
    nodes, inits, x = [], [], "input"
    for i, (c_in, c_out) in enumerate([(1, 32), (32, 64), (64, 128)]):
        inits += quantized_weight(rng, (c_out, c_in, 3, 3), 9 * c_in, f"w{i}")
        inits.append(numpy_helper.from_array(
            rng.normal(0, 0.1, (c_out, 1, 1)).astype(np.float32), f"b{i}"))
        conv_in = [f"q{i}", f"w{i}", f"q{i}_zp"]
        if i == 1:
            inits.append(numpy_helper.from_array(np.array(0, np.int8), f"w{i}_zp"))
            conv_in.append(f"w{i}_zp")
        nodes += [
            helper.make_node("DynamicQuantizeLinear", [x], [f"q{i}", f"q{i}_scale", f"q{i}_zp"]),
            helper.make_node("ConvInteger", conv_in, [f"p{i}"], pads=[1, 1, 1, 1]),
            helper.make_node("Cast", [f"p{i}"], [f"pf{i}"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"q{i}_scale", f"w{i}_scale"], [f"s{i}"]),
            helper.make_node("Mul", [f"pf{i}", f"s{i}"], [f"y{i}"]),
            helper.make_node("Add", [f"y{i}", f"b{i}"], [f"z{i}"]),
            helper.make_node("Relu", [f"z{i}"], [f"r{i}"]),
        ]
        x = f"r{i}"
        if i < 2:
            nodes.append(helper.make_node("MaxPool", [x], [f"m{i}"], kernel_shape=[2, 2],
                                          strides=[2, 2]))
            x = f"m{i}"
    inits += quantized_weight(rng, (128, 10), 128, "w3")
    inits.append(numpy_helper.from_array(rng.normal(0, 0.1, 10).astype(np.float32), "b3"))
    nodes += [
        helper.make_node("GlobalAveragePool", [x], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"], axis=1),
        helper.make_node("DynamicQuantizeLinear", ["f"], ["q3", "q3_scale", "q3_zp"]),
        helper.make_node("MatMulInteger", ["q3", "w3", "q3_zp"], ["p3"]),
        helper.make_node("Cast", ["p3"], ["pf3"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["q3_scale", "w3_scale"], ["s3"]),
        helper.make_node("Mul", ["pf3", "s3"], ["y3"]),
        helper.make_node("Add", ["y3", "b3"], ["logits"]),
    ]
    save_quantized(nodes, "quant_cnn", inits, path)


def build(name, checkpoint):
    torch.manual_seed(0)
    model = {"mnist_cnn": MnistCnn, "transformer": Transformer, "detector": Detector,
             "ember_cnn": EmberCnn}[name]()
    if name == "detector":
        gen = torch.Generator().manual_seed(1)
        with torch.no_grad():
            randomize_batch_norms(model, gen)
    if name == "ember_cnn" and checkpoint:
        load_ember_cnn(model, checkpoint)
    return model.eval()


def write_tensor(path, t, name):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(numpy_helper.from_array(t.numpy(), name).SerializeToString())


def export(name, out, checkpoint, bench_batches):
    opset, outputs = MODELS[name]
    folder = out / name
    folder.mkdir(parents=True, exist_ok=True)
    input_name = "tokens" if name == "transformer" else "input"
    gen = torch.Generator().manual_seed(2)
    x = make_input(name, 2, gen)
    if name in ("quant_mlp", "quant_cnn"):  # not from PyTorch
        {"quant_mlp": quant_mlp_model, "quant_cnn": quant_cnn_model}[name](folder / "model.onnx")
        write_inputs(folder, name, x, input_name, bench_batches)
        return
    model = build(name, checkpoint)
    # The detector keeps its BatchNormalization nodes (PRESERVE with the model in eval mode
    # skips the exporter's Conv+BatchNorm folding); the others are exported as usual.
    training = torch.onnx.TrainingMode.PRESERVE if name == "detector" else \
        torch.onnx.TrainingMode.EVAL
    axes = {input_name: {0: "N"}}
    axes.update({o: {0: "N"} for o in outputs})
    # Traced with autograd on: under no_grad, nn.MultiheadAttention takes a fused path
    # (aten::_native_multi_head_attention) that torch.onnx cannot export.
    torch.onnx.export(model, (x,), str(folder / "model.onnx"), opset_version=opset,
                      input_names=[input_name], output_names=outputs, dynamic_axes=axes,
                      do_constant_folding=True, training=training)
    onnx.checker.check_model(onnx.load(str(folder / "model.onnx")))
    write_inputs(folder, name, x, input_name, bench_batches)


def write_inputs(folder, name, x, input_name, bench_batches):
    write_tensor(folder / "test_data_set_0" / "input_0.pb", x, input_name)
    for b in bench_batches:
        write_tensor(folder / f"bench_b{b}" / "input_0.pb",
                     make_input(name, b, torch.Generator().manual_seed(3 + b)), input_name)
    ops = sorted({n.op_type for n in onnx.load(str(folder / "model.onnx")).graph.node})
    print(f"{name}: {(folder / 'model.onnx').stat().st_size} bytes, ops {ops}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--ember-checkpoint", default="",
                    help="model.safetensors of `mnist train --model cnn` for ember_cnn")
    ap.add_argument("--bench-batches", default="", help="e.g. 1,32")
    args = ap.parse_args()
    torch.set_num_threads(1)
    batches = [int(b) for b in args.bench_batches.split(",") if b]
    for name in args.models.split(","):
        if name not in MODELS:
            ap.error(f"unknown model {name} (models: {', '.join(MODELS)})")
        export(name, args.out, args.ember_checkpoint if name == "ember_cnn" else "", batches)


if __name__ == "__main__":
    main()
