"""References and samples: fill_constant_batch_size_like."""
import numpy as np

from headrace import dtypes as dt

from ._util import data, f32, lod, np_dtype


def fill_constant_batch_size_like(inputs, attrs):
    ref = inputs["Input"]
    levels, rows = lod(ref), data(ref)
    i, o = attrs["input_dim_idx"], attrs["output_dim_idx"]
    shape = list(attrs["shape"])
    shape[o] = len(levels[-1]) - 1 if levels and i == 0 else rows.shape[i]
    dtype = np_dtype(attrs["dtype"])
    text = attrs.get("str_value", "").strip()
    if not text:
        value = f32(attrs["value"])
    elif dtype.kind in "iu" and text.lstrip("+-").isdigit():
        value = int(text)  # exact, as Paddle reads an int64 str_value
    else:
        value = float(text)
    return {"Out": np.full(shape, value, dtype)}


def sample_fill_constant_batch_size_like(rng, dtype):
    ref = rng.standard_normal((int(rng.integers(1, 5)), 3)).astype(dtype)
    out = rng.choice(["float32", "float64", "int64", dtype])
    # Half the samples give the value as text (Paddle's layer sets str_value), which wins.
    text = str(int(rng.integers(-3, 4))) if rng.random() < 0.5 else ""
    return {"Input": ref}, {"shape": [-1, int(rng.integers(1, 4))], "dtype": dt.to_proto(out),
                            "value": float(rng.integers(-3, 4)), "str_value": text,
                            "input_dim_idx": 0, "output_dim_idx": 0}


REFERENCES = {"fill_constant_batch_size_like": fill_constant_batch_size_like}
SAMPLES = {"fill_constant_batch_size_like": sample_fill_constant_batch_size_like}
