#!/usr/bin/python3
"""Writes the seed files of tests/fuzz/corpus/onnx/: the smallest models of the ONNX backend
node tests (Debian's libonnx-testdata, Apache-2.0), one per operator family, and small models
made here with the onnx package (Debian's python3-onnx) for what the node tests lack:
model-local functions, external data, every attribute type, tensors that lie about their
size, and shape operators asked for huge outputs. Run once; the fuzzer adds its own finds
(named by their SHA-1) next to these.

    /usr/bin/python3 tests/fuzz/make_onnx_seeds.py

Names tell the corpus replay test (corpus_replay_test.cpp) what to expect: `valid-*` must
parse, `reject-*` must raise ember::ValueError, anything else may do either.
"""
import os

import numpy as np
from onnx import TensorProto, helper, mapping, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "onnx")
NODE_TESTS = "/usr/share/libonnx-testdata/data/node"

# One small model per operator family (each well under 1 KiB).
NODE_SEEDS = """
abs add argmax_default_axis_example averagepool_2d_default batchnorm_example
bitshift_left_uint8 cast_FLOAT_to_DOUBLE clip compress_0 concat_1d_axis_0 constant
constantofshape_float_ones conv_with_strides_padding convtranspose cumsum_1d
depthtospace_example dequantizelinear dft dropout_default edge_pad einsum_batch_matmul
einsum_sum expand_dim_changed eyelike_populate_off_main_diagonal gather_0
gathernd_example_int32 gemm_default_no_bias gru_defaults hannwindow identity if
instancenorm_example layer_normalization_2d_axis0 loop11 lstm_defaults matmul_2d
maxpool_1d_default mean_example mod_mixed_sign_int64 nonmaxsuppression_center_point_box_format
nonzero_example onehot_with_axis optional_has_element quantizelinear
range_float_type_positive_delta reduce_sum_default_axes_keepdims_example relu
reshape_reduced_dims resize_upsample_scales_nearest scan9_sum scatter_elements_with_axis
sequence_insert_at_back shape size slice softmax_axis_0 split_equal_parts_1d squeeze tile
transpose_default unique_not_sorted_without_axis unsqueeze_axis_0 upsample_nearest
where_example
""".split()


def model(nodes, inputs, outputs, initializers=(), functions=(), opset_imports=None):
    g = helper.make_graph(nodes, "g", inputs, outputs, initializer=list(initializers))
    m = helper.make_model(g, opset_imports=opset_imports or [helper.make_opsetid("", 17)],
                          functions=list(functions))
    m.ir_version = 8
    return m.SerializeToString()


def tensor_in(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


F = TensorProto.FLOAT
I64 = TensorProto.INT64


def made_here():
    s = {}
    x = tensor_in("x", F, [2, 3])
    y = tensor_in("y", F, [2, 3])
    # A model-local function (Square = Mul(x, x)) called from the graph.
    fn = helper.make_function("local", "Square", ["a"], ["b"],
                              [helper.make_node("Mul", ["a", "a"], ["b"])],
                              [helper.make_opsetid("", 17)])
    s["valid-function"] = model([helper.make_node("Square", ["x"], ["y"], domain="local")],
                                [x], [y], functions=[fn],
                                opset_imports=[helper.make_opsetid("", 17),
                                               helper.make_opsetid("local", 1)])
    # A function that calls itself: parses, and the runtime refuses it.
    rec = helper.make_function("local", "Loopy", ["a"], ["b"],
                               [helper.make_node("Loopy", ["a"], ["b"], domain="local")],
                               [helper.make_opsetid("local", 1)])
    s["valid-recursive-function"] = model(
        [helper.make_node("Loopy", ["x"], ["y"], domain="local")], [x], [y], functions=[rec],
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)])
    # Every attribute type on one node (an operator ember does not have).
    sub = helper.make_graph([helper.make_node("Identity", ["x"], ["z"])], "sub", [],
                            [tensor_in("z", F, [2, 3])])
    t = numpy_helper.from_array(np.arange(4, dtype=np.float32), "t")
    attrs = dict(f=1.5, i=7, s="text", t=t, g=sub, floats=[1.0, 2.0], ints=[1, 2, 3],
                 strings=["a", "b"], tensors=[t, t], graphs=[sub])
    s["valid-every-attribute"] = model([helper.make_node("Custom", ["x"], ["y"], **attrs)],
                                       [x], [y])
    # Initializers of every dtype, typed fields and raw data; a dynamic batch.
    inits = []
    for name, dt in [("f32", np.float32), ("f64", np.float64), ("i64", np.int64),
                     ("i32", np.int32), ("i16", np.int16), ("i8", np.int8), ("u8", np.uint8),
                     ("b", np.bool_), ("f16", np.float16)]:
        a = np.array([1, 0, 2], dtype=dt)
        inits.append(numpy_helper.from_array(a, name + "_raw"))
        typed = helper.make_tensor(name, mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], [3],
                                   a.tolist() if dt != np.float16 else a.view(np.uint16).tolist())
        inits.append(typed)
    s["valid-initializers"] = model([helper.make_node("Relu", ["x"], ["y"])],
                                    [tensor_in("x", F, ["N", 3])], [tensor_in("y", F, ["N", 3])],
                                    inits)
    # External data: from memory there is no folder to read it from.
    ext = TensorProto(name="w", data_type=F, dims=[2, 3], data_location=TensorProto.EXTERNAL)
    for k, v in [("location", "w.bin"), ("offset", "0"), ("length", "24")]:
        e = ext.external_data.add()
        e.key, e.value = k, v
    s["reject-external-data"] = model([helper.make_node("Add", ["x", "w"], ["y"])], [x], [y],
                                      [ext])
    # Tensors that lie about their size.
    bad = TensorProto(name="w", data_type=F, dims=[2, 3], raw_data=b"\0" * 20)
    s["reject-raw-data-size"] = model([helper.make_node("Add", ["x", "w"], ["y"])], [x], [y],
                                      [bad])
    neg = TensorProto(name="w", data_type=F, dims=[-1, 3])
    s["reject-negative-dim"] = model([helper.make_node("Add", ["x", "w"], ["y"])], [x], [y],
                                     [neg])
    big = TensorProto(name="w", data_type=F, dims=[1 << 40, 1 << 40])
    s["reject-dims-overflow"] = model([helper.make_node("Add", ["x", "w"], ["y"])], [x], [y],
                                      [big])
    few = TensorProto(name="w", data_type=F, dims=[2, 3], float_data=[1.0, 2.0])
    s["reject-typed-count"] = model([helper.make_node("Add", ["x", "w"], ["y"])], [x], [y],
                                    [few])
    # Shape operators asked for huge outputs: they parse; the runtime refuses to allocate.
    out = tensor_in("y", F, None)
    shape = numpy_helper.from_array(np.array([1 << 20, 1 << 20], dtype=np.int64), "shape")
    s["valid-huge-constantofshape"] = model(
        [helper.make_node("ConstantOfShape", ["shape"], ["y"])], [], [out], [shape])
    s["valid-huge-expand"] = model([helper.make_node("Expand", ["x", "shape"], ["y"])],
                                   [tensor_in("x", F, [1, 1])], [out], [shape])
    reps = numpy_helper.from_array(np.array([1 << 30, 1 << 30], dtype=np.int64), "reps")
    s["valid-huge-tile"] = model([helper.make_node("Tile", ["x", "reps"], ["y"])], [x], [out],
                                 [reps])
    lims = [numpy_helper.from_array(np.array(v, dtype=np.float32), n)
            for n, v in [("start", 0.0), ("limit", 1e12), ("delta", 1.0)]]
    s["valid-huge-range"] = model([helper.make_node("Range", ["start", "limit", "delta"], ["y"])],
                                  [], [out], lims)
    pads = numpy_helper.from_array(np.array([0, 0, 1 << 40, 1 << 40], dtype=np.int64), "pads")
    s["valid-huge-pad"] = model([helper.make_node("Pad", ["x", "pads"], ["y"])], [x], [out],
                                [pads])
    # A node input nothing produces.
    s["valid-missing-input"] = model([helper.make_node("Relu", ["ghost"], ["y"])], [x], [y])
    return s


def main():
    os.makedirs(OUT, exist_ok=True)
    for name in NODE_SEEDS:
        with open(os.path.join(NODE_TESTS, "test_" + name, "model.onnx"), "rb") as f:
            data = f.read()
        with open(os.path.join(OUT, "valid-node-" + name), "wb") as f:
            f.write(data)
    for name, data in made_here().items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    # A truncated model: every proper prefix of a model is malformed or lacks its opsets.
    data = made_here()["valid-function"]
    with open(os.path.join(OUT, "reject-truncated"), "wb") as f:
        f.write(data[: len(data) * 2 // 3])


if __name__ == "__main__":
    main()
