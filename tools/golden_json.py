"""The JSON encoding every golden generator writes and the tests read: non-finite floats as
the strings "nan", "inf" and "-inf", tensors as {"dtype", "shape", "data"} with the data
flattened in row-major order (booleans as 0/1)."""
import math

import torch

NAME = {torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
        torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8",
        torch.uint8: "u8", torch.bool: "bool"}


def enc(v):
    """A number as JSON: NaN and infinities as strings."""
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
    return v


def tensor_json(t):
    """A contiguous copy of t as {"dtype", "shape", "data"}."""
    t = t.detach().contiguous()
    flat = t.reshape(-1)
    if flat.dtype in (torch.float16, torch.bfloat16):
        flat = flat.to(torch.float64)
    data = [enc(x) for x in flat.tolist()]
    if t.dtype == torch.bool:
        data = [int(x) for x in data]
    return {"dtype": NAME[t.dtype], "shape": list(t.shape), "data": data}
