"""References and samples: cast."""
import numpy as np

from headrace import dtypes as dt

from ._util import data, np_dtype


def cast(inputs, attrs):
    # NumPy's astype is the C conversion: truncation toward zero, x != 0 for bool.
    return {"Out": data(inputs["X"]).astype(np_dtype(attrs["out_dtype"]))}


def sample_cast(rng, dtype):
    x = (rng.standard_normal((3, 4)) * 50).astype(dtype)
    x[0, :2] = 0  # some zeros for the bool case
    out = rng.choice(["bool", "int8", "int16", "int32", "int64", "float16", "float32",
                      "float64", "uint8"])
    if out == "uint8" or out == "int8":
        x = np.abs(x) % 100  # in range for both
    return {"X": x}, {"in_dtype": dt.to_proto(dtype), "out_dtype": dt.to_proto(out)}


REFERENCES = {"cast": cast}
SAMPLES = {"cast": sample_cast}
